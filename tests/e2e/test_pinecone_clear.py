"""``Client.clear`` (and Spark's ``mode("overwrite")``) into Pinecone: only Pinecone's "Namespace not found"
(a namespace that holds nothing) counts as cleared; any other refusal of the delete is an error.

Before, every ``NotFound`` of the ``deleteAll`` call was taken as "already clear": a delete answered
"Index not found", or gRPC ``UNIMPLEMENTED`` (mapped to ``NotFound``), was reported as every vector
cleared while every vector stayed.
"""

from __future__ import annotations

from typing import Any

import grpc
import orjson
import pytest

from tests.servers import pinecone_grpc, pinecone_rest
from tests.servers.fixtures import start_server
from vectordb.connector import NotFound, connect
from vectordb.connector.transports.base import forget_shared

ROWS = [{"id": f"r{i}", "values": [1.0, float(i)]} for i in range(3)]


def refuse_grpc(code: grpc.StatusCode, message: str) -> Any:
    def _delete(self: Any, body: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(code, message)
        raise AssertionError("unreachable")

    return _delete


def refuse_rest(status: int, message: str) -> Any:
    def _delete(self: Any, body: bytes) -> None:
        self._reply(status, orjson.dumps({"code": 5, "message": message, "details": []}))

    return _delete


REFUSALS = [
    ("grpc", refuse_grpc(grpc.StatusCode.NOT_FOUND, "Index not found"), "NOT_FOUND: Index not found"),
    ("grpc", refuse_grpc(grpc.StatusCode.UNIMPLEMENTED, "Method not found: Delete"), "UNIMPLEMENTED"),
    ("rest", refuse_rest(404, "Index not found"), "404: .*Index not found"),
]


@pytest.mark.parametrize(("kind", "delete", "says"), REFUSALS)
def test_a_clear_the_index_refuses_is_an_error_not_cleared(
    monkeypatch: pytest.MonkeyPatch, kind: str, delete: Any, says: str
) -> None:
    target = pinecone_grpc.PineconeGrpcServer if kind == "grpc" else pinecone_rest._Handler
    monkeypatch.setattr(target, "_delete", delete)
    with start_server(kind) as server:
        try:
            with connect(server.uri) as client:
                client.write(ROWS, namespace="docs")
                with pytest.raises(NotFound, match=says):
                    client.clear("docs")
        finally:
            forget_shared()
        assert len(server.arrived().namespaces["docs"]) == 3


@pytest.mark.parametrize("kind", ["grpc", "rest"])
def test_a_namespace_that_holds_nothing_counts_as_cleared(kind: str) -> None:
    with start_server(kind) as server:
        try:
            with connect(server.uri) as client:
                client.write(ROWS, namespace="docs")
                assert "namespace 'empty'" in client.clear("empty")  # Pinecone: 404 "Namespace not found"
                assert "namespace 'docs'" in client.clear("docs")
        finally:
            forget_shared()
        assert server.arrived().namespaces.get("docs", {}) == {}
