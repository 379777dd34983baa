"""A Beam import whose staging refuses a row under ``on_error=fail`` fails before any import starts, and says
so as Spark and plain Python do: nothing was imported (not "49/50 written ... keep the rows that did land")."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.beam import WriteToVectorDB
from vectordb.connector import WriteFailed


def test_a_beam_import_whose_staging_refuses_a_row_says_nothing_was_imported(tmp_path: Path) -> None:
    data = [{"id": f"b{i}", "values": [float(i + 1)] * 4} for i in range(50)]
    data[9]["values"][1] = float("nan")
    with PineconeImportServer(store_opener()) as server:
        with (
            pytest.raises(Exception, match=WriteFailed.__name__) as info,
            beam.Pipeline(runner="DirectRunner", options=PipelineOptions()) as p,
        ):
            _ = (
                p
                | beam.Create(data)
                | WriteToVectorDB(
                    server.uri,
                    api_key="k",
                    namespace="docs",
                    write_mode="import",
                    import_uri=str(tmp_path),
                    import_poll_s=0.05,
                    rows_per_batch=50,
                )
            )
        assert server.imports.all() == []
    message = str(info.value)
    assert "1 of 50 rows were refused while staging (first ids: b9)" in message, message
    assert "Nothing was imported" in message
    assert "written" not in message.split("Nothing was imported")[0] and "did land" not in message
