"""Isolation of refused rows, order per id and the write's dimension, against scripted servers.

The scripted server refuses a whole request when it holds a bad id, always with one message that
names no row, so nothing but the engine's own splitting can find the bad rows.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import numpy as np
import pinecone_upsert_pb2 as pb
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vectordb.connector import ConfigError, Rejected, connect
from vectordb.connector.engine import Engine
from vectordb.connector.errors import SystemicRejection
from vectordb.connector.limits import IsolationBudget
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

# an UpsertResponse counting more rows than any batch holds: every row upserted (proto3 leaves a count of 0
# off the wire, so an empty reply is "none upserted")
OK = WireReply(pb.UpsertResponse(upserted_count=10_000).SerializeToString())
REFUSAL = "INVALID_ARGUMENT: invalid vector"


class Refuser:
    """A server that refuses any request holding a bad id, with one message whatever the row."""

    def __init__(self, bad: set[str], delay_s: Callable[[], float] = lambda: 0.0) -> None:
        self.bad, self.delay_s = bad, delay_s
        self.stored: dict[str, list[float]] = {}
        self.applied: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: WireRequest) -> WireReply:
        vectors = pb.UpsertRequest.FromString(request.body).vectors
        time.sleep(self.delay_s())
        if any(v.id in self.bad for v in vectors):
            raise Rejected(REFUSAL, status="INVALID_ARGUMENT")
        with self._lock:
            for v in vectors:
                self.stored[v.id] = list(v.values)
                self.applied.append(v.id)
        return OK


def client_for(server: Refuser, **options):
    client = connect("pinecone+grpc://127.0.0.1:1", **{"verify": False, "on_error": "report", **options})
    transport = MockTransport(server)
    client._engine = Engine(client.backend, transport, client.options, sleep=lambda s: None)
    return client, transport


def rows(n: int, dim: int = 4) -> list[dict]:
    return [{"id": f"r{i}", "values": [float(i) + 0.5] * dim} for i in range(n)]  # none all zeros


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 1000),
    batch_size=st.integers(1, 1000),
    concurrency=st.integers(1, 4),
    data=st.data(),
)
def test_exactly_the_refused_rows_fail_whatever_their_placement(
    n: int, batch_size: int, concurrency: int, data: st.DataObject
) -> None:
    kind = data.draw(st.sampled_from(["none", "few", "many", "all", "any"]))
    if kind == "none":
        bad_rows: set[int] = set()
    elif kind == "all":
        bad_rows = set(range(n))
    elif kind == "few":
        bad_rows = set(data.draw(st.lists(st.integers(0, n - 1), max_size=5)))
    else:
        fraction = data.draw(st.floats(0.0, 1.0)) if kind == "any" else 0.5
        rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
        bad_rows = {i for i in range(n) if rng.random() < fraction}
    bad = {f"r{i}" for i in bad_rows}
    server = Refuser(bad)
    client, _ = client_for(server, batch_size=batch_size, max_concurrency=concurrency)
    # isolate everything
    client.engine.dispatch.isolation = IsolationBudget(per_row=1.0, reserve=float("inf"))
    try:
        report = client.write(rows(n))
    except SystemicRejection as exc:
        # allowed only when the first rows examined alone were all refused and none was accepted
        assert len(bad) >= 32 and REFUSAL in str(exc)
        assert not (set(server.applied) & bad)
        return
    refused = {i for f in report.failures if f.error_type == "Rejected" for i in f.ids}
    assert refused == bad
    assert {f.error for f in report.failures} <= {REFUSAL}
    assert set(server.stored) == {f"r{i}" for i in range(n)} - bad
    assert (report.written, report.failed) == (n - len(bad), len(bad))


def count_requests(n_rows: int, batch_size: int, bad_per_batch: int, seed: int = 7) -> tuple[int, int]:
    """(requests, failed) for a write with ``bad_per_batch`` bad rows placed at random in every batch."""
    rng = random.Random(seed)
    bad = set()
    for start in range(0, n_rows, batch_size):
        bad |= {f"r{start + k}" for k in rng.sample(range(batch_size), bad_per_batch)}
    server = Refuser(bad)
    client, transport = client_for(server, batch_size=batch_size, max_concurrency=2)
    report = client.write(rows(n_rows))
    assert set(report.failed_ids) == bad and report.written == n_rows - len(bad)
    return len(transport.requests), report.failed


@pytest.mark.parametrize(("bad_per_batch", "most_per_batch"), [(1, 20), (2, 35), (10, 130)])
def test_isolation_costs_about_log2_requests_per_bad_row(bad_per_batch: int, most_per_batch: int) -> None:
    requests, failed = count_requests(5000, 500, bad_per_batch)
    assert failed == 10 * bad_per_batch
    assert requests <= 10 * most_per_batch  # 1 + about 1.5 log2(500 / k) per bad row, per batch


def test_an_all_refused_write_stops_with_the_reason_after_few_requests() -> None:
    server = Refuser({f"r{i}" for i in range(100_000)})
    client, transport = client_for(server, batch_size=500, max_concurrency=4)
    with pytest.raises(SystemicRejection, match=r"refused each of the first 3[2-5] rows") as info:
        client.write(rows(100_000))
    assert REFUSAL in str(info.value)
    assert len(transport.requests) < 4 * 60  # each sender's batch split to 8-9 single rows, not 2 million


def test_one_accepted_row_disarms_the_systemic_stop() -> None:
    n = 2000
    server = Refuser({f"r{i}" for i in range(n) if i != 1500})  # one good row, late in the input
    client, _ = client_for(server, batch_size=500, max_concurrency=1)
    client.engine.dispatch.isolation = IsolationBudget(per_row=1.0, reserve=float("inf"))
    with pytest.raises(SystemicRejection):
        client.write(rows(n))  # the first 32 rows examined alone are refused before row 1500 is reached
    server = Refuser({f"r{i}" for i in range(n) if i != 3})  # the good row comes first
    client, _ = client_for(server, batch_size=500, max_concurrency=1)
    client.engine.dispatch.isolation = IsolationBudget(per_row=1.0, reserve=float("inf"))
    report = client.write(rows(n))
    assert report.written == 1 and report.failed == n - 1 and server.stored.keys() == {"r3"}


def test_different_reasons_are_rows_faults_not_the_writes() -> None:
    def named(request: WireRequest) -> WireReply:
        ids = [v.id for v in pb.UpsertRequest.FromString(request.body).vectors]
        raise Rejected(f"INVALID_ARGUMENT: bad vector {ids[0]}")

    client = connect("pinecone+grpc://127.0.0.1:1", verify=False, on_error="report", batch_size=50)
    transport = MockTransport(named)
    client._engine = Engine(client.backend, transport, client.options, sleep=lambda s: None)
    report = client.write(rows(100))
    assert report.failed == 100 and report.written == 0
    assert {f.error for f in report.failures if len(f.ids) == 1} >= {"INVALID_ARGUMENT: bad vector r0"}


def test_rows_left_unisolated_when_the_budget_is_spent_say_so() -> None:
    n = 4000
    bad = {f"r{i}" for i in range(0, n, 2)}  # every other row: isolating costs about 2 requests a row
    server = Refuser(bad)
    client, transport = client_for(server, batch_size=100, isolation_budget=0.05, max_concurrency=1)
    client.engine.dispatch.isolation = IsolationBudget(per_row=0.05, reserve=40)
    report = client.write(rows(n))
    by_type: dict[str, set] = {}
    for f in report.failures:
        by_type.setdefault(f.error_type, set()).update(f.ids)
    assert by_type["Rejected"] <= bad  # every row refused alone is a bad row
    unisolated = by_type["NotIsolated"]
    assert unisolated and not unisolated & by_type["Rejected"]
    assert all(
        "isolation budget" in f.error and REFUSAL in f.error
        for f in report.failures
        if f.error_type == "NotIsolated"
    )
    assert set(server.stored) | by_type["Rejected"] | unisolated == {f"r{i}" for i in range(n)}
    assert not set(server.stored) & bad
    assert report.written + report.failed == n
    assert len(transport.requests) <= n / 100 + 40 + 0.05 * n + 1  # batches + reserve + earned


class Ledger(Refuser):
    """A refuser that tells, as a server can, first sends from isolation probes: a probe holds only
    ids sent before (every id is sent once in a first attempt, and no request here is retried)."""

    def __init__(self, bad: set[str], rng: random.Random) -> None:
        super().__init__(bad, delay_s=lambda: rng.random() * 0.0005)
        self.seen: set[str] = set()
        self.probes = 0

    def __call__(self, request: WireRequest) -> WireReply:
        ids = [v.id for v in pb.UpsertRequest.FromString(request.body).vectors]
        with self._lock:
            if self.seen.issuperset(ids):
                self.probes += 1
            self.seen.update(ids)
        return super().__call__(request)


class WatchedBudget(IsolationBudget):
    """The engine's budget, unchanged, noting what the server had seen each time it said "spent"."""

    def __init__(self, per_row: float, reserve: float, server: Ledger) -> None:
        super().__init__(per_row, reserve)
        self.server = server
        self.spent_at: list[tuple[int, int]] = []  # (probes the server had, rows it had seen)

    @property
    def available(self) -> bool:
        ok = super().available
        if not ok:
            with self.server._lock:
                self.spent_at.append((self.server.probes, len(self.server.seen)))
        return ok


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 3000),
    batch_size=st.integers(1, 1000),
    density=st.floats(0.0, 0.5),
    concurrency=st.integers(1, 32),
    per_row=st.sampled_from([0.0, 0.05, 0.5, 1.0, 2.0, 100.0]),
    reserve=st.sampled_from([0.0, 10.0, 1000.0]),
    seed=st.integers(0, 2**32 - 1),
)
@example(n=3000, batch_size=1000, density=0.1, concurrency=32, per_row=1.0, reserve=1000.0, seed=1)
@example(n=3000, batch_size=1000, density=0.1, concurrency=32, per_row=100.0, reserve=1000.0, seed=2)
def test_no_good_row_fails_before_the_stated_isolation_bound_is_spent(
    n: int, batch_size: int, density: float, concurrency: int, per_row: float, reserve: float, seed: int
) -> None:
    """The README's bound: isolating spends at most ``reserve`` (1,000) plus ``isolation_budget`` per
    row sent, at any concurrency. Never more requests than that; and a good row fails as
    ``NotIsolated`` only once that many were spent (give or take the probes still on the way)."""
    rng = random.Random(seed)
    bad = {f"r{i}" for i in range(n) if rng.random() < density}
    server = Ledger(bad, rng)
    client, transport = client_for(
        server, batch_size=batch_size, max_concurrency=concurrency, isolation_budget=per_row
    )
    budget = WatchedBudget(per_row, reserve, server)
    client.engine.dispatch.isolation = budget
    try:
        report = client.write(rows(n))
    except SystemicRejection:
        assert not server.stored  # only a write with no accepted row can be systemic
        return
    assert len(server.seen) == n and len(transport.requests) == server.probes + -(-n // batch_size)
    stated = (reserve if per_row > 0 else 0.0) + per_row * n
    assert server.probes <= stated
    for probes, seen in budget.spent_at:  # "spent" was said only with the bound (then) reached
        assert probes + concurrency >= (reserve if per_row > 0 else 0.0) + per_row * seen - 1
    by_type: dict[str, set[str]] = {}
    for failure in report.failures:
        by_type.setdefault(failure.error_type, set()).update(failure.ids)
    assert by_type.get("Rejected", set()) <= bad
    if not budget.spent_at:
        assert by_type.keys() <= {"Rejected"} and set(server.stored) == {f"r{i}" for i in range(n)} - bad
    assert set(server.stored) | set(report.failed_ids) == {f"r{i}" for i in range(n)}
    assert report.written == len(server.stored)


def test_no_isolation_at_all_with_a_zero_budget() -> None:
    server = Refuser({"r3"})
    client, transport = client_for(server, batch_size=10, isolation_budget=0)
    report = client.write(rows(20))
    assert report.written == 10 and len(transport.requests) == 2
    [failure] = report.failures
    assert failure.error_type == "NotIsolated" and len(failure.ids) == 10


# -- the same id twice in one write -----------------------------------------------------------------


@pytest.mark.parametrize("as_arrow", [False, True])
def test_the_last_occurrence_of_an_id_wins_under_concurrency(as_arrow: bool) -> None:
    rng = random.Random(11)
    n_ids, n_rows = 50, 3000
    data = [{"id": f"k{rng.randrange(n_ids)}", "values": [float(i) + 0.5] * 4} for i in range(n_rows)]
    server = Refuser(set(), delay_s=lambda: rng.random() * 0.004)
    client, transport = client_for(server, batch_size=20, max_concurrency=8)
    if as_arrow:
        import pyarrow as pa

        table = pa.Table.from_pylist(data)
        report = client.write([table.slice(i, 100) for i in range(0, n_rows, 100)])
    else:
        report = client.write(data)
    assert report.ok and report.written == n_rows
    last = {row["id"]: row["values"] for row in data}
    assert server.stored == last
    assert transport.peak_in_flight > 1  # the order came from waiting, not from sending one at a time


# -- the dimension of a write -----------------------------------------------------------------------


def test_the_dimension_is_the_most_common_length_not_the_first_rows() -> None:
    data = [{"id": f"s{i}", "values": [1.0] * 31} for i in range(10)] + rows(90, dim=32)
    server = Refuser(set())
    client, _ = client_for(server, batch_size=25)
    report = client.write(data)
    assert report.written == 90 and sorted(report.failed_ids) == sorted(f"s{i}" for i in range(10))
    assert {f.error for f in report.failures} == {"vector has 31 dimensions; expected 32"}


def stats_handler(dimension: int, server: Refuser) -> Callable[[WireRequest], WireReply]:
    def handle(request: WireRequest) -> WireReply:
        if request.method.endswith("DescribeIndexStats"):
            return WireReply(pb.DescribeIndexStatsResponse(dimension=dimension).SerializeToString())
        return server(request)

    return handle


def test_the_targets_dimension_wins_over_the_rows() -> None:
    server = Refuser(set())
    client = connect(
        "pinecone+grpc://127.0.0.1:1", on_error="report", batch_size=25
    )  # verify: asks the index
    transport = MockTransport(stats_handler(32, server))
    client._engine = Engine(client.backend, transport, client.options, sleep=lambda s: None)
    data = [{"id": f"s{i}", "values": [1.0] * 31} for i in range(30)] + rows(10, dim=32)
    report = client.write(data)  # the rows' agreed length is 31, the index's 32: rows fail, not the write
    assert report.written == 10 and len(report.failed_ids) == 30
    assert {f.error for f in report.failures} == {"vector has 31 dimensions; expected 32"}


def test_a_dimension_the_user_gave_that_the_target_lacks_is_an_error() -> None:
    client = connect("pinecone+grpc://127.0.0.1:1", dimension=31)
    transport = MockTransport(stats_handler(32, Refuser(set())))
    client._engine = Engine(client.backend, transport, client.options, sleep=lambda s: None)
    with pytest.raises(ConfigError, match=r"dimension mismatch: index .* has dimension 32, the data has 31"):
        client.write([{"id": "a", "values": np.ones(31, np.float32)}])
