"""The behavioural suite every backend runs: subclass ``BackendContract`` and supply the ``target`` fixture.

``target`` gives a fresh, empty collection: its URI, the options it needs, and ``read_back()``,
which reads every stored row with the database's own client. The suite writes through
``vectordb.connector`` and compares what the database holds, exactly (float32 vectors,
metadata), so a backend passes only if real data lands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from vectordb.connector import connect

__all__ = ["BackendContract", "StoredRow", "Target", "make_table"]


@dataclass(frozen=True)
class StoredRow:
    vector: np.ndarray | None  # float32
    metadata: dict[str, Any]


@dataclass
class Target:
    uri: str
    read_back: Callable[[], dict[str, StoredRow]]  # id (as a string) → row, as the database holds it
    options: dict[str, Any] = field(default_factory=dict)


def make_table(n: int, dim: int, *, seed: int, start: int = 0) -> pa.Table:
    """``n`` rows: string ids ``r{start+i}``, float32 vectors, and two metadata columns."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    flat = pa.array(vectors.reshape(-1), type=pa.float32())
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int32))
    return pa.table(
        {
            "id": [f"r{start + i}" for i in range(n)],
            "values": pa.ListArray.from_arrays(offsets, flat),
            "title": [f"title {start + i}" for i in range(n)],
            "rank": [start + i for i in range(n)],
        }
    )


