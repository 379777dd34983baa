"""What the Pinecone backend reads in replies, against the Pinecone-protocol servers: a delete's NOT_FOUND
is "the namespace holds nothing" only when the server's own words say so (never the index's host, which
our messages quote), and an upsert's ``upsertedCount`` below the rows sent fails them."""

from __future__ import annotations

import dataclasses
from typing import Any, NoReturn

import grpc
import pytest

from tests.net import connect_proxy
from tests.servers import pinecone_grpc, pinecone_rest, script
from tests.servers.fixtures import start_server
from vectordb.connector import MalformedReply, NotFound, connect
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(60)


def _index_not_found(self: Any, body: bytes, context: grpc.ServicerContext) -> NoReturn:
    context.abort(grpc.StatusCode.NOT_FOUND, "Index not found")
    raise AssertionError("unreachable: abort raises")


@pytest.mark.parametrize("host", ["docs-abc123.svc.pinecone.io", "namespace-test-abc123.svc.pinecone.io"])
def test_grpc_delete_index_not_found_is_not_read_as_an_empty_namespace_whatever_the_host(
    host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pinecone_grpc.PineconeGrpcServer, "_delete", _index_not_found)
    for name in ("no_grpc_proxy", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with start_server("grpc") as server, connect_proxy(to_port=server.port) as (proxy_port, _):
        monkeypatch.setenv("grpc_proxy", f"http://127.0.0.1:{proxy_port}")
        uri = f"pinecone+grpc://{host}:{server.port}"
        try:
            with (
                pytest.raises(NotFound, match="Index not found") as raised,
                connect(uri, api_key="k", tls=False, verify=False, on_error="report") as client,
            ):
                client.delete(["a", "b", "c"])
        finally:
            forget_shared()
    assert host in str(raised.value), raised.value


def _short_counts(monkeypatch: pytest.MonkeyPatch, short_first: int) -> None:
    """The servers apply each upsert but count one row fewer for the first ``short_first`` (a count of 0:
    test_pinecone_zero_count.py)."""
    calls = {"n": 0}
    serve = script.serve_upsert

    def serve_upsert(*args: Any, **kwargs: Any) -> script.Verdict:
        verdict = serve(*args, **kwargs)
        calls["n"] += 1
        short = verdict.outcome == "ok" and calls["n"] <= short_first
        return dataclasses.replace(verdict, upserted=verdict.upserted - 1) if short else verdict

    for module in (pinecone_rest, pinecone_grpc):
        monkeypatch.setattr(module, "serve_upsert", serve_upsert)


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_an_upserted_count_below_the_rows_sent_is_retried_then_fails_the_rows(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _short_counts(monkeypatch, short_first=100)
    rows = [{"id": f"d{i}", "values": [float(i), 1.0]} for i in range(10)]
    with start_server(kind) as server:
        try:
            with connect(server.uri, on_error="report", max_retries=2) as client:
                report = client.write(rows)
        finally:
            forget_shared()
    assert report.written == 0 and report.failed == 10 and report.retries == 2, report
    assert sorted(report.failed_ids, key=str) == sorted(r["id"] for r in rows)
    reasons = {f.error for f in report.failures}
    assert len(reasons) == 1 and "upserted 9 of the 10 rows sent" in reasons.pop(), report
    assert server.uri.split("://")[1] in report.failures[0].error


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_a_short_upserted_count_once_is_retried_and_the_rows_are_written(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _short_counts(monkeypatch, short_first=1)
    rows = [{"id": f"d{i}", "values": [float(i), 1.0]} for i in range(10)]
    with start_server(kind) as server:
        try:
            with connect(server.uri, on_error="report") as client:
                report = client.write(rows)
        finally:
            forget_shared()
    assert report.ok and report.written == 10 and report.retries == 1, report


def _garbled_upsert_replies(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """The servers apply each upsert and answer it with a body that is not Pinecone's reply."""
    if kind == "grpc":
        monkeypatch.setattr(pinecone_grpc.pb, "UpsertResponse", lambda **_: _Garbage())
    else:
        reply = pinecone_rest._Handler._reply

        def garbled(handler: Any, status: int, body: bytes, *args: Any, **kwargs: Any) -> None:
            upsert = status == 200 and body.startswith(b'{"upsertedCount"')
            reply(handler, status, b"{<html>truncated" if upsert else body, *args, **kwargs)

        monkeypatch.setattr(pinecone_rest._Handler, "_reply", garbled)


class _Garbage:
    def SerializeToString(self) -> bytes:
        return b"<html>truncated"


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_an_upsert_reply_that_is_not_pinecones_is_a_malformed_reply_naming_the_server(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _garbled_upsert_replies(monkeypatch, kind)
    rows = [{"id": f"d{i}", "values": [float(i), 1.0]} for i in range(10)]
    with start_server(kind) as server:
        try:
            with (
                pytest.raises(MalformedReply) as raised,
                connect(server.uri, on_error="report") as client,
            ):
                client.write(rows)
        finally:
            forget_shared()
    assert server.uri.split("://")[1] in str(raised.value) and "10 rows" in str(raised.value)
    report = raised.value.report
    assert report is not None and report.written == 0 and report.failed == 10, report
