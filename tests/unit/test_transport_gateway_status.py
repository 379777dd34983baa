"""A gateway in front of a gRPC server answers with an HTTP status and no grpc-status (a rate limit's 429,
an overload's 503), with ``Retry-After``: the 429 is a throttle, and both keep the server's hint, so the
engine waits as asked and halves its in-flight limit on the throttle."""

from __future__ import annotations

import email.utils
import itertools
import threading
import time
from collections.abc import Iterator

import pytest

from tests.unit.test_http2 import Peer, call, scripted, transport
from vectordb.connector import connect
from vectordb.connector.errors import Throttled, Unavailable
from vectordb.connector.transports import http2
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _fresh_pools() -> Iterator[None]:
    yield
    forget_shared()


def gateway_page(peer: Peer, stream: int, status: int, retry_after: str) -> None:
    """An HTTP reply with no gRPC status, as a gateway's rate limit or overload page."""
    fields = [(":status", str(status)), ("retry-after", retry_after), ("content-type", "text/plain")]
    peer.send(http2.HEADERS, http2.END_HEADERS, stream, peer.encoder.encode(fields))
    peer.send(http2.DATA, http2.END_STREAM, stream, b"rate limited")


@pytest.mark.parametrize(
    ("status", "retry_after", "error", "waits_s"),
    [
        (429, "0.25", Throttled, 0.25),
        (429, "7", Throttled, 7.0),
        (503, "2", Unavailable, 2.0),
    ],
)
def test_a_gateways_http_status_keeps_its_retry_after_and_429_is_a_throttle(
    status: int, retry_after: str, error: type[Exception], waits_s: float
) -> None:
    def page(peer: Peer) -> None:
        peer.handshake()
        stream, _, _ = peer.request()
        gateway_page(peer, stream, status, retry_after)

    with scripted(page) as (port, failures), pytest.raises(error, match=f"HTTP status {status}") as raised:
        call(transport(port), b"x")
    assert type(raised.value) is error and not failures
    assert raised.value.retry_after_s == waits_s  # type: ignore[attr-defined]


def test_a_retry_after_given_as_an_http_date_is_read() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)

    def page(peer: Peer) -> None:
        peer.handshake()
        stream, _, _ = peer.request()
        gateway_page(peer, stream, 429, when)

    with scripted(page) as (port, failures), pytest.raises(Throttled) as raised:
        call(transport(port), b"x")
    assert not failures and raised.value.retry_after_s is not None and 25 < raised.value.retry_after_s <= 30


def test_the_engine_counts_a_gateways_429_as_a_throttle_and_waits_its_retry_after() -> None:
    stamps: list[float] = []
    lock = threading.Lock()
    upserted = b"\x08\x03"  # UpsertResponse{upserted_count=3}

    def server(peer: Peer) -> None:
        peer.handshake()
        while True:
            stream, _, _ = peer.request()
            with lock:
                stamps.append(time.monotonic())
                limited = len(stamps) <= 2
            if limited:
                gateway_page(peer, stream, 429, "0.3")
            else:
                peer.reply(stream, upserted)

    rows = [{"id": f"d{i}", "values": [1.0, 0.5]} for i in range(3)]
    with (
        scripted(server) as (port, failures),
        connect(f"pinecone+grpc://127.0.0.1:{port}", verify=False, on_error="report") as client,
    ):
        report = client.write(rows)
    assert report.ok and report.written == 3 and report.throttled == 2, report
    assert all(later - earlier >= 0.29 for earlier, later in itertools.pairwise(stamps)), stamps
    assert not failures