class BackendContract:
    """Every backend: round trip, upsert replaces, empty input, small batches, bad rows reported,
    the same id twice in one write, clearing (what Spark's overwrite does), and deletes in a write
    (option ``op_column``, ``Client.delete``).

    Capability flags say what a database lacks; a test that needs it skips and says so.
    """

    dim = 8
    supports_clear = True
    supports_namespaces = True
    # a delete in one namespace leaves the same id written in another (False where ids are the
    # collection's whatever the namespace: Chroma)
    deletes_by_namespace = True

    @pytest.fixture
    def target(self) -> Target:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def write(self, target: Target, data: Any, **options: Any) -> Any:
        with connect(target.uri, **{**target.options, **options}) as client:
            return client.write(data)

    def test_round_trip_is_exact(self, target: Target) -> None:
        table = make_table(40, self.dim, seed=1)
        report = self.write(target, table)
        assert report.ok, report
        assert report.written == 40
        stored = target.read_back()
        assert sorted(stored) == sorted(table.column("id").to_pylist())
        vectors = np.asarray(table.column("values").to_pylist(), dtype=np.float32)
        for i, row_id in enumerate(table.column("id").to_pylist()):
            row = stored[row_id]
            assert row.vector is not None
            np.testing.assert_array_equal(row.vector, vectors[i])
            assert row.metadata.get("title") == f"title {i}"
            assert row.metadata.get("rank") == i

    def test_upsert_replaces_by_id(self, target: Target) -> None:
        self.write(target, make_table(20, self.dim, seed=2))
        changed = make_table(20, self.dim, seed=3)
        report = self.write(target, changed)
        assert report.ok, report
        stored = target.read_back()
        assert len(stored) == 20
        expected = np.asarray(changed.column("values").to_pylist(), dtype=np.float32)
        np.testing.assert_array_equal(stored["r7"].vector, expected[7])

    def test_empty_input_writes_nothing(self, target: Target) -> None:
        report = self.write(target, make_table(0, self.dim, seed=4))
        assert report.ok and report.written == 0 and report.requests == 0

    def test_small_batches_split_and_all_land(self, target: Target) -> None:
        report = self.write(target, make_table(30, self.dim, seed=5), batch_size=7)
        assert report.ok, report
        assert report.requests >= 5
        assert len(target.read_back()) == 30

    def test_bad_rows_fail_alone(self, target: Target) -> None:
        rows = [{"id": f"g{i}", "values": [0.5] * self.dim, "title": "ok"} for i in range(10)]
        rows[3] = {"id": "short", "values": [0.5] * (self.dim - 1)}
        rows[6] = {"id": "", "values": [0.5] * self.dim}
        report = self.write(target, rows)
        assert report.written == 8
        assert sorted(report.failed_ids) == ["", "short"]
        assert set(target.read_back()) == {f"g{i}" for i in range(10)} - {"g3", "g6"}

    def test_the_same_id_twice_in_one_write_ends_with_the_last_occurrence(self, target: Target) -> None:
        rng = np.random.default_rng(10)
        vectors = rng.standard_normal((60, self.dim), dtype=np.float32)
        ids = [f"d{i % 7}" for i in range(60)]  # seven ids, each many times, in batches of five
        rows = [{"id": ids[i], "values": vectors[i], "title": f"occurrence {i}"} for i in range(60)]
        report = self.write(target, rows, batch_size=5, max_concurrency=4)
        assert report.ok and report.written == 60, report
        stored = target.read_back()
        assert sorted(stored) == [f"d{k}" for k in range(7)]
        for k in range(7):
            last = max(i for i in range(60) if ids[i] == f"d{k}")
            np.testing.assert_array_equal(stored[f"d{k}"].vector, vectors[last])
            assert stored[f"d{k}"].metadata.get("title") == f"occurrence {last}"

    def test_clear_empties_the_target_and_it_takes_writes_again(self, target: Target) -> None:
        if not self.supports_clear:
            pytest.skip("this database cannot delete a target's rows")
        self.write(target, make_table(12, self.dim, seed=6))
        assert len(target.read_back()) == 12
        with connect(target.uri, **target.options) as client:
            cleared = client.clear()
        assert cleared  # says what it cleared, for the log
        assert target.read_back() == {}
        report = self.write(target, make_table(3, self.dim, seed=7, start=100))
        assert report.ok, report
        assert sorted(target.read_back()) == ["r100", "r101", "r102"]

    def test_clear_of_a_namespace_keeps_the_others(self, target: Target) -> None:
        if not (self.supports_clear and self.supports_namespaces):
            pytest.skip("this database cannot clear one namespace")
        self.write(target, make_table(4, self.dim, seed=8), namespace="a")
        self.write(target, make_table(5, self.dim, seed=9, start=10), namespace="b")
        with connect(target.uri, **{**target.options, "namespace": "a"}) as client:
            client.clear("a")
        assert sorted(target.read_back()) == [f"r{10 + i}" for i in range(5)]

    # -- deletes ------------------------------------------------------------------------------------

    def test_deletes_in_a_write_end_as_the_last_occurrence_of_each_id_says(self, target: Target) -> None:
        """upsert→delete, delete→upsert and delete→delete of one id in one write, a delete of an id that
        is not there, and a delete whose vector is no vector, among rows that stay, in small batches."""
        self.write(target, make_table(6, self.dim, seed=11))  # r0 .. r5
        rng = np.random.default_rng(12)
        new = rng.standard_normal((3, self.dim), dtype=np.float32)
        nan = [float("nan")] * self.dim
        rows = [
            {"id": "n1", "values": new[0], "title": "fresh", "op": "upsert"},
            {"id": "r0", "op": "delete"},
            {"id": "r1", "op": "DELETE", "values": None},
            {"id": "ghost", "op": "delete"},  # never written: deleting it is no error
            {"id": "r2", "op": "Delete", "values": nan, "title": "ignored"},  # a delete reads no vector
            {"id": "n1", "op": "delete"},  # upsert → delete
            {"id": "r0", "values": new[1], "title": "back", "op": "insert"},  # delete → upsert
            {"id": "r1", "op": "delete", "values": "not a vector"},  # delete → delete
            {"id": "r5", "values": new[2], "title": "changed", "op": "update_postimage"},
        ]
        report = self.write(target, rows, op_column="op", batch_size=2, max_concurrency=4)
        assert report.ok, report
        assert (report.written, report.deleted) == (9, 6), report
        stored = target.read_back()
        assert sorted(stored) == ["r0", "r3", "r4", "r5"]
        np.testing.assert_array_equal(stored["r0"].vector, new[1])
        assert stored["r0"].metadata.get("title") == "back"
        np.testing.assert_array_equal(stored["r5"].vector, new[2])
        assert stored["r3"].metadata.get("title") == "title 3"

    def test_a_write_of_deletes_alone_and_client_delete(self, target: Target) -> None:
        self.write(target, make_table(8, self.dim, seed=13))  # r0 .. r7
        ids = pa.table({"id": ["r1", "r2", "missing"], "op": ["delete"] * 3})  # no vector column at all
        report = self.write(target, ids, op_column="op")
        assert report.ok and (report.written, report.deleted) == (3, 3), report
        with connect(target.uri, **target.options) as client:
            report = client.delete(["r3", "r3", "r4", "never"], namespace=None)
        assert report.ok and report.deleted == 4, report
        assert sorted(target.read_back()) == ["r0", "r5", "r6", "r7"]

    def test_a_delete_in_one_namespace_keeps_the_id_in_another(self, target: Target) -> None:
        if not (self.supports_namespaces and self.deletes_by_namespace):
            pytest.skip("ids here are the collection's whatever the namespace")
        self.write(target, make_table(3, self.dim, seed=14), namespace="a")  # r0 .. r2 in a
        self.write(target, make_table(2, self.dim, seed=15, start=10), namespace="b")  # r10, r11 in b
        with connect(target.uri, **{**target.options, "namespace": "b"}) as client:
            report = client.delete(["r0", "r10"], namespace="b")  # r0 is a's: it stays
        assert report.ok and report.deleted == 2, report
        stored = target.read_back()
        assert sorted(stored) == ["r0", "r1", "r11", "r2"]
