"""Several vectors a row into a real Weaviate (weaviate-server v1.35.2): named dense vectors and multi-vectors.

Every object is read back with weaviate-client v4 (``include_vector`` with the names) and compared byte for
byte, per name; ``create=true`` makes an HNSW index per name (multi-vectors with ``multivector`` on); an
existing collection is checked per name before any row is sent; bad rows fail alone with the name in the
reason; Weaviate's own refusal of one tenant's vectors lands on exactly those rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.client import resolve_options
from vectordb.connector.ids import ORIGINAL_ID_KEY, as_uuid
from vectordb.connector.planner import DriverPlan

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits

DENSE = {"title": 8, "body": 5}  # name -> dimension
MULTI = {"colbert": 4}  # name -> the length of each of its vectors
OPTIONS: dict[str, Any] = {
    "vector_columns": {"title": "title_vec", "body": "body_vec"},
    "multi_vector_columns": {"colbert": "tokens"},
}


class Rows:
    """Rows with every name: ``dense[name]`` an (n, dim) matrix, ``multi[name][i]`` row i's (k_i, dim) block."""

    def __init__(self, ids: Sequence[str], seed: int, counts: Sequence[int] | None = None) -> None:
        rng = np.random.default_rng(seed)
        n = len(ids)
        self.ids = list(ids)
        self.dense = {name: rng.standard_normal((n, dim), dtype=np.float32) for name, dim in DENSE.items()}
        counts = counts or [1 + (i * 7) % 5 for i in range(n)]
        self.multi = {
            name: [rng.standard_normal((k, dim), dtype=np.float32) for k in counts]
            for name, dim in MULTI.items()
        }

    def table(self, **columns: Any) -> pa.Table:
        """Arrow: dense names as ``fixed_size_list<float>``, multi-vectors as ``list<list<float>>`` (values
        buffer and offsets, as Spark and Parquet hand them over)."""
        out: dict[str, Any] = {"id": self.ids}
        for name, matrix in self.dense.items():
            out[f"{name}_vec"] = pa.FixedSizeListArray.from_arrays(
                pa.array(matrix.reshape(-1)), matrix.shape[1]
            )
        for blocks in self.multi.values():
            inner = pa.ListArray.from_arrays(
                np.arange(
                    0, sum(len(b) for b in blocks) * MULTI["colbert"] + 1, MULTI["colbert"], dtype=np.int32
                ),
                pa.array(np.concatenate(blocks).reshape(-1)),
            )
            outer = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int32)
            out["tokens"] = pa.ListArray.from_arrays(outer, inner)
        return pa.table({**out, **columns})

    def dicts(self) -> list[dict[str, Any]]:
        return [
            {
                "id": raw,
                "title_vec": self.dense["title"][i],
                "body_vec": self.dense["body"][i].tolist(),
                "tokens": self.multi["colbert"][i].tolist(),
            }
            for i, raw in enumerate(self.ids)
        ]

    def expected(self) -> dict[str, dict[str, bytes]]:
        """id → name → the float32 bytes Weaviate must hand back."""
        out: dict[str, dict[str, bytes]] = {}
        for i, raw in enumerate(self.ids):
            out[raw] = {name: m[i].tobytes() for name, m in self.dense.items()}
            out[raw].update({name: blocks[i].tobytes() for name, blocks in self.multi.items()})
        return out


def stored(server: WeaviateServer, name: str, tenant: str | None = None) -> dict[str, dict[str, bytes]]:
    """id → name → float32 bytes of every object, read with weaviate-client asking for each name."""
    client = server.client()
    try:
        collection = client.collections.get(name)
        view = collection.with_tenant(tenant) if tenant else collection
        out = {}
        for obj in view.iterator(include_vector=[*DENSE, *MULTI]):
            raw = str(obj.properties.get(ORIGINAL_ID_KEY) or obj.uuid)
            out[raw] = {
                key: np.asarray(value, dtype=np.float32).tobytes() for key, value in obj.vector.items()
            }
        return out
    finally:
        client.close()


def write(server: WeaviateServer, name: str, data: Any, **options: Any) -> Any:
    with connect(server.uri(name), **server.options(), **{**OPTIONS, **options}) as client:
        return client.write(data)


