"""A failed request leaves no reference cycle behind: the caller's frame, its batch with it, is freed at
once, not at the next full garbage collection (a soak run's memory climbed by a batch a failure)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from tests.net import closed_port
from vectordb.connector.errors import ConnectorError
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports.base import WireRequest
from vectordb.connector.transports.grpc import GrpcTransport
from vectordb.connector.transports.http import HttpTransport


class Batch:
    """Stands for what a caller holds while it sends."""


def send_and_fail(transport: Any, request: WireRequest) -> weakref.ref[Batch]:
    batch = Batch()
    try:
        transport.send(request, timeout_s=2.0)
    except ConnectorError:
        pass
    else:
        raise AssertionError("a closed port answered")
    return weakref.ref(batch)


@pytest.mark.parametrize("kind", ["grpc", "http"])
def test_a_failed_send_frees_the_callers_frame_without_the_garbage_collector(kind: str) -> None:
    port = closed_port()
    if kind == "grpc":
        transport: Any = GrpcTransport(f"127.0.0.1:{port}", tls=False, secrets=Secrets("k"))
        request = WireRequest("/vectordb.Test/Upsert", b"")
    else:
        transport = HttpTransport(f"http://127.0.0.1:{port}", secrets=Secrets("k"))
        request = WireRequest("POST /vectors/upsert", b"{}")
    gc.collect()
    gc.disable()
    try:
        held = send_and_fail(transport, request)
        assert held() is None, "a reference cycle keeps the failed request's caller alive"
    finally:
        gc.enable()
