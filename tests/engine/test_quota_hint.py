"""A quota spent for good that names a time to come back fails fast.

A server that throttles every upsert with ``Retry-After: 1``: every throttle held the next batch for the
hint, also once the budget was spent and its request was not retried, so the write took one hint per batch
to fail (76 s for 60 batches, 16 hours for 1,000 batches at Retry-After 60). Only a retried throttle holds
new starts now: the batches after the budget fail fast.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.servers.pinecone_rest import PineconeRestServer
from tests.servers.script import FaultScript, ServerState
from vectordb.connector import connect

pytestmark = pytest.mark.timeout(120)


def rows(n: int) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "values": [(i + 1) / 7] * 4} for i in range(n)]


def test_a_quota_spent_for_good_with_a_hint_fails_fast() -> None:
    state = ServerState()
    state.set_script(FaultScript(throttle_first=1_000_000, retry_after_s=1.0))
    with PineconeRestServer(0, state) as server:
        uri = f"pinecone://127.0.0.1:{server.port}"
        options = {"batch_size": 10, "max_concurrency": 4, "max_retries": 3, "timeout_s": 5.0}
        with connect(uri, verify=False, on_error="report", **options) as client:
            started = time.monotonic()
            report = client.upsert(rows(600))
            elapsed = time.monotonic() - started
    assert report.failed == 600, report
    assert report.retries <= 30, report  # the budget: about 20 retries in all
    # 20 retries at most 4 at once, a second each: about 17 s (old code: a second per batch, 76 s)
    assert elapsed < 40.0, (elapsed, report)
