"""JSON bodies encoded ahead on the encoder threads (the native JSON writer formats their floats with Python's
lock released): the same requests, in the same order, as bodies encoded on the caller's thread; an error of
the input or of an encoding stops the write where it stands, after the batches before it were sent; and the
input is still pulled only a bounded distance ahead of the sends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pyarrow as pa
import pytest

from vectordb.connector import Client, connect, engine, jsonvec
from vectordb.connector.engine import Engine
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

pytestmark = pytest.mark.skipif(
    not jsonvec.native_encoder(), reason="bodies are encoded ahead only with the native JSON writer"
)


@pytest.fixture(autouse=True)
def encode_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "ENCODE_AHEAD", 2)


def ok(request: WireRequest) -> WireReply:
    return WireReply(orjson.dumps({"upsertedCount": len(orjson.loads(request.body)["vectors"])}))


def rows(n: int, dim: int = 8) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "values": [(i + 1) / 7] * dim} for i in range(n)]  # none all zeros


def rest_client(handler: Callable[[WireRequest], WireReply], **options: Any) -> tuple[Client, MockTransport]:
    client = connect("pinecone://127.0.0.1:1", **{"batch_size": 10, "verify": False, **options})
    transport = MockTransport(handler)
    client._engine = Engine(client.backend, transport, client.options, rand=lambda: 0.5)
    return client, transport


def bodies(ahead: int, data: Any, **options: Any) -> list[bytes]:
    saved, engine.ENCODE_AHEAD = engine.ENCODE_AHEAD, ahead
    try:
        client, transport = rest_client(ok, max_concurrency=1, **options)
        report = client.upsert(data)
    finally:
        engine.ENCODE_AHEAD = saved
    assert report.ok, report
    return [r.body for r in transport.requests]


def test_bodies_encoded_ahead_are_the_callers_in_the_same_order() -> None:
    ahead, caller = bodies(2, rows(205)), bodies(0, rows(205))
    assert ahead == caller and len(ahead) == 21


def test_an_error_of_the_input_is_raised_after_the_batches_before_it_are_sent() -> None:
    everything = rows(30)

    def batches() -> Iterator[pa.RecordBatch]:
        for start in range(0, 30, 10):
            yield pa.RecordBatch.from_pylist(everything[start : start + 10])
        raise RuntimeError("the input broke")

    client, transport = rest_client(ok, max_concurrency=1, batch_size=10)
    with pytest.raises(RuntimeError, match="the input broke"):
        client.upsert(batches())
    sent = [v["id"] for r in transport.requests for v in orjson.loads(r.body)["vectors"]]
    assert sent == [f"r{i}" for i in range(30)]


def test_the_input_is_pulled_a_bounded_distance_ahead() -> None:
    release = threading.Event()
    pulled = 0

    def blocked(request: WireRequest) -> WireReply:
        release.wait(5)
        return ok(request)

    everything = rows(10_000)

    def source() -> Iterator[pa.RecordBatch]:
        nonlocal pulled
        for start in range(0, 10_000, 10):
            pulled += 10
            yield pa.RecordBatch.from_pylist(everything[start : start + 10])

    client, _ = rest_client(blocked, max_concurrency=2, batch_size=10)
    worker = threading.Thread(target=client.upsert, args=(source(),))
    worker.start()
    time.sleep(0.3)
    pulled_while_blocked = pulled
    release.set()
    worker.join(10)
    # two requests in flight, one ready for the next slot, ENCODE_AHEAD being encoded
    assert pulled_while_blocked <= 10 * (2 + 1 + engine.ENCODE_AHEAD + 1)
