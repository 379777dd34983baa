"""A write stopped by the database's fatal error says so in its report's summary (STOPPED), as one the
embedding stage stops does; a batch read and encoded but never sent is counted there, not lost."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from vectordb.connector import AuthError, connect
from vectordb.connector.engine import Engine
from vectordb.connector.report import STOPPED
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport


def rows(n: int) -> list[dict]:
    return [{"id": f"r{i}", "values": [float(i) + 0.5] * 4} for i in range(n)]


def waiting_for_its_ids(thread_id: int) -> None:
    """Return once the thread waits for a batch in flight to let its ids go (``Engine._hold_ids``)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(thread_id)
        while frame is not None:
            if frame.f_code.co_name == "_hold_ids":
                return
            frame = frame.f_back
        time.sleep(0.005)


def test_a_fatal_error_of_the_database_says_stopped_and_counts_the_batch_it_dropped() -> None:
    main = threading.get_ident()

    def unauthorized(request: WireRequest) -> WireReply:
        waiting_for_its_ids(main)
        raise AuthError("UNAUTHENTICATED: bad api key", status=401)

    client = connect("pinecone+grpc://127.0.0.1:1", batch_size=10, verify=False, max_concurrency=2)
    client._engine = Engine(client.backend, MockTransport(unauthorized), client.options, sleep=lambda s: None)
    # the second batch holds the first one's ids: it waits for it, then the write has stopped
    with pytest.raises(AuthError) as raised:
        client.upsert(rows(10) + rows(10))
    report = raised.value.report
    assert report is not None
    assert report.summary().startswith("STOPPED (10 rows dropped)"), report.summary()
    assert report.failed == 20 and report.written == 0
    assert sorted(f.error_type for f in report.failures) == ["AuthError", STOPPED]
    assert sorted(report.failures[-1].positions + report.failures[0].positions) == list(range(20))
