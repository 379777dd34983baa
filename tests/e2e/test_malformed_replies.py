"""A 2xx reply to an upsert that is not the protocol's (a proxy's truncated page, a body of garbage) is a
``MalformedReply`` naming the server: the rows of that request fail, the rows before it stay written, and
the report accounts for every row taken, instead of a decoding error escaping from a sender thread."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers import qdrant_grpc, qdrant_rest
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.errors import MalformedReply
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(60)

GARBAGE = {"rest": b"{<html>truncated", "grpc": b"<html>truncated"}


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _garble_second_upsert_reply(monkeypatch: pytest.MonkeyPatch, transport: str) -> None:
    """The server applies every upsert, but its reply to the second one is ``GARBAGE``."""
    calls = {"n": 0}
    if transport == "rest":
        ok = qdrant_rest._Handler._ok

        def rest_ok(handler: Any, result: Any, started: float) -> None:
            upserted = isinstance(result, dict) and "operation_id" in result  # not a control-plane reply
            calls["n"] += upserted
            if upserted and calls["n"] == 2:
                handler._reply(200, GARBAGE["rest"])
                return
            ok(handler, result, started)

        monkeypatch.setattr(qdrant_rest._Handler, "_ok", rest_ok)
    else:
        operation = qdrant_grpc._operation

        def grpc_operation(operation_id: int, status: int, started: float) -> bytes:
            calls["n"] += 1
            return GARBAGE["grpc"] if calls["n"] == 2 else operation(operation_id, status, started)

        monkeypatch.setattr(qdrant_grpc, "_operation", grpc_operation)


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_qdrant_malformed_upsert_reply_fails_its_rows_and_names_the_server(
    server: QdrantServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.store.create_collection("docs", {"": (4, "Dot")}, set(), False)
    _garble_second_upsert_reply(monkeypatch, transport)
    rows = [{"id": i, "values": [0.25 * (i % 4), 1.0, 0.5, -1.0]} for i in range(30)]
    uri = server.uri(transport, "docs")
    with (
        pytest.raises(MalformedReply) as raised,
        connect(uri, on_error="report", batch_size=10, max_concurrency=1) as client,
    ):
        client.write(rows)
    error = raised.value
    assert uri in str(error) and "10 rows" in str(error), error
    report = error.report
    assert report is not None
    assert report.written == 10, report
    failed = {int(i) for i in report.failed_ids if i is not None}
    assert len(failed) == report.failed and set(range(10, 20)) <= failed <= set(range(10, 30)), report
    assert {f.error_type for f in report.failures if f.error_type != "NotSent"} == {"MalformedReply"}, report
