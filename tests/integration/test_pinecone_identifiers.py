"""Pinecone's identifier limits: a record id and a namespace are "ASCII except \\0", at most 512 characters
(docs.pinecone.io, identifier limits; the official SDK refuses such an id before sending).

The client holds back each row that breaks them, alone and unsent, naming the rule, instead of sending it
in a request Pinecone refuses whole (a bisection walk of about two requests a bad row, and good rows
failing beside it when the walk's budget runs out); an option namespace that breaks them is a
``ConfigError``. The Pinecone-protocol test servers refuse what Pinecone refuses, upserts and deletes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import orjson
import pytest

from tests.servers.fixtures import ServerHandle, start_server
from tests.servers.pinecone_grpc import pb
from vectordb.connector import ConfigError, connect
from vectordb.connector.transports.base import forget_shared

V = [0.5, -0.25, 1.0, 2.0]


@pytest.fixture(params=["rest", "grpc"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(request.param) as handle:
        handle.script(dimension=4)
        yield handle
        forget_shared()


def test_non_ascii_and_nul_ids_fail_alone_unsent(server: ServerHandle) -> None:
    # 30 % accented ids (names, titles) and one NUL: before, each cost an isolation walk against a
    # server that refuses them (21,044 requests for 20,000 rows, 532 good rows failed beside them)
    ids = [f"café-{i}" if i % 10 < 3 else f"cafe-{i}" for i in range(1000)]
    ids[5] = "bad\0id"
    with connect(server.uri, api_key="k", on_error="report", batch_size=500) as client:
        report = client.upsert([{"id": i, "values": V} for i in ids])
    bad = {i for i in ids if not i.isascii() or "\0" in i}
    assert len(bad) == 301 and (report.written, report.failed) == (699, 301), report
    reasons = {f.error: set(f.ids) for f in report.failures}
    assert reasons == {
        "id holds the NUL character (\\0), which Pinecone ids may not hold": {"bad\0id"},
        "id holds a non-ASCII character; Pinecone ids are ASCII (no \\0, at most 512 characters)": bad
        - {"bad\0id"},
    }
    assert all(f.error_type == "Invalid" and not f.retryable for f in report.failures)
    arrived = server.arrived()
    assert arrived.ids() == set(ids) - bad
    assert [r.outcome for r in arrived.requests] == ["ok", "ok"]  # 699 rows in two requests, no walk


def test_an_option_namespace_pinecone_refuses_is_a_config_error(server: ServerHandle) -> None:
    cases = {
        "n" * 513: "is 513 characters long; Pinecone namespaces are at most 512",
        "café": "holds a non-ASCII character",
        "a\0b": "holds the NUL character",
    }
    for namespace, says in cases.items():
        with pytest.raises(ConfigError, match=f"option namespace: namespace .*{says}"):
            connect(server.uri, api_key="k", namespace=namespace)
    with connect(server.uri, api_key="k", namespace="n" * 512) as client:
        assert client.upsert([{"id": "a", "values": V}]).ok
    assert server.arrived().namespaces.keys() == {"n" * 512}


def test_row_namespaces_pinecone_refuses_fail_alone(server: ServerHandle) -> None:
    rows: list[dict[str, Any]] = [
        {"id": "a", "values": V, "namespace": "ok"},
        {"id": "b", "values": V, "namespace": "x" * 600},
        {"id": "c", "values": V, "namespace": "ünï"},
        {"id": "d", "values": V, "namespace": "n\0"},
        {"id": "e", "values": V, "namespace": "ok"},
    ]
    with connect(server.uri, api_key="k", on_error="report") as client:
        report = client.upsert(rows)
        call = client.upsert([{"id": "f", "values": V}], namespace="é")  # one call's namespace: its rows
    assert (report.written, report.failed) == (2, 3), report
    failed = {f.ids: f.error for f in report.failures}
    assert "is 600 characters long; Pinecone namespaces are at most 512" in failed["b",]
    assert "'ünï' holds a non-ASCII character" in failed["c",]
    assert "holds the NUL character" in failed["d",]
    assert call.failed == 1 and "'é' holds a non-ASCII character" in call.failures[0].error
    arrived = server.arrived()
    assert arrived.namespaces.keys() == {"ok"} and len(arrived.requests) == 1


def test_clearing_a_namespace_pinecone_refuses_is_a_config_error(server: ServerHandle) -> None:
    with connect(server.uri, api_key="k") as client, pytest.raises(ConfigError, match="non-ASCII"):
        client.clear("é")
    assert server.arrived().deletes == []


def _upsert(server: ServerHandle, vector_id: str, namespace: str = "") -> str | None:
    """One raw upsert (no client-side check): the refusal's message, or ``None`` when accepted."""
    if server.kind == "rest":
        body = {"vectors": [{"id": vector_id, "values": V}], "namespace": namespace}
        reply = httpx.post(f"{server.url}/vectors/upsert", content=orjson.dumps(body), timeout=30)
        if reply.status_code == 200:
            return None
        assert (reply.status_code, reply.json()["code"]) == (400, 3), reply.text
        return str(reply.json()["message"])
    request = pb.UpsertRequest(vectors=[pb.Vector(id=vector_id, values=V)], namespace=namespace)
    return _grpc(server, "/VectorService/Upsert", request.SerializeToString())


