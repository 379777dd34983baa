"""A failed request leaves no reference cycle behind: the caller's frame, its batch with it, is freed at
once, not at the next full garbage collection (a soak run's memory climbed by a batch a failure)."""

from __future__ import annotations

import gc
import weakref

from tests.net import closed_port
from vectordb.connector.errors import ConnectorError
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports.base import WireRequest
from vectordb.connector.transports.grpc import GrpcTransport


class Batch:
    """Stands for what a caller holds while it sends."""


def send_and_fail(transport: GrpcTransport) -> weakref.ref[Batch]:
    batch = Batch()
    try:
        transport.send(WireRequest("/vectordb.Test/Upsert", b""), timeout_s=2.0)
    except ConnectorError:
        pass
    else:
        raise AssertionError("a closed port answered")
    return weakref.ref(batch)


def test_a_failed_grpc_send_frees_the_callers_frame_without_the_garbage_collector() -> None:
    transport = GrpcTransport(f"127.0.0.1:{closed_port()}", tls=False, secrets=Secrets("k"))
    gc.collect()
    gc.disable()
    try:
        held = send_and_fail(transport)
        assert held() is None, "a reference cycle keeps the failed request's caller alive"
    finally:
        gc.enable()
