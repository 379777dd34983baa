"""The index host's bulk import is Pinecone's: the official ``pinecone`` SDK (10.x) drives it.

``start_import``, ``describe_import``, ``list_imports`` (with pagination), ``cancel_import`` and the
SDK's errors (404, 401) against ``tests/servers/pinecone_control.py``, on files the connector staged
in the S3-compatible store; the imported vectors are read back from the index.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pinecone import Pinecone
from pinecone.errors import ApiError, NotFoundError, UnauthorizedError

from tests.bulk.conftest import S3Store
from tests.servers.pinecone_control import ImportScript, PineconeImportServer
from vectordb.connector import connect
from vectordb.connector.backends.pinecone_import import ImportStager, import_folder, publish_staged

API_KEY = "sdk-key-33"
DIM = 6


def stage(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, job: str, n: int, files: int = 1
) -> str:
    """``files`` staged-and-published Parquet files of ``n`` rows each in namespace ``docs``; the folder's s3 URI."""
    with connect(
        index_host.uri,
        api_key=API_KEY,
        namespace="docs",
        write_mode="import",
        import_uri=s3_store.uri(prefix),
    ) as client:
        store = import_folder(client.options)
        rng = np.random.default_rng(1)
        for part in range(files):
            matrix = rng.standard_normal((n, DIM), dtype=np.float32)
            table = pa.table(
                {
                    "id": [f"p{part}-{i}" for i in range(n)],
                    "values": pa.array(list(matrix), type=pa.list_(pa.float32())),
                    "genre": ["docs"] * n,
                }
            )
            with ImportStager(client, store, job, partition=part) as stager:
                stager.write(table)
        publish_staged(store, job, [(part, 0) for part in range(files)])
    return f"s3://{s3_store.bucket}/{prefix}/{job}/"


def wait(index: Any, import_id: str, timeout_s: float = 20) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        model = index.describe_import(import_id)
        if model.status in ("Completed", "Failed", "Cancelled") or time.monotonic() > deadline:
            return model
        time.sleep(0.05)


@pytest.fixture
def index(index_host: PineconeImportServer) -> Any:
    idx = Pinecone(api_key=API_KEY).Index(host=index_host.url)
    yield idx
    idx.close()


def test_the_sdk_starts_follows_and_lists_an_import(
    index: Any, index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    uri = stage(index_host, s3_store, prefix, "job-sdk", 40, files=2)
    started = index.start_import(uri=uri, error_mode="continue")
    model = wait(index, started.id)
    assert (model.status, model.records_imported, model.percent_complete) == ("Completed", 80, 100.0)
    assert model.uri == uri and model.error is None and model.finished_at
    assert index_host.imports.get(started.id).error_mode == "continue"
    stats = index.describe_index_stats()
    assert stats.namespaces["docs"].vector_count == 80
    stored = index_host.state.snapshot().namespaces["docs"]
    assert stored["p1-7"].metadata == {"genre": "docs"} and len(stored["p1-7"].values_f32) == 4 * DIM
    assert [m.id for m in index.list_imports()] == [started.id]


def test_list_imports_follows_pagination(
    index: Any, index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    uri = stage(index_host, s3_store, prefix, "job-page", 3)
    ids = [
        index.start_import(uri=uri).id for _ in range(3)
    ]  # the 2nd and 3rd fail: the namespace exists then
    for import_id in ids:
        wait(index, import_id)
    page = index.list_imports_paginated(limit=2)
    assert len(page) == 2 and page.pagination is not None
    assert [m.id for m in index.list_imports(limit=2)] == ids
    statuses = [index.describe_import(i).status for i in ids]
    assert statuses.count("Completed") == 1 and statuses.count("Failed") == 2
    failed = next(index.describe_import(i) for i in ids if index.describe_import(i).status == "Failed")
    assert "already exists" in failed.error


def test_cancel_import_stops_an_import_in_progress(
    index: Any, index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    uri = stage(index_host, s3_store, prefix, "job-cancel", 5, files=3)
    index_host.imports.set_script(ImportScript(delay_s=0.5))
    started = index.start_import(uri=uri)
    index.cancel_import(started.id)
    model = wait(index, started.id)
    assert model.status == "Cancelled"
    assert model.records_imported < 15


def test_the_sdk_reads_the_servers_errors_as_pinecones(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    idx = Pinecone(api_key=API_KEY).Index(host=index_host.url)
    with pytest.raises(NotFoundError):
        idx.describe_import("999")
    with pytest.raises(ApiError, match="uri"):
        idx.start_import(uri="ftp://nowhere/x/")
    idx.close()
    index_host.imports.set_script(ImportScript(api_key=API_KEY))
    wrong = Pinecone(api_key="not-the-key").Index(host=index_host.url)
    with pytest.raises(UnauthorizedError):
        wrong.start_import(uri=f"s3://{s3_store.bucket}/{prefix}/")
    wrong.close()