def count(server: WeaviateServer, name: str) -> int:
    client = server.client()
    try:
        if not client.collections.exists(name):
            return -1
        return client.collections.get(name).aggregate.over_all(total_count=True).total_count or 0
    finally:
        client.close()


def test_create_makes_every_name_and_each_reads_back_exactly(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    rows = Rows([f"r{i}" for i in range(40)], seed=1)
    report = write(
        weaviate_server, weaviate_collection, rows.table(n=list(range(40))), create=True, metric="dotproduct"
    )
    assert report.ok and report.written == 40, report
    client = weaviate_server.client()
    try:
        config = client.collections.get(weaviate_collection).config.get()
    finally:
        client.close()
    vectors = config.vector_config or {}
    assert set(vectors) == {"title", "body", "colbert"}
    for name, vector in vectors.items():
        index = vector.vector_index_config
        assert index is not None and index.distance_metric.value == "dot", name  # type: ignore[union-attr]
        multi = index.multi_vector  # type: ignore[union-attr]  # None where multivector is off
        if name == "colbert":
            assert multi is not None and multi.aggregation == "maxSim", name
        else:
            assert multi is None, name
        assert vector.vectorizer.vectorizer.value == "none"
    assert stored(weaviate_server, weaviate_collection) == rows.expected()

    # a second write, from dicts (Python lists and numpy), replaces each object's vectors by id
    again = Rows(rows.ids[:10], seed=2)
    assert write(weaviate_server, weaviate_collection, again.dicts()).written == 10
    want = {**rows.expected(), **again.expected()}
    assert (
        stored(weaviate_server, weaviate_collection) == want
        and count(weaviate_server, weaviate_collection) == 40
    )


def test_rows_in_batches_and_chunks_keep_their_own_vectors(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """Requests cut out of one Arrow buffer (slices whose offsets start past 0), several chunks, four in flight."""
    rows = Rows([f"b{i}" for i in range(500)], seed=3, counts=[1 + (i * 13) % 9 for i in range(500)])
    table = rows.table()
    report = write(
        weaviate_server,
        weaviate_collection,
        table.to_batches(max_chunksize=170),
        create=True,
        batch_size=33,
        max_concurrency=4,
    )
    assert report.ok and report.written == 500 and report.requests >= 16, report
    assert stored(weaviate_server, weaviate_collection) == rows.expected()


def _create(server: WeaviateServer, name: str, vectors: dict[str, bool], **extra: Any) -> None:
    config = {
        vector: {
            "vectorizer": {"none": {}},
            "vectorIndexType": "hnsw",
            "vectorIndexConfig": {"multivector": {"enabled": True}} if multi else {},
        }
        for vector, multi in vectors.items()
    }
    body = {"class": name, "vectorConfig": config, **extra}
    made = server.rest("POST", "/v1/schema", json=body)
    assert made.status_code == 200, made.text


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        (
            {"title": False, "colbert": True},
            r"option vector_columns: collection '\w+' has no vector 'body' \(it has \['colbert', 'title'\]\)",
        ),
        (
            {"title": False, "body": True, "colbert": True},
            r"option vector_columns: vector 'body' of collection '\w+' has a multi-vector index \(multivector "
            r"enabled\); write it with option multi_vector_columns",
        ),
        (
            {"title": False, "body": False, "colbert": False},
            r"option multi_vector_columns: vector 'colbert' of collection '\w+' has a single-vector index; "
            r"write it with option vector_columns",
        ),
        ({}, r"option vector_columns: collection '\w+' has one unnamed vector and no named vectors"),
    ],
)
def test_an_existing_collection_is_checked_per_name_before_any_row(
    weaviate_server: WeaviateServer, weaviate_collection: str, vectors: dict[str, bool], message: str
) -> None:
    if vectors:
        _create(weaviate_server, weaviate_collection, vectors)
    else:
        _create(weaviate_server, weaviate_collection, {}, vectorizer="none")
    rows = Rows(["x", "y"], seed=4)
    for create in (False, True):  # create=true changes nothing of a collection that exists
        with pytest.raises(ConfigError, match=message):
            write(weaviate_server, weaviate_collection, rows.table(), create=create)
    assert count(weaviate_server, weaviate_collection) == 0


