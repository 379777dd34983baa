"""A restart that outlasts the retry budget.

A server that answered and then answers 503 for 12 s (a restart): with 8 requests in flight the budget
(4 x max_concurrency tokens) was spent within four retries each, and every later request failed at its
first 503, so 20 of 3,000 rows were written. A host that answered before now gets each request's attempts
(0.5-1, 1-2, 2-4, 4-8, 5-10 s) whatever the budget, and every row is written.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from tests.servers.pinecone_rest import PineconeRestServer
from tests.servers.script import Admission, ServerState
from vectordb.connector import connect

pytestmark = pytest.mark.timeout(120)

OUTAGE_S = 12.0


class Restarting(ServerState):
    """Answers every upsert 503 for ``OUTAGE_S`` from the first one after ``restart()``."""

    def __init__(self) -> None:
        super().__init__()
        self.down_from: float | None = None
        self.restarting = False

    def restart(self) -> None:
        self.restarting = True

    def admit(self, api_key: str | None) -> Admission:
        admission = super().admit(api_key)
        if not self.restarting:
            return admission
        now = time.monotonic()
        if self.down_from is None:
            self.down_from = now
        if now - self.down_from < OUTAGE_S:
            return dataclasses.replace(admission, fault="unavailable")
        return admission


def rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "values": [(i + 1) / 7] * 4} for i in range(start, start + n)]


def test_a_restart_longer_than_the_budget_lasts_loses_no_row() -> None:
    state = Restarting()
    with PineconeRestServer(0, state) as server:
        uri = f"pinecone://127.0.0.1:{server.port}"
        options = {"batch_size": 10, "max_concurrency": 8, "max_retries": 5, "timeout_s": 5.0}
        with connect(uri, verify=False, on_error="report", **options) as client:
            assert client.upsert(rows(10, start=10_000)).ok  # the host answered
            state.restart()
            report = client.upsert(rows(1500))
        stored = state.snapshot().ids()
    # old code: PARTIAL, about 20 rows written and the rest failed Unavailable
    assert report.ok, report
    assert report.written == 1500, report
    assert {f"r{i}" for i in range(1500)} <= stored
    assert state.down_from is not None
