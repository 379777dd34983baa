"""Upserts and deletes of the same few ids, mixed in one write, against a scripted index.

The scripted index applies Pinecone's gRPC upserts and deletes (the generated classes decode them),
answers after a random delay, throttles some requests (nothing applied: the engine retries them) and
refuses whole any request holding a bad id, with one message naming no row. Whatever the sequence,
batch size and concurrency, the index ends as applying the rows in input order would leave it, and
exactly the rows of bad ids fail, each failure saying which op it was. The index's randomness comes
from the drawn ``seed``, which Hypothesis prints with a failing example.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pinecone_upsert_pb2 as pb
import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vectordb.connector import Rejected, Throttled, connect
from vectordb.connector.engine import Engine
from vectordb.connector.errors import SystemicRejection
from vectordb.connector.limits import IsolationBudget
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

REFUSAL = "INVALID_ARGUMENT: request refused"
IDS = ["k0", "k1", "k2", "k3", "k4"]


class ScriptedIndex:
    """Upserts and deletes by id, each request applied whole or not at all."""

    def __init__(self, bad: set[str], rng: random.Random, throttle: float) -> None:
        self.bad, self.rng, self.throttle = bad, rng, throttle
        self.stored: dict[str, float] = {}  # id -> the first value of its vector: which row wrote it
        self.applied = 0
        self.largest_delete = 0
        self._lock = threading.Lock()

    def __call__(self, request: WireRequest) -> WireReply:
        with self._lock:
            delay, throttled = self.rng.random() * 0.002, self.rng.random() < self.throttle
        time.sleep(delay)
        if throttled:
            raise Throttled("RESOURCE_EXHAUSTED: slow down", status="RESOURCE_EXHAUSTED", retry_after_s=0.0)
        if request.method == "/VectorService/Delete":
            ids = list(pb.DeleteRequest.FromString(request.body).ids)
            self._refuse_bad(ids)
            with self._lock:
                self.largest_delete = max(self.largest_delete, len(ids))
                for vector_id in ids:
                    self.stored.pop(vector_id, None)
                self.applied += len(ids)
            return WireReply(pb.DeleteResponse().SerializeToString())
        vectors = pb.UpsertRequest.FromString(request.body).vectors
        self._refuse_bad([v.id for v in vectors])
        with self._lock:
            for v in vectors:
                self.stored[v.id] = v.values[0]
            self.applied += len(vectors)
        return WireReply(pb.UpsertResponse(upserted_count=len(vectors)).SerializeToString())

    def _refuse_bad(self, ids: list[str]) -> None:
        if self.bad.intersection(ids):
            raise Rejected(REFUSAL, status="INVALID_ARGUMENT")


def rows_of(ops: list[tuple[int, bool]]) -> list[dict[str, Any]]:
    """Row i upserts a vector of value i, or deletes (with a vector that is no vector, never read)."""
    out: list[dict[str, Any]] = []
    for i, (key, delete) in enumerate(ops):
        if delete:
            out.append({"id": IDS[key], "op": "Delete", "values": None})
        else:
            out.append({"id": IDS[key], "op": "upsert", "values": [float(i) + 0.5] * 4})
    return out


def applied_in_order(rows: list[dict[str, Any]], bad: set[str]) -> dict[str, float]:
    state: dict[str, float] = {}
    for row in rows:
        if row["id"] in bad:
            continue
        if row["op"] == "Delete":
            state.pop(row["id"], None)
        else:
            state[row["id"]] = row["values"][0]
    return state


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(st.tuples(st.integers(0, len(IDS) - 1), st.booleans()), min_size=1, max_size=150),
    batch_size=st.integers(1, 40),
    concurrency=st.integers(1, 8),
    bad=st.sets(st.sampled_from(IDS), max_size=2),
    throttle=st.sampled_from([0.0, 0.2]),
    as_arrow=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@example(
    ops=[(0, False), (0, True)], batch_size=1, concurrency=8, bad=set(), throttle=0.0, as_arrow=False, seed=1
)
@example(
    ops=[(0, True), (0, False)], batch_size=1, concurrency=8, bad=set(), throttle=0.0, as_arrow=True, seed=2
)
@example(ops=[(0, False), (0, True), (0, True)], batch_size=2, concurrency=4, bad={"k1"}, throttle=0.2,
         as_arrow=False, seed=3)  # fmt: skip
def test_the_index_ends_as_the_rows_applied_in_input_order(
    ops: list[tuple[int, bool]],
    batch_size: int,
    concurrency: int,
    bad: set[str],
    throttle: float,
    as_arrow: bool,
    seed: int,
) -> None:
    rows = rows_of(ops)
    index = ScriptedIndex(bad, random.Random(seed), throttle)
    client = connect(
        "pinecone+grpc://127.0.0.1:1",
        verify=False,
        on_error="report",
        op_column="op",
        batch_size=batch_size,
        max_concurrency=concurrency,
        max_retries=50,
    )
    transport = MockTransport(index)
    client._engine = Engine(client.backend, transport, client.options, sleep=lambda s: None)
    # isolate everything
    client.engine.dispatch.isolation = IsolationBudget(per_row=1.0, reserve=float("inf"))
    data: Any = rows
    if as_arrow:
        table = pa.Table.from_pylist(rows)
        data = [table.slice(i, 7) for i in range(0, len(rows), 7)]
    try:
        report = client.write(data)
    except SystemicRejection:
        assert index.applied == 0  # only a write none of whose rows was accepted can be systemic
        return
    finally:
        client.close()

    assert index.stored == applied_in_order(rows, bad)
    failed_positions = {p for f in report.failures for p in f.positions}
    assert failed_positions == {i for i, row in enumerate(rows) if row["id"] in bad}
    for failure in report.failures:
        assert failure.error == REFUSAL and failure.error_type == "Rejected"
        ops_named = {"delete" if rows[p]["op"] == "Delete" else "upsert" for p in failure.positions}
        assert ops_named == {failure.op}
    deletes = sum(1 for row in rows if row["op"] == "Delete" and row["id"] not in bad)
    assert (report.written, report.failed, report.deleted) == (len(rows) - len(failed_positions),
                                                               len(failed_positions), deletes)  # fmt: skip
    assert index.largest_delete <= batch_size


def test_delete_takes_arrays_of_ids_and_reads_a_generator_as_it_sends() -> None:
    """numpy and pyarrow arrays of ids are their values (their scalars failed every id); a generator is
    read chunk by chunk as requests go, never held whole (it was listed first)."""
    import numpy as np

    index = ScriptedIndex(set(), random.Random(0), 0.0)
    client = connect("pinecone+grpc://127.0.0.1:1", verify=False, on_error="report")
    client._engine = Engine(client.backend, MockTransport(index), client.options, sleep=lambda s: None)
    with client:
        assert client.delete(np.arange(5)).deleted == 5
        assert client.delete(pa.array(["a", "b"])).deleted == 2
        assert client.delete(pa.table({"id": ["c"]})["id"]).deleted == 1
        step = client.max_delete_rows * 16
        applied_before_the_third_chunk = []

        def ids() -> Any:
            for i in range(3 * step):
                if i == 2 * step:  # listed whole first, no delete had been sent by now
                    applied_before_the_third_chunk.append(index.applied)
                yield f"g{i}"

        report = client.delete(ids())
    assert report.ok and report.deleted == 3 * step, report
    assert applied_before_the_third_chunk[0] > 0
