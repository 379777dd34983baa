"""Ctrl-C on the caller's thread at any point of handing a batch to a sender: nothing of the write is
left held (a slot, the batch's ids, an unanswered count) and the next write on the client runs.

The interrupt is raised by a trace function at the entry of the k-th Python function called while the
caller's thread takes a slot, holds ids or hands a batch over: a point where CPython runs a SIGINT's
handler. Before, an interrupt as ``Dispatcher.submit`` attached its done-callback leaked the slot for
good (with ``max_concurrency=1`` every later write hung), and one as the pool started a sender thread
left the unanswered count at -1 for the client's lifetime."""

from __future__ import annotations

import sys
import threading
import time
from types import FrameType
from typing import Any

import pinecone_upsert_pb2 as pb
import pytest

from vectordb.connector import Client, connect
from vectordb.connector.engine import Engine
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

# an UpsertResponse counting more rows than any batch holds: every row upserted (proto3 leaves a count of 0
# off the wire, so an empty reply is "none upserted")
OK = WireReply(pb.UpsertResponse(upserted_count=10_000).SerializeToString())
HANDING_OVER = {"take_slot", "ticket", "send", "submit", "call_off", "_hold_ids", "_pace"}


def rows(n: int, prefix: str) -> list[dict]:
    return [{"id": f"{prefix}{i}", "values": [float(i) + 0.5] * 4} for i in range(n)]


def a_client(sent: list[str]) -> Client:
    def handler(request: WireRequest) -> WireReply:
        sent.extend(v.id for v in pb.UpsertRequest.FromString(request.body).vectors)
        return OK

    client = connect("pinecone+grpc://127.0.0.1:1", batch_size=5, verify=False, max_concurrency=1)
    client._engine = Engine(client.backend, MockTransport(handler), client.options, sleep=lambda s: None)
    return client


def handing_over(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name in HANDING_OVER and frame.f_code.co_filename.endswith(
            ("dispatch.py", "engine.py")
        ):
            return True
        frame = frame.f_back
    return False


def stdlib_inside(frame: FrameType) -> bool:
    """A call the threading module makes to itself (a Semaphore's Condition entered and left): an
    interrupt there leaves the standard library's own lock held, which no caller can mend."""
    caller = frame.f_back
    return (
        caller is not None
        and frame.f_code.co_filename.endswith("threading.py")
        and caller.f_code.co_filename.endswith("threading.py")
    )


def interrupted_at(k: int, warm: bool) -> tuple[Client, list[str]] | None:
    """A write interrupted at the k-th call made while handing a batch over (with ``warm``, on a client
    whose sender thread is started; else the write starts it); None if it makes fewer."""
    sent: list[str] = []
    client = a_client(sent)
    if warm:
        client.write(rows(5, "warm"))
    calls = {"n": 0, "fired": False}

    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and not calls["fired"] and handing_over(frame) and not stdlib_inside(frame):
            calls["n"] += 1
            if calls["n"] == k:
                calls["fired"] = True
                raise KeyboardInterrupt

    sys.settrace(tracer)  # type: ignore[arg-type]
    try:
        client.write(rows(15, "r"))
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    if not calls["fired"]:
        client.close()
        return None
    return client, sent


# an interrupt raised in a weakref or GC callback that runs meanwhile is ignored there, as Python does
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("warm", [True, False], ids=["started", "starting-its-sender"])
def test_ctrl_c_anywhere_in_handing_a_batch_over_leaves_nothing_held(warm: bool) -> None:
    k, leaks = 1, []
    while (result := interrupted_at(k, warm)) is not None:
        client, _ = result
        dispatch, engine = client.engine.dispatch, client.engine
        deadline = time.monotonic() + 3
        while dispatch.in_flight and time.monotonic() < deadline:  # the senders of the interrupted write
            time.sleep(0.002)
        held = [dispatch.in_flight, sum(map(len, engine._held.values())), dispatch._unanswered]
        done = threading.Event()
        reports: list[Any] = []

        def again(
            client: Client = client, done: threading.Event = done, reports: list[Any] = reports
        ) -> None:
            try:
                reports.append(client.write(rows(10, "next")))
            finally:
                done.set()

        threading.Thread(target=again, daemon=True).start()
        finished = done.wait(3)
        if held != [0, 0, 0] or not finished or not reports or reports[0].written != 10:
            leaks.append((k, held, finished))
        if finished:
            client.close()
        k += 1
    assert k > 20  # the scan reached the hand-over
    assert leaks == []