def _delete(server: ServerHandle, ids: list[str], namespace: str = "") -> str | None:
    """One raw delete: the refusal's message, or ``None`` when accepted (an empty namespace's 404 too)."""
    if server.kind == "rest":
        body = {"ids": ids, "namespace": namespace}
        reply = httpx.post(f"{server.url}/vectors/delete", content=orjson.dumps(body), timeout=30)
        if reply.status_code in (200, 404):
            return None
        assert (reply.status_code, reply.json()["code"]) == (400, 3), reply.text
        return str(reply.json()["message"])
    request = pb.DeleteRequest(ids=ids, namespace=namespace)
    return _grpc(server, "/VectorService/Delete", request.SerializeToString(), grpc.StatusCode.NOT_FOUND)


def _grpc(server: ServerHandle, method: str, body: bytes, *fine: grpc.StatusCode) -> str | None:
    with grpc.insecure_channel(server.host) as channel:
        try:
            channel.unary_unary(method)(body, timeout=30)
        except grpc.RpcError as exc:
            if exc.code() in fine:
                return None
            assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, exc
            return exc.details() or ""
    return None


def test_the_servers_refuse_ids_and_namespaces_pinecone_refuses(server: ServerHandle) -> None:
    assert "ID must be ASCII, but got café" in (_upsert(server, "café") or "")
    assert "must not contain null characters" in (_upsert(server, "a\0b") or "")
    assert "Namespace must be at most 512 characters, got 513" in (_upsert(server, "a", "n" * 513) or "")
    assert "only ASCII characters" in (_upsert(server, "a", "é") or "")
    assert "must not contain the NUL character" in (_upsert(server, "a", "n\0") or "")
    assert "ID must be ASCII" in (_delete(server, ["a", "é"]) or "")
    assert "must not contain null characters" in (_delete(server, ["a\0"]) or "")
    assert "only ASCII characters" in (_delete(server, ["a"], "é") or "")
    assert server.arrived().ids() == set()
    assert _upsert(server, "~" * 512, "n" * 512) is None and _upsert(server, "a b\x01\x7f") is None
    assert _delete(server, ["~" * 512], "n" * 512) is None
    assert server.arrived().ids() == {"a b\x01\x7f"}


def test_deletes_naming_an_id_or_namespace_pinecone_refuses_fail_alone_unsent(server: ServerHandle) -> None:
    with connect(server.uri, api_key="k", on_error="report") as client:
        assert client.upsert([{"id": i, "values": V} for i in ("a", "b")]).ok
        report = client.delete(["a", "bé", "c\0", "b"])
        elsewhere = client.delete(["a"], namespace="é")
    assert (report.deleted, report.failed) == (2, 2), report
    assert {f.ids: f.error for f in report.failures} == {
        ("bé",): "id holds a non-ASCII character; Pinecone ids are ASCII (no \\0, at most 512 characters)",
        ("c\0",): "id holds the NUL character (\\0), which Pinecone ids may not hold",
    }
    assert all(f.op == "delete" for f in report.failures)
    assert elsewhere.failed == 1 and "'é' holds a non-ASCII character" in elsewhere.failures[0].error
    assert [d.ids for d in server.arrived().deletes] == [["a", "b"]]  # one request, no isolation walk
    assert server.arrived().final == {}
