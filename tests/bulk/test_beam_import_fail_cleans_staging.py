"""A Beam import that fails under ``on_error=fail`` (a row refused while staging) leaves nothing in
``import_uri``, as Spark's abort and ``import_data`` do, and its error counts every row of the write, not one
batch's."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.beam import WriteToVectorDB
from vectordb.connector import WriteFailed
from vectordb.connector.backends.pinecone_import import ROW_GROUP_ROWS

ROWS = ROW_GROUP_ROWS + 1_000  # past one row group: the stager has written a file when the bad row comes


def test_a_failed_beam_import_deletes_its_staged_files_and_counts_every_row(tmp_path: Path) -> None:
    data = [{"id": f"b{i}", "values": [float(i + 1)] * 4} for i in range(ROWS)]
    data[ROWS - 10]["values"][1] = float("nan")  # a late row: the rows before it are staged already
    with PineconeImportServer(store_opener()) as server:
        with (
            pytest.raises(Exception, match=WriteFailed.__name__) as info,
            beam.Pipeline(runner="DirectRunner", options=PipelineOptions()) as p,
        ):
            _ = (
                p
                | beam.Create(data, reshuffle=False)
                | WriteToVectorDB(
                    server.uri,
                    api_key="k",
                    namespace="docs",
                    write_mode="import",
                    import_uri=str(tmp_path),
                    import_poll_s=0.05,
                    rows_per_batch=5000,
                )
            )
        assert server.imports.all() == []
    left = sorted(str(f.relative_to(tmp_path)) for f in tmp_path.rglob("*") if f.is_file())
    assert left == [], left
    message = str(info.value)
    assert f"1 of {ROWS} rows were refused while staging (first ids: b{ROWS - 10})" in message, message
    assert "Nothing was imported" in message
