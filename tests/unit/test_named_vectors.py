"""Several vectors a row: the options, the readers' checks per name, zero-copy buffers, the backends' declared
support, and dead letters."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vectordb.connector import ConfigError
from vectordb.connector.backends.base import Backend, check_vector_support
from vectordb.connector.backends.registry import backend_class
from vectordb.connector.client import Client, connect, resolve_options
from vectordb.connector.dead_letters import dead_letters
from vectordb.connector.rows import (
    ColumnSpec,
    DimensionState,
    RowBatch,
    RowRules,
    prepare_arrow,
    prepare_dicts,
)
from vectordb.connector.rows.types import MultiVectors, ranges

RULES = RowRules()
QDRANT = "qdrant://127.0.0.1:6333/docs"
SPEC = ColumnSpec(vector_columns=(("title", "title_vec"),), multi_vector_columns=(("colbert", "tokens"),))
F32_MULTI = pa.list_(pa.list_(pa.float32()))


def dims(**named: int | None) -> DimensionState:
    return DimensionState(named=named)


def reasons(prepared) -> dict[str, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


# -- options ------------------------------------------------------------------------------------------


def test_options_read_as_names_and_columns_from_strings_and_dicts():
    spark = resolve_options(
        {
            "uri": QDRANT,
            "vector_columns": "title:title_vec, body:body_vec",
            "multi_vector_columns": "colbert:tokens",
            "vector_dimensions": "title:4,colbert:2",
        }
    )
    assert spark.vector_columns == {"title": "title_vec", "body": "body_vec"}
    assert spark.multi_vector_columns == {"colbert": "tokens"}
    assert spark.vector_dimensions == {"title": 4, "colbert": 2}
    python = resolve_options({"uri": QDRANT, "vector_columns": {"title": "title_vec"}})
    assert python.vector_columns == {"title": "title_vec"}
    bare = resolve_options({"uri": QDRANT, "multi_vector_columns": "tokens"})
    assert bare.multi_vector_columns == {"tokens": "tokens"}  # a bare column is named after itself


def test_single_vector_options_unchanged():
    options = resolve_options({"uri": QDRANT, "vector_column": "emb", "dimension": "4"})
    assert options.vector_columns is None and options.multi_vector_columns is None
    assert (options.vector_column, options.dimension) == ("emb", 4)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"vector_columns": "t:a,t:b"}, "option vector_columns: name 't' is given twice"),
        ({"vector_columns": "t:a,u:a"}, "option vector_columns: column 'a' is read twice"),
        (
            {"vector_columns": "t:a", "multi_vector_columns": "t:b"},
            "multi_vector_columns: name 't' is also given",
        ),
        (
            {"vector_columns": "t:a", "multi_vector_columns": "u:a"},
            "multi_vector_columns: column 'a' is read twice",
        ),
        (
            {"vector_columns": "t:a", "vector_column": "values"},
            "options vector_column and vector_columns exclude",
        ),
        (
            {"multi_vector_columns": "c:a", "vector_column": "x"},
            "vector_column and multi_vector_columns exclude",
        ),
        ({"vector_columns": "t:a", "dimension": 4}, "option dimension: .*vector_dimensions"),
        (
            {"vector_columns": "title:a", "vector_dimensions": "titel:4"},
            "vector_dimensions: .*did you mean 'title'",
        ),
        ({"vector_dimensions": "t:4"}, "option vector_dimensions: .*neither is given"),
        ({"vector_columns": "t:id"}, "option id_column: column 'id' is also a vector"),
        (
            {"vector_columns": "t:a", "metadata_columns": "a,b"},
            "option metadata_columns: column 'a' is a vector",
        ),
        ({"vector_columns": "t:"}, "option vector_columns: 't:' is not name:value"),
        ({"vector_colums": "t:a"}, "unknown option 'vector_colums' \\(did you mean 'vector_columns'\\?\\)"),
        ({"multi_vector_column": "t:a"}, "did you mean 'multi_vector_columns'"),
        (
            {"vector_columns": "t:a", "embed_url": "http://127.0.0.1:1/v1", "embed_model": "m"},
            "option embed_url: .*not named vectors",
        ),
    ],
)
def test_contradictions_name_the_option(raw, message):
    with pytest.raises(ConfigError, match=message):
        resolve_options({"uri": QDRANT, **raw})


# -- the backends' declared support -----------------------------------------------------------------

ONE_VECTOR = [
    ("pinecone", {"uri": "pinecone+grpc://127.0.0.1:5081", "api_key": "k"}),
    ("pinecone", {"uri": "pinecone://127.0.0.1:5081", "api_key": "k"}),
    (
        "pinecone",
        {
            "uri": "pinecone://127.0.0.1:5081",
            "api_key": "k",
            "write_mode": "import",
            "import_uri": "s3://b/p",
        },
    ),
    ("chroma", {"uri": "chroma://127.0.0.1:8000/docs"}),
]


@pytest.mark.parametrize(("database", "raw"), ONE_VECTOR)
@pytest.mark.parametrize(
    ("option", "value"), [("vector_columns", "title:title_vec"), ("multi_vector_columns", "colbert:tokens")]
)
def test_one_vector_databases_refuse_before_any_row(database, raw, option, value, monkeypatch):
    def no_connection(self):
        raise AssertionError("a connection was opened")

    monkeypatch.setattr(backend_class(database), "open_transport", no_connection)
    with pytest.raises(ConfigError, match=f"option {option}: {database} stores one dense vector a record"):
        connect(**raw, **{option: value})


@pytest.mark.parametrize("database", ["pinecone", "chroma"])
def test_one_vector_databases_declare_no(database):
    cls = backend_class(database)
    assert (cls.named_vectors, cls.multi_vectors) == ("no", "no")


@pytest.mark.parametrize(
    ("uri", "database"),
    [
        ("milvus://127.0.0.1:19530/docs", "milvus"),
        ("postgresql://u@127.0.0.1:5432/db?table=docs", "postgresql"),
    ],
)
def test_databases_without_a_multi_vector_type_say_why(uri, database):
    with pytest.raises(
        ConfigError, match=f"option multi_vector_columns: {database} does not store multi-vectors: "
    ):
        connect(uri, multi_vector_columns="colbert:tokens")
    connect(uri, vector_columns="title:t").close()  # named dense vectors still go


def test_every_backend_declares_a_known_support():
    from vectordb.connector.backends.registry import backends

    for name in backends():
        cls = backend_class(name)
        assert cls.named_vectors in ("yes", "not yet", "no"), name
        assert cls.multi_vectors in ("yes", "not yet", "no"), name
        if "yes" in (cls.named_vectors, cls.multi_vectors):
            assert cls.check_named_target is not Backend.check_named_target, name


def test_check_vector_support_lets_yes_through(monkeypatch):
    qdrant = backend_class("qdrant")
    monkeypatch.setattr(qdrant, "named_vectors", "yes")
    monkeypatch.setattr(qdrant, "multi_vectors", "not yet")
    options = resolve_options({"uri": QDRANT, "vector_columns": "title:title_vec"})
    check_vector_support(qdrant(options), options)  # no error
    both = resolve_options({"uri": QDRANT, "vector_columns": "t:a", "multi_vector_columns": "c:b"})
    with pytest.raises(ConfigError, match="option multi_vector_columns"):
        check_vector_support(qdrant(both), both)


# -- the client's driver rule per name ---------------------------------------------------------------


def _supporting_qdrant(monkeypatch, fixed: dict[str, int]) -> list[dict]:
    qdrant = backend_class("qdrant")
    seen: list[dict] = []

    def check_named_target(self, transport, dimensions):
        seen.append(dict(dimensions))
        return fixed

    monkeypatch.setattr(qdrant, "named_vectors", "yes")
    monkeypatch.setattr(qdrant, "multi_vectors", "yes")
    monkeypatch.setattr(qdrant, "open_transport", lambda self: object())
    monkeypatch.setattr(qdrant, "check_named_target", check_named_target)
    return seen


def test_prepare_target_needs_every_dimension_to_create(monkeypatch):
    seen = _supporting_qdrant(monkeypatch, fixed={})
    raw = {"uri": QDRANT, "vector_columns": "title:t", "multi_vector_columns": "colbert:c", "create": "true"}
    with pytest.raises(ConfigError, match=r"option vector_dimensions: .*'colbert'"):
        Client(resolve_options({**raw, "vector_dimensions": "title:4"})).prepare_target()
    assert seen == [{"title": 4, "colbert": None}]
    prepared = Client(resolve_options({**raw, "vector_dimensions": "title:4,colbert:2"})).prepare_target()
    assert prepared.resolved["vector_dimensions"] == {"title": 4, "colbert": 2}


def test_prepare_target_hands_the_targets_dimensions_to_workers(monkeypatch):
    _supporting_qdrant(monkeypatch, fixed={"title": 8, "colbert": 2})
    client = Client(
        resolve_options({"uri": QDRANT, "vector_columns": "title:t", "multi_vector_columns": "colbert:c"})
    )
    resolved = client.prepare_target().resolved
    assert resolved["vector_dimensions"] == {"title": 8, "colbert": 2}
    assert "dimension" not in resolved
    worker = resolve_options(
        {"uri": QDRANT, "vector_columns": "title:t", "multi_vector_columns": "colbert:c", **resolved}
    )
    assert worker.vector_dimensions == {"title": 8, "colbert": 2}


def test_rows_learn_each_name_and_the_target_decides(monkeypatch):
    seen = _supporting_qdrant(monkeypatch, fixed={"title": 3})
    client = Client(
        resolve_options({"uri": QDRANT, "vector_columns": "title:t", "multi_vector_columns": "colbert:c"})
    )
    rows = [
        {"id": "a", "t": [1.0, 2.0, 3.0], "c": [[1.0, 2.0]]},
        {"id": "b", "t": [1.0, 2.0], "c": [[1.0, 2.0], [3.0, 4.0]]},
        {"id": "c", "t": [1.0, 2.0], "c": [[1.0, 2.0, 3.0]]},
        {"id": "d", "t": [1.0, 2.0, 3.0], "c": [[1.0, 2.0, 3.0]]},
    ]
    refused: list = []
    batches = list(client.batches(rows, None, refused))
    assert seen == [
        {"title": 2, "colbert": 2}
    ]  # learnt from the rows (a tie: the smaller), all names at once
    assert [b.ids for b in batches] == [["a"]]  # the target's title is 3 long
    assert {i: f.error for f in refused for i in f.ids} == {
        "b": "vector 'title' has 2 dimensions; expected 3",
        "c": "vector 'title' has 2 dimensions; expected 3; "
        "multi-vector 'colbert' holds 3-dimensional vectors; expected 2",
        "d": "multi-vector 'colbert' holds 3-dimensional vectors; expected 2",
    }


# -- reading: zero copy ----------------------------------------------------------------------------


def _multi_array(rows: list, kind: str, dim: int) -> pa.Array:
    inner = pa.list_(pa.float32(), dim) if kind.startswith("fixed") else pa.list_(pa.float32())
    if kind == "large":
        typ = pa.large_list(inner)
    elif kind == "fixed_fixed":
        typ = pa.list_(inner, len(rows[0]))
    else:
        typ = pa.list_(inner)
    return pa.array(rows, type=typ)


def _values_buffer(array: pa.Array) -> np.ndarray:
    values = array.values.values
    return np.frombuffer(values.buffers()[1], dtype=np.float32)


@pytest.mark.parametrize("kind", ["list", "large", "fixed_inner", "fixed_fixed"])
def test_multi_vectors_are_the_arrow_values_buffer(kind):
    rng = np.random.default_rng(7)
    rows = [rng.standard_normal((2, 3)).astype(np.float32).tolist() for _ in range(5)]
    column = _multi_array(rows, kind, 3)
    table = pa.table(
        {
            "id": [f"r{i}" for i in range(5)],
            "tokens": column,
            "title_vec": pa.array([[1.0, 2.0]] * 5, pa.list_(pa.float32())),
        }
    )
    (batch,) = prepare_arrow(table, SPEC, RULES, dims(title=None, colbert=None)).batches
    multi = batch.multi_vectors["colbert"]
    assert np.shares_memory(multi.values, _values_buffer(column))
    assert np.shares_memory(
        batch.named_vectors["title"],
        np.frombuffer(table.column("title_vec").chunk(0).values.buffers()[1], dtype=np.float32),
    )
    assert multi.values.dtype == np.float32 and multi.values.flags.c_contiguous
    for i, row in enumerate(rows):
        assert np.array_equal(multi.row(i), np.asarray(row, dtype=np.float32))
    # a slice of the batch still shares the buffer
    assert np.shares_memory(batch.slice(1, 3).multi_vectors["colbert"].block(0, 2), _values_buffer(column))


def test_a_sliced_arrow_column_reads_only_its_rows_zero_copy():
    rows = [[[float(i), float(i) + 0.5]] * (1 + i % 3) for i in range(10)]
    column = pa.array(rows, type=F32_MULTI)
    table = pa.table({"id": [str(i) for i in range(10)], "tokens": column}).slice(3, 4)
    spec = ColumnSpec(multi_vector_columns=(("colbert", "tokens"),))
    (batch,) = prepare_arrow(table, spec, RULES, dims(colbert=None)).batches
    multi = batch.multi_vectors["colbert"]
    assert batch.ids == ["3", "4", "5", "6"]
    assert np.shares_memory(multi.values, _values_buffer(column))
    for k, i in enumerate(range(3, 7)):
        assert np.array_equal(multi.row(k), np.asarray(rows[i], dtype=np.float32))


def test_float64_multi_vectors_are_converted_once():
    column = pa.array([[[0.1, 0.2]], [[0.3, 0.4], [0.5, 0.6]]], type=pa.list_(pa.list_(pa.float64())))
    table = pa.table({"id": ["a", "b"], "tokens": column})
    spec = ColumnSpec(multi_vector_columns=(("colbert", "tokens"),))
    (batch,) = prepare_arrow(table, spec, RULES, dims(colbert=None)).batches
    expected = np.asarray([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], dtype=np.float32)
    assert np.array_equal(batch.multi_vectors["colbert"].values, expected)
    assert batch.multi_vectors["colbert"].counts().tolist() == [1, 2]


def test_a_column_of_the_wrong_type_is_a_config_error_naming_the_option():
    table = pa.table({"id": ["a"], "tokens": pa.array([[1.0, 2.0]], pa.list_(pa.float32()))})
    spec = ColumnSpec(multi_vector_columns=(("colbert", "tokens"),))
    with pytest.raises(ConfigError, match="option multi_vector_columns: column 'tokens' has type"):
        prepare_arrow(table, spec, RULES, dims(colbert=None))
    with pytest.raises(ConfigError, match="option vector_columns: no column 'title_vec'"):
        prepare_arrow(table, SPEC, RULES, dims(title=None, colbert=None))


# -- checks: exactly the bad rows, the name in the reason ------------------------------------------

DIM = 3


@st.composite
def multi_rows(draw):
    """Rows of one multi-vector each, with their expected reason (``None``: good)."""
    n = draw(st.integers(1, 12))
    rows, expected = [], []
    for _ in range(n):
        kind = draw(
            st.sampled_from(["good", "good", "good", "null", "empty", "ragged", "short", "nan", "hole"])
        )
        k = draw(st.integers(1, 4))
        floats = st.floats(-1e6, 1e6, width=32, allow_nan=False)
        vectors = [[draw(floats) for _ in range(DIM)] for _ in range(k)]
        reason = None
        if kind == "null":
            vectors, reason = None, "multi-vector 'colbert' is null"
        elif kind == "empty":
            vectors, reason = [], "multi-vector 'colbert' is empty"
        elif kind == "ragged":
            vectors.append([1.0] * (DIM + draw(st.sampled_from([-1, 1]))))
            reason = "multi-vector 'colbert' holds vectors of different lengths"
        elif kind == "short":
            vectors = [v[:-1] for v in vectors]
            reason = "multi-vector 'colbert' holds 2-dimensional vectors; expected 3"
        elif kind == "nan":
            j, d = draw(st.integers(0, k - 1)), draw(st.integers(0, DIM - 1))
            vectors[j][d] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
            reason = f"multi-vector 'colbert' (column 'tokens'): vector {j} has NaN or infinity at index {d}"
        elif kind == "hole":
            vectors.insert(draw(st.integers(0, k)), None)
            reason = "multi-vector 'colbert' holds a null vector"
        rows.append(vectors)
        expected.append(reason)
    return rows, expected


def _check(prepared, rows, expected):
    got = reasons(prepared)
    want = {f"r{i}": reason for i, reason in enumerate(expected) if reason is not None}
    assert set(got) == set(want)
    for row_id, reason in want.items():
        assert got[row_id].startswith(reason), (got[row_id], reason)
    kept = [b for b in prepared.batches]
    good = [i for i, reason in enumerate(expected) if reason is None]
    assert [i for b in kept for i in b.ids] == [f"r{i}" for i in good]
    for batch in kept:
        multi = batch.multi_vectors["colbert"]
        for k, row_id in enumerate(batch.ids):
            want_bits = np.asarray(rows[int(row_id[1:])], dtype=np.float32).view(np.uint32)
            assert np.array_equal(multi.row(k).view(np.uint32), want_bits)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=multi_rows(), kind=st.sampled_from(["list", "large"]))
def test_arrow_multi_vector_checks_refuse_exactly_the_bad_rows(case, kind):
    rows, expected = case
    inner = pa.list_(pa.float32())
    typ = pa.large_list(inner) if kind == "large" else pa.list_(inner)
    table = pa.table({"id": [f"r{i}" for i in range(len(rows))], "tokens": pa.array(rows, type=typ)})
    spec = ColumnSpec(multi_vector_columns=(("colbert", "tokens"),))
    _check(prepare_arrow(table, spec, RULES, dims(colbert=DIM)), rows, expected)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=multi_rows(), as_numpy=st.booleans())
def test_dict_multi_vector_checks_refuse_exactly_the_bad_rows(case, as_numpy):
    rows, expected = case

    def value(vectors):
        if as_numpy and vectors and all(v is not None and len(v) == len(vectors[0]) for v in vectors):
            return np.asarray(vectors, dtype=np.float32)  # a 2-d array: one block
        return vectors

    records = [{"id": f"r{i}", "tokens": value(v)} for i, v in enumerate(rows)]
    spec = ColumnSpec(multi_vector_columns=(("colbert", "tokens"),))
    _check(prepare_dicts(records, spec, RULES, dims(colbert=DIM)), rows, expected)


@settings(max_examples=100, deadline=None)
@given(
    data=st.lists(
        st.tuples(
            st.sampled_from(["good", "null", "short", "nan"]),
            st.sampled_from(["good", "null", "short", "nan"]),
        ),
        min_size=1,
        max_size=10,
    ),
    arrow=st.booleans(),
)
def test_named_dense_checks_fail_the_row_under_its_name(data, arrow):
    def vector(kind: str, seed: int) -> list[float] | None:
        values = [float(seed) + 0.25 * d for d in range(4)]
        if kind == "null":
            return None
        if kind == "short":
            return values[:3]
        if kind == "nan":
            values[seed % 4] = math.nan
        return values

    spec = ColumnSpec(vector_columns=(("title", "t"), ("body", "b")))
    records = [{"id": f"r{i}", "t": vector(t, i), "b": vector(b, i + 1)} for i, (t, b) in enumerate(data)]
    if arrow:
        table = pa.table(
            {
                "id": [r["id"] for r in records],
                "t": pa.array([r["t"] for r in records], pa.list_(pa.float32())),
                "b": pa.array([r["b"] for r in records], pa.list_(pa.float32())),
            }
        )
        prepared = prepare_arrow(table, spec, RULES, dims(title=4, body=4))
    else:
        prepared = prepare_dicts(records, spec, RULES, dims(title=4, body=4))
    got = reasons(prepared)
    for i, (t, b) in enumerate(data):
        bad = [name for name, kind in (("title", t), ("body", b)) if kind != "good"]
        if not bad:
            assert f"r{i}" not in got
        else:
            assert any(repr(name) in got[f"r{i}"] for name in bad), got[f"r{i}"]
    for batch in prepared.batches:
        for k, row_id in enumerate(batch.ids):
            i = int(row_id[1:])
            assert (
                batch.named_vectors["title"][k].tobytes()
                == np.asarray(vector("good", i), np.float32).tobytes()
            )
            assert (
                batch.named_vectors["body"][k].tobytes()
                == np.asarray(vector("good", i + 1), np.float32).tobytes()
            )


def test_each_name_learns_its_own_dimension_by_the_rule():
    rows = [
        {"id": f"r{i}", "title_vec": [1.0] * (4 if i else 5), "tokens": [[0.5, 0.5]] * (i + 1)}
        for i in range(3)
    ]
    dim = dims(title=None, colbert=None)
    prepared = prepare_dicts(rows, SPEC, RULES, dim)
    assert dim.named == {"title": 4, "colbert": 2}
    assert reasons(prepared) == {"r0": "vector 'title' has 5 dimensions; expected 4"}


def test_deletes_need_no_vectors():
    spec = ColumnSpec(
        vector_columns=(("title", "t"),), multi_vector_columns=(("colbert", "c"),), op_column="op"
    )
    table = pa.table(
        {
            "id": ["a", "b"],
            "op": ["delete", "upsert"],
            "t": pa.array([None, [1.0, 2.0]], pa.list_(pa.float32())),
            "c": pa.array([None, [[1.0]]], F32_MULTI),
        }
    )
    prepared = prepare_arrow(table, spec, RULES, dims(title=None, colbert=None))
    assert not prepared.failures
    ops = {b.op: b for b in prepared.batches}
    assert ops["delete"].ids == ["a"] and not ops["delete"].named_vectors
    assert ops["upsert"].named_vectors["title"].tolist() == [[1.0, 2.0]]
    only_deletes = pa.table({"id": ["x"], "op": ["delete"]})  # no vector columns at all
    prepared = prepare_arrow(only_deletes, spec, RULES, dims(title=None, colbert=None))
    assert [b.op for b in prepared.batches] == ["delete"] and not prepared.failures
    dicts = prepare_dicts(
        [{"id": "x", "op": "delete", "c": "not vectors"}], spec, RULES, dims(title=None, colbert=None)
    )
    assert [b.op for b in dicts.batches] == ["delete"] and not dicts.failures


def test_rows_without_a_name_the_write_expects_fail_by_name():
    table = pa.table({"id": ["a"], "title_vec": pa.array([[1.0]], pa.list_(pa.float32()))})
    spec = ColumnSpec(vector_columns=(("title", "title_vec"),))
    prepared = prepare_arrow(table, spec, RULES, dims(title=None, colbert=None))
    assert reasons(prepared) == {"a": "no vector 'colbert' in the row"}


# -- RowBatch and dead letters ------------------------------------------------------------------------


def _batch() -> RowBatch:
    values = np.arange(12, dtype=np.float32).reshape(6, 2)
    return RowBatch(
        ids=["a", "b", "c"],
        vectors=None,
        named_vectors={"title": np.arange(9, dtype=np.float32).reshape(3, 3)},
        multi_vectors={"colbert": MultiVectors(values, np.array([0, 1, 3, 6]))},
    )


def test_row_batch_slice_take_and_without_carry_every_name():
    batch = _batch()
    piece = batch.slice(1, 3)
    assert np.shares_memory(piece.multi_vectors["colbert"].values, batch.multi_vectors["colbert"].values)
    assert np.shares_memory(piece.named_vectors["title"], batch.named_vectors["title"])
    assert piece.multi_vectors["colbert"].row(0).tolist() == [[2.0, 3.0], [4.0, 5.0]]
    taken = batch.take([2, 0])
    assert taken.named_vectors["title"].tolist() == [[6.0, 7.0, 8.0], [0.0, 1.0, 2.0]]
    assert taken.multi_vectors["colbert"].offsets.tolist() == [0, 3, 4]
    assert taken.multi_vectors["colbert"].values.tolist() == [[6, 7], [8, 9], [10, 11], [0, 1]]
    kept, failures = batch.without({1: "bad"})
    assert kept is not None and kept.ids == ["a", "c"]
    assert kept.multi_vectors["colbert"].counts().tolist() == [1, 3]
    assert failures[0].ids == ("b",)


def test_ranges():
    assert ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]
    assert ranges(np.array([3]), np.array([0])).tolist() == []


def test_dead_letters_carry_the_whole_row():
    table = pa.table(
        {
            "id": ["a", "b"],
            "title_vec": pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32())),
            "tokens": pa.array([[[1.0, 2.0]], [[1.0, 2.0], [3.0]]], F32_MULTI),
            "text": ["x", "y"],
        }
    )
    prepared = prepare_arrow(table, SPEC, RULES, dims(title=None, colbert=None))
    letters = dead_letters(table, prepared.failures, SPEC).to_pylist()
    assert letters == [
        {
            "id": "b",
            "error": "multi-vector 'colbert' holds vectors of different lengths (1 to 2)",
            "error_type": "Invalid",
            "retryable": False,
            "attempts": 0,
            "title_vec": [3.0, 4.0],
            "tokens": [[1.0, 2.0], [3.0]],
            "text": "y",
        }
    ]
    rows = table.to_pylist()
    prepared = prepare_dicts(rows, SPEC, RULES, dims(title=None, colbert=None))
    (letter,) = dead_letters(rows, prepared.failures, SPEC)
    assert letter["tokens"] == [[1.0, 2.0], [3.0]] and letter["title_vec"] == [3.0, 4.0]


def test_dead_letters_of_columns_rows_carry_named_vectors():
    from vectordb.connector.rows.dicts import DictReader, columns_of

    reader = DictReader.from_spec(SPEC)
    rows = [reader.read_named({"id": "a", "title_vec": [1.0], "tokens": [[1.0, 2.0], None]})]
    cols = columns_of(rows)
    from vectordb.connector.report import BatchFailure

    failure = BatchFailure(ids=("a",), positions=(0,), error="x", error_type="Invalid")
    (letter,) = dead_letters(cols, [failure], SPEC)
    assert letter["vectors"] == {"title": [1.0]}
    assert letter["multi_vectors"] == {"colbert": [[1.0, 2.0], None]}
