from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import grpc
import pytest

from tests.net import full_listener
from vectordb.connector import errors
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports import grpc as grpc_transport
from vectordb.connector.transports import http as http_transport
from vectordb.connector.transports.base import WireRequest, forget_shared

NONE = Secrets()  # no credentials in use: nothing to blank


def test_every_grpc_status_code_maps_somewhere() -> None:
    assert {c.name for c in grpc.StatusCode} <= set(grpc_transport.ERROR_BY_STATUS)


@pytest.mark.parametrize(
    ("code", "kind", "retryable", "fatal"),
    [
        ("RESOURCE_EXHAUSTED", errors.Throttled, True, False),
        ("UNAVAILABLE", errors.Unavailable, True, False),
        ("DEADLINE_EXCEEDED", errors.DeadlineExceeded, True, False),
        ("INVALID_ARGUMENT", errors.Rejected, False, False),
        ("UNAUTHENTICATED", errors.AuthError, False, True),
        ("PERMISSION_DENIED", errors.AuthError, False, True),
        ("NOT_FOUND", errors.NotFound, False, True),
    ],
)
def test_grpc_status_classes(code: str, kind: type, retryable: bool, fatal: bool) -> None:
    exc = grpc_transport.error_for_status(code, "details", "idx /VectorService/Upsert", {}, secrets=NONE)
    assert type(exc) is kind
    assert exc.retryable is retryable and exc.fatal is fatal
    assert "details" in str(exc) and "idx" in str(exc)


def test_grpc_pushback_becomes_retry_after() -> None:
    exc = grpc_transport.error_for_status(
        "RESOURCE_EXHAUSTED", "slow down", "x", {"grpc-retry-pushback-ms": "250"}, secrets=NONE
    )
    assert exc.retry_after_s == 0.25


@pytest.mark.parametrize("pushback", ["-1", "soon"])
def test_a_negative_or_unreadable_grpc_pushback_asks_for_no_retry(pushback: str) -> None:
    exc = grpc_transport.error_for_status(
        "UNAVAILABLE", "going away", "x", {"grpc-retry-pushback-ms": pushback}, secrets=NONE
    )
    assert isinstance(exc, errors.Unavailable) and not exc.retryable and exc.retry_after_s is None
    assert "not retried" in str(exc)
    assert grpc_transport.error_for_status("UNAVAILABLE", "going away", "x", {}, secrets=NONE).retryable


def test_grpc_connect_failure_is_a_connect_error() -> None:
    exc = grpc_transport.error_for_status(
        "UNAVAILABLE", "failed to connect to all addresses", "x", {}, secrets=NONE
    )
    assert isinstance(exc, errors.ConnectError)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, errors.Rejected),
        (401, errors.AuthError),
        (403, errors.AuthError),
        (404, errors.NotFound),
        (408, errors.Unavailable),
        (413, errors.Rejected),
        (422, errors.Rejected),
        (429, errors.Throttled),
        (500, errors.Unavailable),
        (503, errors.Unavailable),
        (302, errors.ServerError),
    ],
)
def test_every_http_status_class_maps_somewhere(status: int, kind: type) -> None:
    exc = http_transport.error_for_status(
        status, b'{"message":"why"}', "POST /vectors/upsert", None, secrets=NONE
    )
    assert type(exc) is kind
    assert f"HTTP {status}" in str(exc) and "why" in str(exc)


def test_json_error_bodies_are_quoted_by_their_message() -> None:
    body = b'{"code":3,"message":"Vector dimension 768 does not match the dimension of the index 1536","details":[]}'
    exc = http_transport.error_for_status(400, body, "POST /vectors/upsert", None, secrets=NONE)
    assert (
        str(exc)
        == "POST /vectors/upsert: HTTP 400: Vector dimension 768 does not match the dimension of the index 1536"
    )