def test_a_missing_collection_without_create(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    with pytest.raises(ConfigError, match="does not exist \\(option create=true makes it\\)"):
        write(weaviate_server, weaviate_collection, Rows(["x"], seed=5).table())
    assert count(weaviate_server, weaviate_collection) == -1


def test_stored_objects_fix_each_names_dimension(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """Weaviate's schema holds no dimension: each name's comes from a stored object. A stated one that differs
    is a ConfigError before any row; rows of another length fail alone, before sending."""
    assert write(weaviate_server, weaviate_collection, Rows(["s"], seed=6).table(), create=True).ok
    with pytest.raises(
        ConfigError, match=r"option vector_dimensions: .* holds 'colbert' vectors of dimension 4, not 3"
    ):
        write(
            weaviate_server,
            weaviate_collection,
            Rows(["x"], seed=7).table(),
            vector_dimensions={"colbert": 3},
        )
    rows = [
        {"id": f"g{i}", "title_vec": [0.5] * 8, "body_vec": [0.25] * 5, "tokens": [[1.0] * 4, [2.0] * 4]}
        for i in range(6)
    ]
    rows[1]["body_vec"] = [0.25] * 6
    rows[2]["tokens"] = [[1.0] * 3]
    report = write(weaviate_server, weaviate_collection, rows, on_error="report")
    assert report.written == 4 and sorted(report.failed_ids) == ["g1", "g2"], report
    assert {f.ids: (f.error_type, f.attempts, f.error) for f in report.failures} == {
        ("g1",): ("Invalid", 0, "vector 'body' has 6 dimensions; expected 5"),
        ("g2",): ("Invalid", 0, "multi-vector 'colbert' holds 3-dimensional vectors; expected 4"),
    }
    assert set(stored(weaviate_server, weaviate_collection)) == {"s", "g0", "g3", "g4", "g5"}


def test_bad_rows_fail_alone_with_the_name(weaviate_server: WeaviateServer, weaviate_collection: str) -> None:
    good = Rows([f"k{i}" for i in range(8)], seed=8)
    rows = good.dicts()
    rows[1]["title_vec"] = None
    rows[2]["tokens"] = []
    rows[3]["tokens"] = [[1.0, 2.0, 3.0, 4.0], [1.0, 2.0]]
    rows[4]["body_vec"] = [float("nan")] * 5
    rows[5]["tokens"] = [[1.0, 2.0, float("inf"), 4.0]]
    report = write(
        weaviate_server,
        weaviate_collection,
        rows,
        create=True,
        vector_dimensions={"title": 8, "body": 5, "colbert": 4},
        on_error="report",
    )
    assert report.written == 3 and sorted(report.failed_ids) == ["k1", "k2", "k3", "k4", "k5"], report
    assert {f.ids[0]: f.error for f in report.failures} == {
        "k1": "vector 'title' is null",
        "k2": "multi-vector 'colbert' is empty",
        "k3": "multi-vector 'colbert' holds vectors of different lengths (2 to 4)",
        "k4": "vector 'body' (column 'body_vec') has NaN or infinity at index 0",
        "k5": "multi-vector 'colbert' (column 'tokens'): vector 0 has NaN or infinity at index 2",
    }
    assert all(f.error_type == "Invalid" and f.attempts == 0 for f in report.failures)
    expected = good.expected()
    assert stored(weaviate_server, weaviate_collection) == {k: expected[k] for k in ("k0", "k6", "k7")}


def test_weaviates_own_refusal_of_a_tenants_vectors_fails_those_rows(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """Tenants per row: each tenant has its own indexes, whose dimensions the connector cannot learn up front.
    Tenant ``a`` holds colbert vectors of 4; rows for ``a`` with vectors of 3 come back refused by Weaviate, by
    index, with its reason naming the vector; the rows for tenant ``b`` (a fresh index) are written."""
    first = Rows(["a0", "a1"], seed=9)
    report = write(
        weaviate_server,
        weaviate_collection,
        first.table(team=["a", "a"]),
        create=True,
        namespace_column="team",
    )
    assert report.ok, report
    rows = [
        {
            "id": f"x{i}",
            "team": "a" if i % 2 else "b",
            "title_vec": [0.5] * 8,
            "body_vec": [0.25] * 5,
            "tokens": [[0.125 * i] * 3, [1.0] * 3],
        }
        for i in range(6)
    ]
    report = write(weaviate_server, weaviate_collection, rows, namespace_column="team", on_error="report")
    assert report.written == 3 and sorted(report.failed_ids) == ["x1", "x3", "x5"], report
    for failure in report.failures:
        (raw,) = failure.ids
        assert failure.error_type == "Rejected" and failure.attempts == 1
        assert failure.error == (
            f"Validate vector index colbert for target multi vector {as_uuid(raw)}: new node has a multi vector "
            "with length 3 at position 0. Existing nodes have vectors with length 4"
        )
    assert set(stored(weaviate_server, weaviate_collection, "b")) == {"x0", "x2", "x4"}
    assert stored(weaviate_server, weaviate_collection, "a") == first.expected()


def test_deletes_and_clear_with_named_vectors(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """A write with named vectors deletes by id (no vectors needed) and clears the collection it checks per name."""
    rows = Rows([f"d{i}" for i in range(6)], seed=13)
    assert write(weaviate_server, weaviate_collection, rows.table(), create=True).written == 6
    with connect(weaviate_server.uri(weaviate_collection), **weaviate_server.options(), **OPTIONS) as client:
        report = client.delete(["d1", "d4", "missing"])
        assert report.ok and report.deleted == 3, report
        assert set(stored(weaviate_server, weaviate_collection)) == {"d0", "d2", "d3", "d5"}
        assert client.clear().startswith("4 objects in weaviate://")
    assert count(weaviate_server, weaviate_collection) == 0


def test_a_write_naming_only_some_of_the_vectors_is_refused(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """Weaviate replaces an object whole on upsert: a write naming only ``title`` would erase each object's
    ``body`` and ``colbert``. It is a ConfigError before any row, naming the vectors it leaves out."""
    rows = Rows(["a", "b"], seed=14)
    assert write(weaviate_server, weaviate_collection, rows.table(), create=True).written == 2
    only_title = pa.table({"id": ["a"], "title_vec": pa.array([[9.0] * 8], pa.list_(pa.float32()))})
    message = (
        r"option vector_columns: collection '\w+' also has the vector\(s\) 'body' \(vector_columns\), "
        r"'colbert' \(multi_vector_columns\), which this write does not name; Weaviate replaces an object "
        r"whole on upsert, so every object written would lose them"
    )
    with pytest.raises(ConfigError, match=message):
        write(
            weaviate_server,
            weaviate_collection,
            only_title,
            vector_columns={"title": "title_vec"},
            multi_vector_columns=None,
        )
    assert stored(weaviate_server, weaviate_collection) == rows.expected()


def test_each_names_dimension_is_learnt_from_an_object_that_holds_it(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """Objects another client wrote with ``colbert`` only come first (in UUID order, and in the order they
    were written); the one object holding ``title`` and ``body`` comes after them. Each name's dimension is
    learnt from an object that holds it, so the rows of the index's length are written and the others fail
    before sending (with the first object alone, ``title`` was learnt from the rows: 9 by majority, and
    every row failed)."""
    _create(weaviate_server, weaviate_collection, {"title": False, "body": False, "colbert": True})
    client = weaviate_server.client()
    try:
        collection = client.collections.get(weaviate_collection)
        for i in range(15):  # colbert only, UUIDs below every other object's
            uid = f"00000000-0000-4000-8000-{i:012d}"
            collection.data.insert({}, uuid=uid, vector={"colbert": [[1.0] * 4]})
    finally:
        client.close()
    assert write(weaviate_server, weaviate_collection, Rows(["seed"], seed=15).table()).ok
    rows = Rows(["w0", "w1", "w2", "ok"], seed=16)
    title = [[1.0] * 9] * 3 + [rows.dense["title"][3].tolist()]
    table = rows.table().set_column(1, "title_vec", pa.array(title, pa.list_(pa.float32())))
    report = write(weaviate_server, weaviate_collection, table, on_error="report")
    assert report.written == 1 and sorted(report.failed_ids) == ["w0", "w1", "w2"], report
    assert {f.error for f in report.failures} == {"vector 'title' has 9 dimensions; expected 8"}
    assert stored(weaviate_server, weaviate_collection)["ok"] == rows.expected()["ok"]


def test_a_delete_before_any_upsert_makes_the_collection(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """create=true, no vector_dimensions: Weaviate's schema needs no dimension, so the collection is made at
    once and a delete that comes first succeeds (an id that is not there is no error); the upserts after it
    learn each name's dimension from their rows."""
    with connect(
        weaviate_server.uri(weaviate_collection), **weaviate_server.options(), create=True, **OPTIONS
    ) as client:
        report = client.delete(["z"])
        assert report.ok and report.deleted == 1 and report.retries == 0, report
        assert count(weaviate_server, weaviate_collection) == 0
        rows = Rows(["a", "b"], seed=17)
        assert client.write(rows.table()).written == 2
    assert stored(weaviate_server, weaviate_collection) == rows.expected()


def test_multi_vectors_longer_than_weaviate_frames_fail_their_rows(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """A multi-vector's length goes as a uint16: rows whose vectors are learnt as 65,536 floats long fail,
    naming the vector, instead of the encoder raising a bare ValueError that stopped the write."""
    _create(weaviate_server, weaviate_collection, {"title": False, "body": False, "colbert": True})
    rows = Rows(["h0", "h1"], seed=18).dicts()
    for row in rows:
        row["tokens"] = [[0.5] * 65_536]
    report = write(weaviate_server, weaviate_collection, rows, on_error="report")
    assert report.written == 0 and sorted(report.failed_ids) == ["h0", "h1"], report
    assert {(f.error_type, f.error) for f in report.failures} == {
        (
            "Invalid",
            "multi-vector 'colbert' holds vectors of 65,536 floats; Weaviate's multi-vectors hold vectors "
            "of 1 to 65,535 (their length is sent as a uint16)",
        )
    }
    assert count(weaviate_server, weaviate_collection) == 0


def test_the_single_vector_into_a_collection_with_more_names_is_refused(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """``vector_name`` writes one named vector; Weaviate would erase the object's others. Its upserts are a
    ConfigError before any row is sent: without op_column when the target is checked (on a job's driver,
    ``DriverPlan.ask_target``, before any task), with it at the first upsert batch. A delete with the same
    options and op_column still works (it erases no vector)."""
    rows = Rows(["a", "b"], seed=19)
    assert write(weaviate_server, weaviate_collection, rows.table(), create=True).written == 2
    single = {"vector_name": "title", "vector_columns": None, "multi_vector_columns": None}
    values = pa.array([[9.0] * 8], pa.list_(pa.float32()))
    with pytest.raises(
        ConfigError,
        match=r"option vector_name: collection '\w+' also has the vector\(s\) 'body' \(vector_columns\), "
        r"'colbert' \(multi_vector_columns\), which this write does not name",
    ):
        write(weaviate_server, weaviate_collection, pa.table({"id": ["a"], "values": values}), **single)
    assert stored(weaviate_server, weaviate_collection) == rows.expected()
    uri = weaviate_server.uri(weaviate_collection)
    raw = {"uri": uri, **weaviate_server.options(), "vector_name": "title"}
    # before the fix the driver let it through, and the first upsert batch on an executor raised
    with DriverPlan(resolve_options(raw)) as plan, pytest.raises(ConfigError, match="also has the vector"):
        plan.ask_target()
    with pytest.raises(ConfigError, match="also has the vector"):
        write(
            weaviate_server,
            weaviate_collection,
            pa.table({"id": ["a"], "values": values, "op": ["upsert"]}),
            op_column="op",
            **single,
        )
    assert stored(weaviate_server, weaviate_collection) == rows.expected()
    with connect(uri, **weaviate_server.options(), vector_name="title", op_column="op") as client:
        assert client.delete(["b"]).deleted == 1
    assert set(stored(weaviate_server, weaviate_collection)) == {"a"}
