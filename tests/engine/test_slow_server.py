"""A slow server that answers every request is not stopped as one that stopped answering.

The server serves one upsert at a time. With many requests in flight the client's own requests queue
past their timeout at the server, which still serves the ones the client gave up on; a timeout did not
lower the in-flight limit, so the queue stayed full, every request timed out and the write stopped
with ``StoppedAnswering`` (``max_concurrency x (max_retries + 1)`` timeouts in a row) while the server
stored most of the rows. A timeout now halves the limit as a throttle does, and the verdict waits for
a request sent alone to get no reply.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.servers.pinecone_rest import PineconeRestServer
from tests.servers.script import Admission, ServerState
from vectordb.connector import connect

pytestmark = pytest.mark.timeout(120)

# 10 services: 32 requests in flight queue for 3.2 s; a request sent alone has 1 s (a loaded 2-core machine
# starved one sent alone past 0.5 s, and the write was judged stopped)
SERVICE_S = 0.1
TIMEOUT_S = 1.0


class OneAtATime(ServerState):
    """Serves one upsert at a time, ``SERVICE_S`` each, whether or not its client still waits."""

    def __init__(self) -> None:
        super().__init__()
        self._serving = threading.Lock()

    def admit(self, api_key: str | None) -> Admission:
        with self._serving:
            time.sleep(SERVICE_S)
            return super().admit(api_key)


def rows(n: int) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "values": [(i + 1) / 7] * 4} for i in range(n)]


def test_a_slow_server_with_many_requests_in_flight_is_not_stopped() -> None:
    state = OneAtATime()
    with PineconeRestServer(0, state) as server:
        uri = f"pinecone://127.0.0.1:{server.port}"
        options = {"batch_size": 50, "max_concurrency": 32, "max_retries": 2, "timeout_s": TIMEOUT_S}
        with connect(uri, verify=False, on_error="report", **options) as client:
            report = client.upsert(rows(3000))  # old code: StoppedAnswering after 96 timeouts in a row
            limit = client.engine.limit.limit
        time.sleep(2.0)  # the requests the client gave up on are still served
        stored = set(state.snapshot().namespaces.get("", {}))
    assert not report.stopped, report
    assert report.written + report.failed == 3000, report
    # the timeouts lowered the limit; rows whose attempts all queued behind the first burst fail, retryable
    assert limit < 32, limit
    assert report.written >= 1500, report
    for failure in report.failures:
        assert failure.error_type == "DeadlineExceeded" and failure.retryable, failure
    written = {f"r{i}" for i in range(3000)} - {i for f in report.failures for i in f.ids}
    assert written <= stored
