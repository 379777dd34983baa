"""Deletes into the Pinecone-protocol servers (REST and gRPC): at most 1,000 ids a request, an empty
namespace's 404 read as nothing to delete, and the bytes Pinecone's generated classes expect."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import orjson
import pinecone_upsert_pb2 as pb
import pytest

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import NotFound, connect
from vectordb.connector.backends.pinecone import PineconeBackend, encode_delete
from vectordb.connector.client import resolve_options
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import WireReply, forget_shared


@pytest.fixture(params=["grpc", "rest"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(request.param) as handle:
        yield handle
        forget_shared()


def upsert(server: ServerHandle, n: int, namespace: str = "") -> None:
    rows = [{"id": f"d{i}", "values": [float(i), 1.0]} for i in range(n)]
    with connect(server.uri, namespace=namespace or None) as client:
        assert client.upsert(rows).written == n


def test_deletes_go_at_most_1000_ids_a_request(server: ServerHandle) -> None:
    upsert(server, 2500, "big")
    with connect(server.uri, batch_size=1000, max_concurrency=2) as client:
        report = client.delete([f"d{i}" for i in range(2500)], namespace="big")
    assert report.ok and (report.written, report.deleted) == (2500, 2500), report
    deletes = server.arrived().deletes
    assert sorted(len(d.ids) for d in deletes) == [500, 1000, 1000]
    assert {d.outcome for d in deletes} == {"ok"} and server.arrived().ids("big") == set()


def test_deletes_in_a_namespace_that_holds_nothing_succeed(server: ServerHandle) -> None:
    upsert(server, 3)
    with connect(server.uri, op_column="op") as client:
        report = client.delete(["d0", "x"], namespace="nobody")  # Pinecone answers 404: nothing to delete
        assert report.ok and report.deleted == 2, report
        rows = [{"id": "d1", "op": "delete"}, {"id": "d2", "values": [2.0, 2.0], "op": "upsert"}]
        assert client.write(rows, namespace=None).ok  # the default namespace was not touched by the 404
    assert [d.outcome for d in server.arrived().deletes] == ["not_found", "ok"]
    assert server.arrived().ids() == {"d0", "d2"}


def test_the_delete_bytes_parse_with_the_generated_class() -> None:
    batch = RowBatch(ids=["a", "b", "7"], vectors=None, namespace="ns", op="delete")
    request = encode_delete(batch, grpc=True)
    parsed = pb.DeleteRequest.FromString(request.body)
    assert list(parsed.ids) == ["a", "b", "7"] and parsed.namespace == "ns" and not parsed.delete_all
    assert request.body == pb.DeleteRequest(ids=["a", "b", "7"], namespace="ns").SerializeToString()
    assert request.method == "/VectorService/Delete" and request.answers == {"NOT_FOUND"}
    rest = encode_delete(RowBatch(ids=["a"], vectors=None, op="delete"), grpc=False)
    assert (rest.method, orjson.loads(rest.body), rest.answers) == (
        "POST /vectors/delete",
        {"ids": ["a"]},
        {404},
    )


def test_a_404_that_is_not_about_a_namespace_is_a_missing_index() -> None:
    backend = PineconeBackend(resolve_options({"uri": "pinecone://127.0.0.1:1"}))  # type: ignore[arg-type]
    batch = RowBatch(ids=["a"], vectors=None, op="delete")
    request = backend.request_for(batch)
    gone = WireReply(body=b'{"code":5,"message":"Namespace not found"}', status=404)
    assert backend.outcome_of(batch, request, gone).written == 1
    with pytest.raises(NotFound, match="Index not found"):
        backend.outcome_of(batch, request, WireReply(body=b'{"message":"Index not found"}', status=404))


def test_the_delete_request_is_sized_by_its_ids() -> None:
    backend = PineconeBackend(resolve_options({"uri": "pinecone+grpc://127.0.0.1:1"}))  # type: ignore[arg-type]
    batch = RowBatch(ids=["abc", "de"], vectors=None, op="delete")
    assert backend.row_bytes(batch).tolist() == [7, 6]
    assert np.all(backend.row_bytes(batch) < 64)
