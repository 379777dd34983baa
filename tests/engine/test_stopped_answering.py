"""A server that answered and then hangs stops the write (``StoppedAnswering``) once requests in a row got
no reply at all, the timeouts lowered the in-flight limit to 1, and max_retries + 1 requests sent alone got
none either, instead of every batch left waiting out ``timeout_s`` and its retries; a slow server that
still answers some requests is not stopped.

The server is the project's Pinecone REST server (tests/servers), whose requests are held without a
reply past the client's ``timeout_s``: the connector's own transport meets a real silent socket.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.net import full_listener
from tests.servers.pinecone_rest import PineconeRestServer
from tests.servers.script import Admission, ServerState
from vectordb.connector import connect
from vectordb.connector.errors import StoppedAnswering
from vectordb.connector.report import STOPPED
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(120)

TIMEOUT_S = 0.3
HELD_S = 10.0  # longer than any attempt waits; the server lets its held requests go when the test ends


class Holding(ServerState):
    """A ``ServerState`` that holds the upserts ``held(seq)`` names without a reply (seq: 1-based arrival)."""

    def __init__(self, held: Callable[[int], bool]) -> None:
        super().__init__()
        self.held, self.release = held, threading.Event()
        self.arrived = 0  # upserts that arrived, held ones too

    def admit(self, api_key: str | None) -> Admission:
        admission = super().admit(api_key)
        self.arrived = max(self.arrived, admission.seq)
        if self.held(admission.seq):
            self.release.wait(HELD_S)
        return admission


@contextlib.contextmanager
def serve(held: Callable[[int], bool]) -> Iterator[tuple[PineconeRestServer, Holding]]:
    state = Holding(held)
    with PineconeRestServer(0, state) as server:
        try:
            yield server, state
        finally:
            state.release.set()


def rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "values": [(i + 1) / 7] * 4} for i in range(start, start + n)]


def test_a_server_that_answered_then_hangs_stops_the_write_soon() -> None:
    concurrency, retries = 2, 1
    with serve(lambda seq: seq > 1) as (server, state):  # the first request is answered, then silence
        uri = f"pinecone://127.0.0.1:{server.port}"
        options = {"batch_size": 10, "max_concurrency": concurrency, "max_retries": retries}
        with connect(uri, verify=False, timeout_s=TIMEOUT_S, on_error="report", **options) as client:
            assert client.upsert(rows(10)).ok  # it answered: a timeout now is not a wrong address
            started = time.monotonic()
            with pytest.raises(StoppedAnswering) as raised:
                client.upsert(rows(2000, start=10))  # 200 batches: about 35 s of timeouts on the old code
            elapsed = time.monotonic() - started
        arrived = state.arrived
    error, threshold = raised.value, concurrency * (retries + 1)
    text = str(error)
    assert f"127.0.0.1:{server.port}" in text, text
    assert "requests in a row" in text and f"timeout_s={TIMEOUT_S:g} s" in text, text
    assert f"the last {retries + 1} sent alone" in text, text
    assert "raise option timeout_s" in text, text
    # the threshold's timeouts (each batch in flight spends its attempts), then the ones still in flight end
    bound = (retries + 2) * TIMEOUT_S + 8.0  # old code: about 35 s; room for a loaded machine
    assert elapsed < bound, f"{elapsed:.1f} s, bound {bound:.1f} s; {error.report!r}"
    assert arrived <= 1 + threshold + concurrency, arrived
    report = error.report
    assert report is not None and report.stopped, error
    assert report.summary().startswith("STOPPED"), report.summary()
    assert report.written == 0 and report.failed > 0, report
    positions = sorted(p for f in report.failures for p in f.positions)
    assert positions == list(range(report.failed)), report  # the rows read, none lost, none twice
    for failure in report.failures:
        assert failure.retryable and failure.error_type in ("DeadlineExceeded", STOPPED), failure
        assert f"127.0.0.1:{server.port}" in failure.error, failure


def test_a_slow_server_that_still_answers_is_not_stopped() -> None:
    """Every batch's first attempt gets no reply in time and its retry is answered: many timeouts in
    all, never two in a row, so the write goes on and every row lands. A timeout of 1 s: an answered retry
    that a loaded machine delayed past 0.3 s made two in a row."""
    with serve(lambda seq: seq % 2 == 0) as (server, state):
        uri = f"pinecone://127.0.0.1:{server.port}"
        with connect(uri, verify=False, timeout_s=1.0, batch_size=10, max_concurrency=1, max_retries=1) as c:
            assert c.upsert(rows(10)).ok  # seq 1: answered
            report = c.upsert(rows(100, start=10))  # 10 batches: 10 timeouts, threshold 2
        stored = state.snapshot().namespaces
    assert report.ok and report.written == 100, report
    assert report.retries == 10, report
    assert len(stored.get("", {})) == 110


def test_a_server_whose_connections_then_time_out_stops_the_write_soon() -> None:
    """The server answered, then new connections time out (ConnectTimeout): counted as requests with no
    reply, as DeadlineExceeded is, so the write stops after the threshold instead of every batch's
    attempts each waiting out timeout_s."""
    concurrency, retries = 2, 1
    with serve(lambda seq: False) as (server, _):
        port = server.port
        uri = f"pinecone://127.0.0.1:{port}"
        client = connect(uri, verify=False, timeout_s=TIMEOUT_S, on_error="report", batch_size=10,
                         max_concurrency=concurrency, max_retries=retries)  # fmt: skip
        assert client.upsert(rows(10)).ok  # it answered: a timeout now is not a wrong address
    forget_shared()  # the kept-alive connection to the stopped server goes: the next request connects
    try:
        with full_listener(port):
            started = time.monotonic()
            with pytest.raises(StoppedAnswering) as raised:
                client.upsert(rows(2000, start=10))  # 200 batches
            elapsed = time.monotonic() - started
    finally:
        client.close()
        forget_shared()
    report = raised.value.report
    assert report is not None and report.stopped, raised.value
    assert elapsed < (retries + 2) * TIMEOUT_S + 8.0, f"{elapsed:.1f} s; {report!r}"  # old code: ~35 s
    kinds = {f.error_type for f in report.failures}
    assert kinds <= {"ConnectTimeout", STOPPED} and "ConnectTimeout" in kinds, report
