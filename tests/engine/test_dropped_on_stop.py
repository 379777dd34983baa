"""Rows the engine read but never sent because the write stopped are counted in its report: batches
encoded ahead (``ENCODE_AHEAD``) among them."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest

from vectordb.connector import AuthError, connect, engine, jsonvec
from vectordb.connector.engine import Engine
from vectordb.connector.report import STOPPED
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport


def waiting_in(thread_id: int, function: str, seen: threading.Event) -> None:
    """Return once the thread waits in ``function`` (then ``seen`` is set), ``seen`` was set by another
    sender that saw it, or after 5 s."""
    deadline = time.monotonic() + 5
    while not seen.is_set() and time.monotonic() < deadline:
        frame = sys._current_frames().get(thread_id)
        while frame is not None:
            if frame.f_code.co_name == function:
                seen.set()
                return
            frame = frame.f_back
        time.sleep(0.005)


def unauthorized_once(main: int, function: str) -> Any:
    """A handler that refuses every request as unauthenticated once the caller's thread waited in ``function``."""
    seen = threading.Event()

    def handler(request: WireRequest) -> WireReply:
        waiting_in(main, function, seen)
        raise AuthError("UNAUTHENTICATED: bad api key", status=401)

    return handler


@pytest.mark.skipif(
    not jsonvec.native_encoder(), reason="bodies are encoded ahead only with the native JSON writer"
)
def test_batches_encoded_ahead_and_dropped_on_a_stop_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "ENCODE_AHEAD", 2)
    handler = unauthorized_once(threading.get_ident(), "take_slot")  # both slots taken, a batch encoded ahead
    client = connect("pinecone://127.0.0.1:1", batch_size=10, verify=False, max_concurrency=2)
    client._engine = Engine(client.backend, MockTransport(handler), client.options, sleep=lambda s: None)
    data = [{"id": f"r{i}", "values": [(i + 1) / 7] * 4} for i in range(50)]
    with pytest.raises(AuthError) as raised:
        client.upsert(data)
    report = raised.value.report
    assert report is not None
    # two batches sent and refused, the third encoded ahead and dropped; the last two never read
    assert report.summary().startswith("STOPPED (10 rows dropped)"), report.summary()
    assert (report.failed, report.written) == (30, 0), report
    assert sorted(f.error_type for f in report.failures) == ["AuthError", "AuthError", STOPPED]
    assert sorted(p for f in report.failures for p in f.positions) == list(range(30))
