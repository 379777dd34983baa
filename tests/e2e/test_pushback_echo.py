"""A server that echoes the key into the trailing metadata ``grpc-retry-pushback-ms`` (a proxy or a Go
server sends trailers as they are): no error, report or dead letter shows the key or a piece of it.

A pushback that is not a number asks for no retry (gRPC's A6), and the error says so; it quotes the value
only when it is a number, since any other text may be a key (and a piece of one, cut to a length, is what
blanking cannot match). End to end against a raw HTTP/2 peer (``tests/unit/test_http2``'s): a grpcio
server cannot send such a pushback (grpc-core rewrites one that is not a number to -9223372036854775808).
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.test_http2 import Peer, scripted
from vectordb.connector import ConnectorError, connect
from vectordb.connector import errors as errors
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports import grpc as grpc_transport
from vectordb.connector.transports import http2
from vectordb.connector.transports.base import forget_shared

KEY = "sk-PUSHBACK-SECRET-1a2b3c4d5e"
ROWS = [{"id": f"d{i}", "values": [0.1, 0.2, 0.3, 0.4]} for i in range(3)]


@pytest.fixture
def pushback_echo() -> Iterator[tuple[int, list[str]]]:
    """A gRPC peer that throttles every call (``RESOURCE_EXHAUSTED``, trailers only) with the call's api key
    as its pushback; yields its port and the keys it echoed."""
    echoed: list[str] = []

    def throttle(peer: Peer) -> None:
        peer.handshake()
        while True:
            stream, headers, _ = peer.request()
            echoed.append(dict(headers).get("api-key", ""))
            fields = [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", "8"),
                      ("grpc-message", "slow down"), ("grpc-retry-pushback-ms", echoed[-1])]  # fmt: skip
            peer.send(
                http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, stream, peer.encoder.encode(fields)
            )

    with scripted(throttle) as (port, failures):
        yield port, echoed
    forget_shared()
    assert not failures


def written(uri: str, **options: Any) -> str:
    """Everything the write leaves: its report (repr, each failure) and dead letters, or its error (with its
    traceback)."""
    try:
        with connect(uri, api_key=KEY, verify=False, max_retries=1, **options) as client:
            report = client.upsert(ROWS)
            dead = client.dead_letters(ROWS, report)
    except ConnectorError as exc:
        return "".join(traceback.format_exception(exc)) + repr(getattr(exc, "report", None))
    return "\n".join([repr(report), str(report), *(repr(f) for f in report.failures), repr(dead)])


@pytest.mark.parametrize("on_error", ["report", "fail"])
def test_a_key_echoed_as_the_pushback_is_shown_nowhere(
    pushback_echo: tuple[int, list[str]], on_error: str
) -> None:
    port, echoed = pushback_echo
    text = written(f"pinecone+grpc://127.0.0.1:{port}", on_error=on_error)
    assert echoed and set(echoed) == {KEY}  # the key went out and came back
    assert KEY[:8] not in text and KEY[-8:] not in text  # not a piece of it either
    assert (
        "RESOURCE_EXHAUSTED: slow down (not retried: the server's grpc-retry-pushback-ms is not a number)"
        in text
    )


@pytest.mark.parametrize(
    ("pushback", "shown"),
    [
        ("-250", "is '-250'"),
        (KEY, "is not a number"),
        ("soon", "is not a number"),
        ("1" * 21 + KEY, "is not a number"),
        ("-" + "9" * 25, "is a negative number"),  # a number, but longer than one worth quoting
    ],
)
def test_a_pushback_asking_for_no_retry_is_quoted_only_when_a_number(pushback: str, shown: str) -> None:
    exc = grpc_transport.error_for_status(
        "RESOURCE_EXHAUSTED", "slow down", "x", {"grpc-retry-pushback-ms": pushback}, secrets=Secrets(KEY)
    )
    assert isinstance(exc, errors.Throttled) and not exc.retryable
    assert (
        str(exc)
        == f"x: RESOURCE_EXHAUSTED: slow down (not retried: the server's grpc-retry-pushback-ms {shown})"
    )
