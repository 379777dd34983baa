"""A few seconds of throttling at the start of a write (a cold or busy index) fail no row.

The server throttles every upsert for its first seconds, each reply with a short ``Retry-After`` (or
gRPC pushback), then accepts everything. Each throttled retry waited the hint alone, and with no request
accepted yet each spent a token of the retry budget: the budget (about 20 retries) was gone within 20
hints, so 3 s of throttling with a 50 ms hint, or 6 s with a 1 s hint, failed all or most of the rows of
a write the server would have taken whole. While none is accepted, a throttle now waits the throttle
backoff (0.5-1, 1-2, 2-4 s...) or the hint, whichever is longer; once some are, the hint as it says.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.servers.pinecone_grpc import PineconeGrpcServer
from tests.servers.pinecone_rest import PineconeRestServer
from tests.servers.script import Fault, FaultScript, ServerState
from vectordb.connector import Throttled, connect
from vectordb.connector.limits import RetryRule
from vectordb.connector.report import WriteReport

pytestmark = pytest.mark.timeout(120)


class ThrottledAtFirst(ServerState):
    """Throttles every upsert in the first ``window_s`` seconds after the first one, then accepts all."""

    def __init__(self, window_s: float) -> None:
        super().__init__()
        self.window_s = window_s
        self.first_s: float | None = None

    def _fault(self, script: FaultScript, api_key: str | None) -> Fault | None:
        fault = super()._fault(script, api_key)
        if fault is not None:
            return fault
        now = time.monotonic()  # called under the state's lock
        if self.first_s is None:
            self.first_s = now
        return "throttled" if now - self.first_s < self.window_s else None


def write_through(kind: str, state: ServerState, max_concurrency: int, n: int) -> tuple[WriteReport, float]:
    """Writes ``n`` rows to a Pinecone test server of ``kind`` holding ``state``: the report, the seconds."""
    server: PineconeGrpcServer | PineconeRestServer
    server = PineconeGrpcServer(0, state) if kind == "grpc" else PineconeRestServer(0, state)
    with server:
        scheme = "pinecone+grpc" if kind == "grpc" else "pinecone"
        started = time.monotonic()
        with connect(
            f"{scheme}://127.0.0.1:{server.port}",
            api_key="k",
            on_error="report",
            batch_size=100,
            max_concurrency=max_concurrency,
        ) as client:
            report = client.upsert(rows(n))
        return report, time.monotonic() - started


def rows(n: int) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "values": [0.5, -0.25, 1.0, (i + 1) / 7]} for i in range(n)]


@pytest.mark.parametrize(
    ("kind", "window_s", "hint_s", "max_concurrency"),
    [("grpc", 3.0, 0.05, 4), ("rest", 6.0, 1.0, 4), ("grpc", 6.0, 1.0, 8)],
    ids=["grpc-3s-hint-50ms", "rest-6s-hint-1s", "grpc-6s-hint-1s-c8"],
)
def test_a_throttle_window_at_the_start_of_a_write_fails_no_row(
    kind: str, window_s: float, hint_s: float, max_concurrency: int
) -> None:
    state = ThrottledAtFirst(window_s)
    state.set_script(FaultScript(dimension=4, retry_after_s=hint_s))
    report, elapsed = write_through(kind, state, max_concurrency, 3000)
    arrived = state.snapshot()
    # old code, each case: FAILED 0/3000 (20 retries within 2.4 s at the 50 ms hint) or PARTIAL 2700-2800/3000
    assert report.ok and report.written == 3000, report
    assert arrived.ids() == {f"r{i}" for i in range(3000)}
    assert arrived.count("throttled") == report.throttled > 0
    # the window waited out, not much more: the longest throttle backoff of a request is its last wait
    assert window_s <= elapsed < window_s + 20.0, (elapsed, report)


def test_before_any_accept_a_throttle_waits_the_longer_of_its_hint_and_the_throttle_backoff() -> None:
    rule = RetryRule(max_concurrency=4, max_retries=5, rand=lambda: 0.0, throttle_cap_s=30.0)
    counts = WriteReport()

    def waits(hint_s: float) -> list[float]:
        throttled = Throttled("429", status=429, retry_after_s=hint_s)
        assert rule.may_retry(throttled, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
        return [rule.delay_s(a, throttled, answered=True) for a in range(1, 6)]

    # none accepted since the throttling began: a cold or busy index, or a quota spent for good
    assert waits(0.05) == pytest.approx([0.5, 1.0, 2.0, 4.0, 8.0])
    assert waits(3.0) == pytest.approx([3.0, 3.0, 3.0, 4.0, 8.0])
    assert waits(90.0) == pytest.approx([90.0] * 5)  # a hint past the cap is honoured, as before
    # the server accepts some: a rate limit, whose hint is its window's end, waited as it says; the same
    # request throttled again after waiting it waits at least the throttle backoff of its attempt before
    rule.on_success()
    assert waits(0.05) == pytest.approx([0.05, 0.5, 1.0, 2.0, 4.0])
    assert waits(1.0) == pytest.approx([1.0, 1.0, 1.0, 2.0, 4.0])
    assert waits(3.0) == pytest.approx([3.0, 3.0, 3.0, 3.0, 4.0])


def test_a_control_call_throttled_at_first_waits_the_throttle_backoff_whatever_its_hint() -> None:
    """A control-plane call (a target check, a describe, Qdrant's shard keys) retried with a short hint waited
    the hint alone, so it gave up after six attempts in under a second where the same throttling without a
    hint, or the rows' requests, rode it out: a hint made the call less patient than none."""
    from types import SimpleNamespace

    from vectordb.connector.backends.base import Backend

    started = time.monotonic()

    def call() -> str:
        if time.monotonic() - started < 2.0:  # a cold server, throttling with a 50 ms hint
            raise Throttled("429 throttled", status=429, retry_after_s=0.05)
        return "answered"

    stub: Any = SimpleNamespace(options=SimpleNamespace(max_retries=5))
    assert Backend.retried(stub, call, SimpleNamespace(answered=True)) == "answered"