@pytest.mark.parametrize(
    "body",
    [
        b'{"message": "the reason"}',  # Pinecone, Chroma
        b'{"status": {"error": "the reason"}, "time": 0.1}',  # Qdrant
        b'{"error": [{"message": "the reason"}]}',  # Weaviate
        b'{"error": {"message": "the reason", "type": "invalid_request_error", "code": null}}',  # OpenAI
        b'{"detail": "the reason"}',  # FastAPI servers
    ],
)
def test_each_servers_error_body_gives_its_reason(body: bytes) -> None:
    assert http_transport.reason_of(body, NONE) == "the reason"
    exc = http_transport.error_for_status(400, body, "POST /x", None, secrets=NONE)
    assert str(exc) == "POST /x: HTTP 400: the reason"


def test_the_reason_is_quoted_with_the_key_blanked() -> None:
    exc = http_transport.error_for_status(
        401, b'{"message": "key sk-1234567 is wrong"}', "POST /x", None, secrets=Secrets("sk-1234567")
    )
    assert str(exc) == "POST /x: HTTP 401: key *** is wrong" and isinstance(exc, errors.AuthError)


def test_retry_after_seconds_and_http_date() -> None:
    assert http_transport.parse_retry_after("2") == 2.0
    assert http_transport.parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert http_transport.parse_retry_after("soon") is None
    assert http_transport.parse_retry_after(None) is None


def test_str_of_every_error_works_without_arguments() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        exc = cls("m", None) if cls is errors.WriteFailed else cls("m")
        assert str(exc) == "m"


@pytest.mark.parametrize(
    ("pushback_ms", "retry_after", "waits_s"),
    [
        ("999999999999", None, 300.0),
        ("inf", None, None),  # not a number of milliseconds: no hint, and no retry (gRPC's A6)
        ("-5", None, None),  # negative: no retry (gRPC's A6)
        (None, "inf", 300.0),
        (None, "nan", None),
        (None, "1e30", 300.0),
        (None, "-3", 0.0),
        ("2500", None, 2.5),
        ("9" * 400, None, 300.0),  # more digits than a float holds: the longest wait
    ],
)
def test_no_hint_a_server_sends_holds_a_write_for_good(
    pushback_ms: str | None, retry_after: str | None, waits_s: float | None
) -> None:
    trailing = {"grpc-retry-pushback-ms": pushback_ms} if pushback_ms else {"retry-after": retry_after or ""}
    grpc_error = grpc_transport.error_for_status(
        "RESOURCE_EXHAUSTED", "slow down", "w", trailing, secrets=Secrets()
    )
    assert isinstance(grpc_error, errors.Throttled) and grpc_error.retry_after_s == waits_s
    if retry_after is not None:
        hint = http_transport.parse_retry_after(retry_after)
        assert errors.Throttled("w", status=429, retry_after_s=hint).retry_after_s == waits_s


def test_a_reply_the_grpc_server_could_not_send_is_a_rejection_the_engine_splits() -> None:
    details = "grpc: error while marshaling: string field contains invalid UTF-8"
    exc = grpc_transport.error_for_status("INTERNAL", details, "weaviate BatchObjects", {}, secrets=NONE)
    assert type(exc) is errors.Rejected and not exc.retryable and not exc.fatal
    assert details in str(exc) and exc.status == "INTERNAL"
    other = grpc_transport.error_for_status("INTERNAL", "panic", "weaviate BatchObjects", {}, secrets=NONE)
    assert type(other) is errors.Unavailable  # any other INTERNAL is still retried


# -- a connection that times out is a ConnectTimeout (the circuit breaker counts it as a timeout) --------


@contextlib.contextmanager
def _full_port() -> Iterator[int]:
    """``full_listener``'s port, and the pooled connections forgotten after it."""
    try:
        with full_listener() as port:
            yield port
    finally:
        forget_shared()


