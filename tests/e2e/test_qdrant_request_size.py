"""Qdrant request sizes: the per-row estimate counts the payload keys the backend adds (a text id's original,
the namespace), so requests cut to ``max_batch_bytes`` stay under it (60 KB ids were estimated 745 times too
small); and the REST test server refuses a body over Qdrant's limit (32 MiB, ``max_request_size_mb``) as Qdrant
does, so a request over it cannot pass unseen."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import numpy as np
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from tests.servers.qdrant_rest import MAX_REQUEST_BYTES
from vectordb.connector import connect
from vectordb.connector.backends.qdrant import QdrantBackend, QdrantOptions, encode_grpc, encode_json
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import forget_shared


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


@pytest.mark.parametrize("uri", ["qdrant://h:6333/c", "qdrant+grpc://h:6334/c"])
@pytest.mark.parametrize("id_chars", [10, 60_000])
def test_the_estimate_covers_the_encoded_request(uri: str, id_chars: int) -> None:
    namespace = "n" * 1000
    options = QdrantOptions(uri=uri, namespace=namespace)
    ids: list[object] = [f"doc-{i:06d}-" + "x\n" * (id_chars // 2) for i in range(32)] + [7]
    batch = RowBatch(ids=ids, vectors=np.ones((33, 4), np.float32), namespace=namespace)
    estimate = int(QdrantBackend(options).row_bytes(batch).sum())
    encoded = len(encode_grpc(batch, "c", options) if "grpc" in uri else encode_json(batch, options))
    assert encoded <= estimate <= 1.2 * encoded + 64 * 33


def test_the_rest_server_refuses_a_body_over_qdrants_limit(server: QdrantServer) -> None:
    assert MAX_REQUEST_BYTES == 32 * 1024 * 1024
    server.store.max_request_bytes = 1000
    try:
        url = server.uri("rest", "c").replace("qdrant://", "http://")
        request = urllib.request.Request(url + "/points", data=b"{" + b" " * 1000 + b"}", method="PUT")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 400
        assert (
            "JSON payload (1002 bytes) is larger than allowed (limit: 1000 bytes)"
            in caught.value.read().decode()
        )
    finally:
        server.store.max_request_bytes = MAX_REQUEST_BYTES


def test_requests_cut_to_the_limit_pass_it(server: QdrantServer) -> None:
    limit = 400_000
    server.store.max_request_bytes = limit
    try:
        rows = [{"id": f"doc-{i:04d}-" + "x" * 20_000, "values": [1.0, 0, 0]} for i in range(100)]
        with connect(
            server.uri("rest", "cut"),
            create=True,
            max_batch_bytes=limit,
            namespace="d" * 5_000,
            on_error="report",
        ) as client:
            report = client.write(rows)
        assert report.ok and report.written == 100 and report.retries == 0, report
        sizes = [e.size for e in server.store.log if e.collection == "cut"]
        assert len(sizes) == report.requests and max(sizes) <= limit
    finally:
        server.store.max_request_bytes = MAX_REQUEST_BYTES
