"""Dense vectors for a sparse Pinecone index are refused on the driver, naming option ``dimension``,
before any row is sent. Only ``describe_index_stats``' ``vector_type`` (API 2025-04 on) tells a sparse
index for sure: a server that learns its dimension from the first dense row also reports none while
fresh, and takes dense rows. The project's Pinecone test servers stand for a sparse index
(``index=SPARSE``) and are made to report ``vectorType`` / ``vector_type=6`` as Pinecone does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest

from tests.servers import pinecone_grpc, pinecone_rest
from tests.servers import pinecone_rules as rules
from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import ConfigError, connect
from vectordb.connector.transports.base import forget_shared

DENSE = [{"id": f"d{i}", "values": [1.0, 0.0, 0.0, float(i)]} for i in range(3)]
SPARSE_ONLY = [{"id": f"s{i}", "sparse": {"indices": [i, 7], "values": [0.5, 1.5]}} for i in range(3)]


def _report_vector_type(monkeypatch: pytest.MonkeyPatch, kind: str, vector_type: str) -> None:
    """The servers' describe_index_stats reply, with ``vector_type`` added as Pinecone's carries it."""
    if kind == "rest":
        original = pinecone_rest._Handler._stats

        def rest_stats(self: Any) -> None:
            reply = self._reply

            def with_type(status: int, body: bytes, *rest: Any) -> None:
                reply(status, orjson.dumps({**orjson.loads(body), "vectorType": vector_type}), *rest)

            self._reply = with_type
            try:
                original(self)
            finally:
                del self._reply

        monkeypatch.setattr(pinecone_rest._Handler, "_stats", rest_stats)
    else:
        grpc_original = pinecone_grpc.PineconeGrpcServer._stats

        def grpc_stats(self: Any, body: bytes, context: Any) -> bytes:
            tag = b"\x32" + bytes([len(vector_type)])  # field 6, length-delimited
            reply: bytes = grpc_original(self, body, context)
            return reply + tag + vector_type.encode()

        monkeypatch.setattr(pinecone_grpc.PineconeGrpcServer, "_stats", grpc_stats)


@contextmanager
def _server(kind: str, index: rules.IndexType | None) -> Iterator[ServerHandle]:
    with start_server(kind, index=index) as server:  # type: ignore[arg-type]
        try:
            yield server
        finally:
            forget_shared()


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_dense_vectors_for_a_sparse_index_are_refused_naming_option_dimension(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    _report_vector_type(monkeypatch, kind, "sparse")
    with _server(kind, rules.SPARSE) as server:
        with pytest.raises(ConfigError) as raised, connect(server.uri, dimension=4) as client:
            client.write(DENSE)
        assert server.arrived().requests == []  # refused before any row was sent
    assert str(raised.value) == (
        f"option dimension: index {server.uri} is a sparse index (it reports no dimension) and takes no "
        "dense vectors; this write's are 4-dimensional: write sparse vectors only, or into a dense index"
    )


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_sparse_vectors_for_a_sparse_index_reporting_its_type_are_written(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    _report_vector_type(monkeypatch, kind, "sparse")
    with _server(kind, rules.SPARSE) as server, connect(server.uri, sparse_column="sparse") as client:
        report = client.write(SPARSE_ONLY)
    assert report.ok and report.written == 3, report


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_a_fresh_server_that_learns_its_dimension_still_takes_dense_vectors(kind: str) -> None:
    """Dimension 0 and no vector type: a server that has not seen a dense row yet, not a sparse index."""
    with _server(kind, None) as server, connect(server.uri, dimension=4) as client:
        report = client.write(DENSE)
    assert report.ok and report.written == 3, report
