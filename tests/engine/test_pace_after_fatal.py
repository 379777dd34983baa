"""With a rate budget, a fatal error ends the wait for the next batch's turn, and that batch is not sent.

README: "Ctrl-C or a fatal error ends any wait ... and nothing is sent after the stop". The caller's thread
waited for the budget (``Engine._pace``) in a plain sleep, then sent its batch whatever had happened
meanwhile: a 401 of the batch before it was raised only once that batch was sent, two seconds later.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.servers import pinecone_rest, script
from tests.servers.fixtures import start_server
from vectordb.connector import AuthError, connect
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(60)


def test_a_fatal_error_ends_the_wait_for_the_rate_budget_and_drops_the_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    arrivals: list[tuple[float, str]] = []  # (monotonic time, what the server answered)
    lock = threading.Lock()
    serve = script.serve_upsert

    def serve_upsert(*args: Any, **kwargs: Any) -> script.Verdict:
        with lock:
            second = len(arrivals) == 1
            arrivals.append((time.monotonic(), "refused" if second else "served"))
        if second:  # the second upsert's key is refused: a fatal error
            return script.Verdict("unauthenticated", message="Invalid API Key")
        return serve(*args, **kwargs)

    monkeypatch.setattr(pinecone_rest, "serve_upsert", serve_upsert)
    rows = [{"id": f"d{i}", "values": [float(i), 1.0]} for i in range(60)]
    with start_server("rest") as server:
        try:
            with connect(
                server.uri, on_error="report", batch_size=10, max_concurrency=2, max_rows_per_second=5
            ) as client:
                start = time.monotonic()
                with pytest.raises(AuthError) as raised:
                    client.write(rows)  # a batch of 10 rows every 2 s
                elapsed = time.monotonic() - start
        finally:
            forget_shared()
    refused_at = next(t for t, answer in arrivals if answer == "refused")
    after = [round(t - refused_at, 2) for t, _ in arrivals if t > refused_at]
    assert after == [], f"upserts sent after the 401, seconds after it: {after}"  # old code: [~2.0]
    assert refused_at - start < elapsed < refused_at - start + 1.0, (elapsed, refused_at - start)
    report = raised.value.report
    assert report is not None and report.written == 10, report
    stopped = [f for f in report.failures if f.error_type == "Stopped"]
    assert sorted(i for f in stopped for i in f.ids) == sorted(f"d{i}" for i in range(20, 30)), report
