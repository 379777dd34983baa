"""One slow request among fast ones does not lower the in-flight limit.

The server answers many requests at once, each in ``FAST_S``, but every ``EVERY``-th one takes ``SLOW_S``,
past ``timeout_s``. Requests sent after the slow one are answered before it times out: the server is not
working through a queue, and the timeout is isolated. Every timeout halved the limit, which grows back by
one per ``limit`` successes, so one slow request in 30 kept it near a third of its ceiling (and the rows
per second with it). The limit is read as each request arrives, so the check counts requests, not time.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.servers.pinecone_rest import PineconeRestServer
from tests.servers.script import Admission, ServerState
from vectordb.connector import connect
from vectordb.connector.limits import AimdLimit

pytestmark = pytest.mark.timeout(120)

CEILING = 32
EVERY = 30
FAST_S, SLOW_S, TIMEOUT_S = (
    0.05,
    2.0,
    1.0,
)  # fast requests 20 times within the timeout, on a loaded machine too


class Spiky(ServerState):
    """Answers every ``EVERY``-th upsert in ``SLOW_S``, the others in ``FAST_S``, many at once; records the
    client's in-flight limit as each one arrives."""

    def __init__(self) -> None:
        super().__init__()
        self._count = threading.Lock()
        self.arrived = 0
        self.client_limit: AimdLimit | None = None
        self.limits: list[int] = []

    def admit(self, api_key: str | None) -> Admission:
        with self._count:
            self.arrived += 1
            slow = self.arrived % EVERY == 0
            if self.client_limit is not None:
                self.limits.append(self.client_limit.limit)
        time.sleep(SLOW_S if slow else FAST_S)
        return super().admit(api_key)


def rows(n: int) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "values": [(i + 1) / 7] * 4} for i in range(n)]


def test_one_slow_request_in_thirty_leaves_the_limit_near_its_ceiling() -> None:
    n = 30_000  # 600 requests, 20 of them slow
    state = Spiky()
    with PineconeRestServer(0, state) as server:
        uri = f"pinecone://127.0.0.1:{server.port}"
        options = {"batch_size": 50, "max_concurrency": CEILING, "timeout_s": TIMEOUT_S}
        with connect(uri, verify=False, on_error="report", **options) as client:
            state.client_limit = client.engine.limit
            report = client.upsert(rows(n))
            end = client.engine.limit.limit
    assert report.written == n and report.failed == 0, report
    assert report.retries >= 10, report  # the slow requests did time out, and were sent again
    mean = sum(state.limits) / len(state.limits)
    # old code: mean 10.5, 5 at the end (each timeout halved it); the requests in flight, and the rows per
    # second with them, are what the limit allows
    assert mean >= 0.8 * CEILING, (mean, min(state.limits))
    assert end >= 0.8 * CEILING, end
