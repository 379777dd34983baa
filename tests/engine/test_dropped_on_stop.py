"""Rows the engine read but never sent because the write stopped are counted in its report, as what they
were for: batches encoded ahead (``ENCODE_AHEAD``) among them, and deletes say ``op="delete"``."""

from __future__ import annotations

import sys
import threading
import time
from types import FrameType
from typing import Any

import pytest

from vectordb.connector import AuthError, Unavailable, connect, engine, jsonvec
from vectordb.connector.engine import Engine
from vectordb.connector.report import STOPPED, WriteReport
from vectordb.connector.rows import RowBatch
from vectordb.connector.rows.ops import DELETE
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


def test_a_delete_batch_dropped_on_a_stop_says_delete() -> None:
    """The engine's own account says what the rows were for: a delete batch sent and refused, and one
    dropped on the stop (it waited for the first one's ids), both ``op="delete"``."""
    handler = unauthorized_once(threading.get_ident(), "_hold_ids")
    client = connect("pinecone+grpc://127.0.0.1:1", batch_size=10, verify=False, max_concurrency=2)
    transport = MockTransport(handler)
    client._engine = Engine(client.backend, transport, client.options, sleep=lambda s: None)
    ids = [f"r{i}" for i in range(10)]
    batches = [RowBatch(ids=ids, vectors=None, op=DELETE), RowBatch(ids=ids, vectors=None, op=DELETE)]
    batches[1].positions += 10
    report = WriteReport()
    with pytest.raises(AuthError):
        client._engine.run(iter(batches), report)
    assert [r.method for r in transport.requests] == ["/VectorService/Delete"]
    assert sorted((f.error_type, f.op) for f in report.failures) == [("AuthError", DELETE), (STOPPED, DELETE)]
    assert sorted(p for f in report.failures for p in f.positions) == list(range(20))
    assert "delete" in repr(report.failures[0]) and "(delete)" in repr(report)


def test_a_delete_in_flight_when_ctrl_c_stops_the_write_says_delete() -> None:
    """Ctrl-C as the caller waits for the last requests: the write raises at once, and a delete on the
    wire fails afterwards, on its sender ("not retried: the write stopped"), in the report the interrupt
    carries. The client marks the failures of deletes as it ends the write, before that one exists:
    the engine's own account has to say ``op="delete"``."""
    returned = threading.Event()

    def unavailable_after_the_write(request: WireRequest) -> WireReply:
        returned.wait(5)
        raise Unavailable("UNAVAILABLE: try again", status="UNAVAILABLE")

    # a slot to spare: the caller has read the input to its end and waits for the two requests in flight
    client = connect("pinecone+grpc://127.0.0.1:1", batch_size=10, verify=False, max_concurrency=3)
    transport = MockTransport(unavailable_after_the_write)
    client._engine = Engine(client.backend, transport, client.options, sleep=lambda s: None)

    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == "wait" and "concurrent" in frame.f_code.co_filename:
            sys.settrace(None)
            raise KeyboardInterrupt  # Ctrl-C while run() waits for the requests in flight

    sys.settrace(tracer)
    try:
        with pytest.raises(KeyboardInterrupt) as raised:
            client.delete([f"r{i}" for i in range(20)])
    finally:
        sys.settrace(None)
        returned.set()
    report = raised.value.report  # type: ignore[attr-defined]
    deadline = time.monotonic() + 5
    while report.failed < 20 and time.monotonic() < deadline:  # the senders end on their own threads
        time.sleep(0.01)
    client.close()
    assert report.failed == 20, report
    assert [f.op for f in report.failures] == [DELETE, DELETE], report.failures
