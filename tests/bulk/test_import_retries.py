"""Pinecone bulk import when its driver step runs again or loses sight of the import: a runner retrying
Beam's "Start import" step (or a Spark driver running the finish again) must follow the import already
started, never delete the files it reads nor start a second; a poll of the import that fails is an outage
of the poll, not the import failing; and a row the index refuses is refused alike by import and upsert."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.bulk.conftest import S3Store
from tests.bulk.test_pinecone_import import API_KEY
from tests.servers import pinecone_rules
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import connect
from vectordb.connector.backends.pinecone_import import (
    import_data,
)

FOUR = ["a", "b", "c", "d"]


def _files(s3_store: S3Store, prefix: str) -> list[str]:
    return s3_store.files(prefix)


# -- 3. a row with no dense vector in a dense index ---------------------------------------------------


MIXED = [
    {"id": "a", "values": [1.0, 2.0, 3.0]},
    {"id": "b", "values": None, "sparse": {"indices": [1], "values": [1.0]}},
    {"id": "c", "values": [1.0, 2.0, 4.0]},
]


@pytest.mark.parametrize("mode", ["import", "upsert"])
def test_a_row_with_no_dense_vector_in_a_dense_index_fails_before_staging_as_before_an_upsert(
    tmp_path: Path, mode: str
) -> None:
    """One check (the backend's ``refuse``) for both paths: the same row fails, for the same reason."""
    with PineconeImportServer(store_opener(), index=pinecone_rules.dense(3)) as server:
        options: dict[str, Any] = {"api_key": API_KEY, "namespace": "n", "sparse_column": "sparse"}
        if mode == "import":
            options.update(write_mode="import", import_uri=str(tmp_path), import_poll_s=0.05)
        with connect(server.uri, on_error="report", **options) as client:
            report = import_data(client, MIXED) if mode == "import" else client.write(MIXED)
        stored = server.state.snapshot().namespaces["n"]
    assert (report.written, report.failed) == (2, 1), report
    (failure,) = report.failures
    assert (failure.ids, failure.error_type) == (("b",), "Invalid")
    assert failure.error.startswith("no dense vector: the index is dense (dimension 3)"), failure.error
    assert sorted(stored) == ["a", "c"]


def _import_file(server: PineconeImportServer, root: Path, records: list[dict[str, Any]], mode: str) -> Any:
    """Import one hand-written file of ``records`` into namespace ``n``; the import once it ended."""
    (root / "n").mkdir(parents=True)
    sparse = pa.struct([("indices", pa.list_(pa.uint32())), ("values", pa.list_(pa.float32()))])
    schema = pa.schema([("id", pa.string()), ("values", pa.list_(pa.float32())), ("sparse_values", sparse)])
    pq.write_table(pa.Table.from_pylist(records, schema=schema), root / "n" / "part-0.parquet")
    body = orjson.dumps({"uri": f"file://{root}/", "errorMode": {"onError": mode}})
    request = urllib.request.Request(f"{server.url}/bulk/imports", body, {"Api-Key": API_KEY})
    with urllib.request.urlopen(request) as reply:
        import_id = orjson.loads(reply.read())["id"]
    server.imports.join()
    return server.imports.get(import_id)


@pytest.mark.parametrize("index", [pinecone_rules.dense(3), None], ids=["dense index", "learning server"])
@pytest.mark.parametrize("mode", ["abort", "continue"])
def test_the_import_server_refuses_a_record_with_no_dense_values_in_a_dense_index(
    tmp_path: Path, index: pinecone_rules.IndexType | None, mode: str
) -> None:
    """As Pinecone does, and as the upsert servers do: a dense index needs every record's dense values."""
    records = [
        {"id": "a", "values": [1.0, 2.0, 3.0], "sparse_values": None},
        {"id": "b", "values": None, "sparse_values": {"indices": [1], "values": [1.0]}},
        {"id": "c", "values": [1.0, 2.0, 4.0], "sparse_values": None},
    ]
    with PineconeImportServer(store_opener(), index=index) as server:
        job = _import_file(server, tmp_path / "imp", records, mode)
        stored = server.state.snapshot().namespaces.get("n", {})
    if mode == "abort":
        assert job.status == "Failed" and job.error is not None
        assert "n/part-0.parquet row 1: record 'b': Vector dimension 0 does not match" in job.error, job.error
    else:
        assert (job.status, job.records_imported) == ("Completed", 2)
        assert sorted(stored) == ["a", "c"]
        assert all(np.frombuffer(v.values_f32, dtype="<f4").size == 3 for v in stored.values())


def test_a_sparse_index_still_imports_sparse_only_records(tmp_path: Path) -> None:
    records = [{"id": "s", "values": None, "sparse_values": {"indices": [2, 5], "values": [0.5, 1.0]}}]
    with PineconeImportServer(store_opener(), index=pinecone_rules.SPARSE) as server:
        job = _import_file(server, tmp_path / "imp", records, "abort")
        stored = server.state.snapshot().namespaces["n"]
    assert (job.status, job.records_imported) == ("Completed", 1)
    assert stored["s"].sparse_indices == [2, 5]