@contextlib.contextmanager
def _silent_port() -> Iterator[int]:
    """A port that takes connections (the kernel's queue) and never says a word: a frozen server."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        forget_shared()


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens: connecting is refused at once
    return port


def _http_send(base_url: str) -> errors.ConnectorError:
    transport = http_transport.HttpTransport(base_url, secrets=NONE)
    with pytest.raises(errors.TransportError) as raised:
        transport.send(WireRequest("POST /vectors/upsert", b"{}"), timeout_s=0.5)
    return raised.value


def _grpc_send(port: int) -> errors.ConnectorError:
    transport = grpc_transport.GrpcTransport(f"127.0.0.1:{port}", tls=False, secrets=NONE)
    with pytest.raises(errors.TransportError) as raised:
        transport.send(WireRequest("/VectorService/Upsert", b""), timeout_s=0.5)
    return raised.value


def test_http_connect_timeout_is_a_connect_timeout() -> None:
    with _full_port() as port:
        exc = _http_send(f"http://127.0.0.1:{port}")
    assert type(exc) is errors.ConnectTimeout and "cannot connect" in str(exc), exc


def test_http_tls_handshake_timeout_is_a_connect_timeout() -> None:
    with _silent_port() as port:
        exc = _http_send(f"https://127.0.0.1:{port}")
    assert type(exc) is errors.ConnectTimeout and "TLS handshake" in str(exc), exc


def test_http_through_a_proxy_that_times_out_is_a_connect_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through a proxy the environment names the request goes by httpx, whose ConnectTimeout is mapped."""
    with _full_port() as proxy:
        for name in ("no_proxy", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy}")
        exc = _http_send(f"http://127.0.0.1:{_closed_port()}")
    assert type(exc) is errors.ConnectTimeout, exc


def test_grpc_connect_timeout_is_a_connect_timeout() -> None:
    with _full_port() as port:
        exc = _grpc_send(port)
    assert type(exc) is errors.ConnectTimeout and "cannot connect" in str(exc), exc


def test_grpc_settings_exchange_timeout_is_a_connect_timeout() -> None:
    with _silent_port() as port:
        exc = _grpc_send(port)
    assert type(exc) is errors.ConnectTimeout and "HTTP/2 settings exchange" in str(exc), exc


def test_grpc_through_a_proxy_that_never_answers_is_a_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _silent_port() as proxy:
        for name in ("no_grpc_proxy", "no_proxy", "grpc_proxy", "https_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy}")
        exc = _grpc_send(_closed_port())
    assert type(exc) is errors.ConnectTimeout and "through the proxy" in str(exc), exc


def test_grpc_unavailable_from_an_upstream_that_timed_out_is_a_connect_timeout() -> None:
    timed_out = grpc_transport.error_for_status(
        "UNAVAILABLE", "failed to connect to all addresses; last error: timed out", "x", {}, secrets=NONE
    )
    assert type(timed_out) is errors.ConnectTimeout
    refused = grpc_transport.error_for_status(
        "UNAVAILABLE", "failed to connect to all addresses; connection refused", "x", {}, secrets=NONE
    )
    assert type(refused) is errors.ConnectError


def test_postgres_connect_timeout_is_a_connect_timeout() -> None:
    pytest.importorskip("psycopg")
    from vectordb.connector.transports.postgres import PostgresTransport, StatementRequest

    with _silent_port() as port:  # libpq waits for the server's reply to its startup message
        transport = PostgresTransport(f"postgresql://u@127.0.0.1:{port}/db", secrets=NONE)
        with pytest.raises(errors.TransportError) as raised:
            transport.send(StatementRequest("delete", b"", sql="SELECT 1"), timeout_s=0.5)
    assert type(raised.value) is errors.ConnectTimeout and "timeout expired" in str(raised.value)


@pytest.mark.parametrize("transport", ["http", "grpc", "postgres"])
def test_a_refused_connection_is_a_connect_error_and_no_timeout(transport: str) -> None:
    port = _closed_port()
    try:
        if transport == "http":
            exc = _http_send(f"http://127.0.0.1:{port}")
        elif transport == "grpc":
            exc = _grpc_send(port)
        else:
            pytest.importorskip("psycopg")
            from vectordb.connector.transports.postgres import PostgresTransport, StatementRequest

            pg = PostgresTransport(f"postgresql://u@127.0.0.1:{port}/db", secrets=NONE)
            with pytest.raises(errors.TransportError) as raised:
                pg.send(StatementRequest("delete", b"", sql="SELECT 1"), timeout_s=0.5)
            exc = raised.value
    finally:
        forget_shared()
    assert type(exc) is errors.ConnectError, exc
