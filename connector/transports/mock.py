"""A transport whose replies a test scripts: ``MockTransport(handler)``.

The handler receives each ``WireRequest`` and returns a ``WireReply`` or raises one of the
connector's errors, so engine tests observe real behaviour (attempts, peak in-flight,
what arrived) without a server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .base import Host, WireReply, WireRequest

__all__ = ["MockTransport"]


class MockTransport:
    def __init__(self, handler: Callable[[WireRequest], WireReply]) -> None:
        self.handler = handler
        self.host = Host("mock")  # its own: answers whatever a test's handler says
        self.requests: list[WireRequest] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            reply = self.handler(request)
            self.host.answered = True
            return reply
        finally:
            with self._lock:
                self.in_flight -= 1

    def close(self) -> None:
        pass
