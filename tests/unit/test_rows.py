"""Bad input: each bad row is refused with a reason naming the problem; good rows go on."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vectordb.connector import ConfigError
from vectordb.connector.rows import (
    Columns,
    ColumnSpec,
    DimensionState,
    RowRules,
    derive_id,
    prepare_arrow,
    prepare_columns,
    prepare_dicts,
)

RULES = RowRules(max_id_length=512, max_metadata_bytes=40_960)


def prep(rows: list[dict], spec: ColumnSpec | None = None, dim: int | None = None):
    return prepare_dicts(rows, spec or ColumnSpec(), RULES, DimensionState(dim))


def reasons(prepared) -> dict[str, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


def good(i: int, dim: int = 4) -> dict:
    return {"id": f"g{i}", "values": [float(i)] * dim}


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"values": [1.0] * 4}, "missing id"),
        ({"id": "", "values": [1.0] * 4}, "empty id"),
        ({"id": "x" * 513, "values": [1.0] * 4}, "513 characters long; the limit is 512"),
        ({"id": 1.5, "values": [1.0] * 4}, "neither a string nor an integer"),
        ({"id": "b", "values": None}, "null vector"),
        ({"id": "b"}, "null vector"),
        ({"id": "b", "values": "abcd"}, "column 'values': vector text is not a JSON list of numbers: 'abcd'"),
        ({"id": "b", "values": ["1", "2", "3", "4"]}, "vector is not a sequence of numbers"),
        ({"id": "b", "values": [1.0] * 3}, "3 dimensions; expected 4"),
        ({"id": "b", "values": [1.0, float("nan"), 1.0, 1.0]}, "NaN or infinity"),
        ({"id": "b", "values": [1.0, float("inf"), 1.0, 1.0]}, "NaN or infinity"),
        ({"id": "b", "values": [1.0] * 4, "sparse_values": {"indices": [-1], "values": [1.0]}}, "negative"),
        (
            {
                "id": "b",
                "values": [1.0] * 4,
                "sparse_values": {"indices": [3, 1, 3], "values": [1.0, 2.0, 3.0]},
            },
            "duplicated",
        ),
        (
            {"id": "b", "values": [1.0] * 4, "sparse_values": {"indices": [1, 1], "values": [1.0, 2.0]}},
            "duplicated",
        ),
        ({"id": "b", "values": [1.0] * 4, "sparse_values": {"indices": [2**32], "values": [1.0]}}, "2^32"),
        (
            {"id": "b", "values": [1.0] * 4, "sparse_values": {"indices": [1, 2], "values": [1.0]}},
            "2 indices but 1 values",
        ),
        ({"id": "b", "values": [1.0] * 4, "metadata": {"text": "x" * 41_000}}, "the limit is 40960"),
        ({"id": "b", "values": [1.0] * 4, "metadata": "{not json"}, "not a JSON object"),
        ({"id": "b", "values": [1.0] * 4, "namespace": 7}, "namespace 7 is not a string"),
    ],
)
def test_bad_row_is_refused_with_its_reason_and_others_go_on(bad: dict, reason: str) -> None:
    prepared = prep([good(0), bad, good(2)])
    got = reasons(prepared)
    assert len(got) == 1
    assert reason in next(iter(got.values()))
    sent = [i for b in prepared.batches for i in b.ids]
    assert sent == ["g0", "g2"]


def test_columns_are_checked_as_dicts_are_and_int_ids_become_strings() -> None:
    flat = np.arange(12, dtype=np.float32)
    flat[5] = np.nan
    columns = Columns(
        n=4,
        ids=[7, "b", "c", 7],
        flat=flat,
        offsets=np.array([0, 4, 8, 8, 12]),
        null_vector=np.array([False, False, True, False]),
        sparse=None,
        metadata=[{}, {"k": 1}, {}, {}],
        namespaces=None,
    )
    prepared = prepare_columns(columns, RULES, DimensionState())
    assert reasons(prepared) == {"b": "vector has NaN or infinity at index 1", "c": "null vector"}
    first, second = prepared.batches  # the repeated id goes out again, in a later batch
    assert first.ids == ["7"] and first.vectors is not None and first.vectors[0].tolist() == [0, 1, 2, 3]
    assert second.ids == ["7"] and second.vectors is not None and second.vectors[0].tolist() == [8, 9, 10, 11]


def test_a_repeated_id_goes_out_in_generations_in_input_order() -> None:
    rows = [good(0), good(1), {"id": "g0", "values": [9.0] * 4}, good(2), {"id": "g0", "values": [7.0] * 4}]
    prepared = prep(rows)
    assert reasons(prepared) == {}
    assert [(list(b.ids), b.vectors[:, 0].tolist()) for b in prepared.batches] == [
        (["g0", "g1", "g2"], [0.0, 1.0, 2.0]),
        (["g0"], [9.0]),
        (["g0"], [7.0]),
    ]


def test_the_same_id_in_two_namespaces_is_two_rows() -> None:
    rows = [{**good(0), "namespace": "a"}, {**good(0), "namespace": "b"}, {**good(0), "namespace": "a"}]
    prepared = prep(rows)
    assert reasons(prepared) == {}
    # b's row and a's first row go together; a's second row follows, alone
    assert [(b.namespace, list(b.ids)) for b in prepared.batches] == [
        ("a", ["g0"]),
        ("b", ["g0"]),
        ("a", ["g0"]),
    ]
    odd = prep([{**good(1), "namespace": ["x"]}, {**good(1), "namespace": ["x"]}])  # unhashable: no crash
    assert sum(len(f.ids) for f in odd.failures) == 2 and not any(len(b) for b in odd.batches)


def test_dimension_comes_from_the_option_before_the_data() -> None:
    prepared = prep([good(0, dim=3), good(1, dim=4)], dim=4)
    assert reasons(prepared) == {"g0": "vector has 3 dimensions; expected 4"}


def test_sparse_only_rows_go_in_their_own_batch() -> None:
    rows = [good(0), {"id": "s", "sparse_values": {"indices": [1, 5], "values": [0.5, 0.25]}}]
    prepared = prep(rows)
    assert not prepared.failures
    dense = [b for b in prepared.batches if b.vectors is not None]
    sparse_only = [b for b in prepared.batches if b.vectors is None]
    assert [b.ids for b in dense] == [["g0"]] and [b.ids for b in sparse_only] == [["s"]]
    indices, values = sparse_only[0].sparse[0]
    assert indices.dtype == np.uint32 and indices.tolist() == [1, 5] and values.tolist() == [0.5, 0.25]


def test_sparse_indices_out_of_order_are_sorted_with_their_values() -> None:
    """Every database takes them in any order (Qdrant asks only that none repeats): sorted, not refused."""
    rows = [{**good(0), "sparse_values": {"indices": [7, 2, 5], "values": [0.5, 0.25, 0.125]}}]
    prepared = prep(rows)
    assert not prepared.failures
    indices, values = prepared.batches[0].sparse[0]
    assert indices.tolist() == [2, 5, 7] and values.tolist() == [0.25, 0.125, 0.5]


def test_rows_are_grouped_by_namespace() -> None:
    rows = [{**good(i), "namespace": "a" if i % 2 else "b"} for i in range(6)]
    prepared = prep(rows)
    assert sorted((b.namespace, b.ids) for b in prepared.batches) == [
        ("a", ["g1", "g3", "g5"]),
        ("b", ["g0", "g2", "g4"]),
    ]


def arrow_vectors(matrix: np.ndarray, typ: pa.DataType | None = None) -> pa.Array:
    n, dim = matrix.shape
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)), type=typ)


def test_arrow_list_float_is_a_zero_copy_view() -> None:
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    batch = pa.record_batch({"id": ["a", "b", "c"], "values": arrow_vectors(matrix)})
    prepared = prepare_arrow(batch, ColumnSpec(), RULES, DimensionState())
    out = prepared.batches[0].vectors
    np.testing.assert_array_equal(out, matrix)
    buffer_address = batch.column(1).values.buffers()[1].address
    assert out.__array_interface__["data"][0] == buffer_address


@pytest.mark.parametrize("kind", ["double", "fixed", "large", "sliced"])
def test_arrow_vector_layouts_give_the_same_matrix(kind: str) -> None:
    matrix = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    ids = [f"r{i}" for i in range(6)]
    if kind == "double":
        column = arrow_vectors(matrix.astype(np.float64))
    elif kind == "fixed":
        column = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), 4)
    elif kind == "large":
        column = pa.array(matrix.tolist(), type=pa.large_list(pa.float32()))
    else:
        column = arrow_vectors(np.vstack([matrix[:1] + 100, matrix]))[1:]
    batch = pa.record_batch({"id": ids, "values": column})
    prepared = prepare_arrow(batch, ColumnSpec(), RULES, DimensionState())
    np.testing.assert_array_equal(prepared.batches[0].vectors, matrix)


def test_arrow_nulls_and_wrong_sizes_are_refused() -> None:
    column = pa.array([[1.0, 2.0], None, [1.0], [1.0, None]], type=pa.list_(pa.float32()))
    batch = pa.record_batch({"id": ["a", "b", "c", "d"], "values": column})
    prepared = prepare_arrow(batch, ColumnSpec(), RULES, DimensionState())
    assert reasons(prepared) == {
        "b": "null vector",
        "c": "vector has 1 dimensions; expected 2",
        "d": "column 'values': vector has a null element at index 1",
    }
    assert prepared.batches[0].ids == ["a"]


def test_arrow_metadata_struct_map_and_json_columns_are_merged() -> None:
    vec = arrow_vectors(np.ones((3, 2), dtype=np.float32))
    for meta in (
        pa.array([{"k": 1}, {"k": 2}, None], type=pa.struct([("k", pa.int64())])),
        pa.array([[("k", 1)], [("k", 2)], None], type=pa.map_(pa.string(), pa.int64())),
        pa.array(['{"k": 1}', '{"k": 2}', None]),
    ):
        batch = pa.record_batch(
            {"id": ["a", "b", "c"], "values": vec, "metadata": meta, "genre": ["x", None, "z"]}
        )
        prepared = prepare_arrow(batch, ColumnSpec(), RULES, DimensionState())
        assert prepared.batches[0].metadata == [{"k": 1, "genre": "x"}, {"k": 2}, {"genre": "z"}]


def test_metadata_columns_option_limits_the_columns() -> None:
    batch = pa.record_batch(
        {"id": ["a"], "values": arrow_vectors(np.ones((1, 2), np.float32)), "x": [1], "y": [2]}
    )
    prepared = prepare_arrow(batch, ColumnSpec(metadata_columns=("y",)), RULES, DimensionState())
    assert prepared.batches[0].metadata == [{"y": 2}]


@pytest.mark.parametrize(
    ("batch", "spec", "named"),
    [
        (
            pa.record_batch({"id": ["a"], "vec": [[1.0]]}),
            ColumnSpec(),
            "option vector_column: no column 'values'",
        ),
        (
            pa.record_batch({"key": ["a"], "values": [[1.0]]}),
            ColumnSpec(),
            "option id_column: no column 'id'",
        ),
        (pa.record_batch({"id": ["a"], "values": [12]}), ColumnSpec(), "expected a list of floats"),
        (pa.record_batch({"id": [[1]], "values": [[1.0]]}), ColumnSpec(), "expected a string or integer"),
        (pa.record_batch({"id": ["a"], "values": [["x"]]}), ColumnSpec(), "expected floats"),
        (
            pa.record_batch({"id": ["a"], "values": [[1.0]]}),
            ColumnSpec(sparse_column="sp"),
            "option sparse_column",
        ),
    ],
)
def test_schema_problems_are_config_errors_naming_option_and_column(batch, spec, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        prepare_arrow(batch, spec, RULES, DimensionState())


def test_id_from_is_deterministic() -> None:
    rows = [{"doc": "a", "chunk": 1, "values": [1.0, 2.0]}, {"doc": "a", "chunk": 2, "values": [1.0, 2.0]}]
    first = prep(rows, ColumnSpec(id_from=("doc", "chunk")))
    again = prep(rows, ColumnSpec(id_from=("doc", "chunk")))
    assert first.batches[0].ids == again.batches[0].ids
    assert first.batches[0].ids[0] == derive_id(["a", 1]) != derive_id(["a", 2])
    assert first.batches[0].metadata == [{"doc": "a", "chunk": 1}, {"doc": "a", "chunk": 2}]


def test_huge_finite_values_are_not_mistaken_for_infinity() -> None:
    big = np.finfo(np.float32).max
    prepared = prep([{"id": "a", "values": [big, big, big, big]}, {"id": "b", "values": [big, np.inf, 0, 0]}])
    assert reasons(prepared) == {"b": "vector has NaN or infinity at index 1"}
    assert prepared.batches[0].ids == ["a"]


@pytest.mark.parametrize(
    ("metadata", "key"),
    [({"big": 2**70}, "'big'"), ({1: "int key"}, "1")],
    ids=["int beyond 64 bits", "non-string key"],
)
def test_metadata_json_cannot_write_is_refused_not_a_crash(metadata: dict, key: str) -> None:
    prepared = prep([good(0), {"id": "b", "values": [1.0] * 4, "metadata": metadata}])
    assert f"metadata {key} cannot be written as JSON" in reasons(prepared)["b"]
    assert prepared.batches[0].ids == ["g0"]


def test_arrow_input_with_a_column_name_twice_is_a_config_error_naming_it() -> None:
    batch = pa.RecordBatch.from_arrays(
        [pa.array(["a"]), pa.array([[1.0, 2.0]]), pa.array(["x"]), pa.array(["y"])],
        names=["id", "values", "title", "title"],
    )
    with pytest.raises(ConfigError, match="1 column name\\(s\\) appear more than once: 'title'; rename"):
        prepare_arrow(batch, ColumnSpec(), RULES, DimensionState())


def test_a_vector_failure_says_which_element_and_names_the_column() -> None:
    """A null element was reported as 'vector contains NaN or infinity' (the reader makes it NaN), and
    no vector or sparse failure named its column."""
    sparse = pa.struct([("indices", pa.list_(pa.int32())), ("values", pa.list_(pa.float32()))])
    batch = pa.record_batch(
        {
            "id": ["a", "b", "c", "d", "e"],
            "emb": pa.array(
                [[1.0, 2.0], [1.0, None], [float("inf"), 1.0], [1.0, 2.0], [1.0, 2.0]], pa.list_(pa.float32())
            ),
            "sp": pa.array(
                [
                    None,
                    None,
                    None,
                    {"indices": [7, 2], "values": [1.0, None]},
                    {"indices": [7, 2], "values": [float("nan"), 1.0]},
                ],
                sparse,
            ),
        }
    )
    prepared = prepare_arrow(
        batch, ColumnSpec(vector_column="emb", sparse_column="sp"), RULES, DimensionState()
    )
    assert reasons(prepared) == {
        "b": "column 'emb': vector has a null element at index 1",
        "c": "column 'emb': vector has NaN or infinity at index 0",
        "d": "column 'sp': sparse vector has a null value at position 1 (sparse index 2)",
        "e": "column 'sp': sparse vector has NaN or infinity at position 0 (sparse index 7)",
    }
    assert prepared.batches[0].ids == ["a"]
