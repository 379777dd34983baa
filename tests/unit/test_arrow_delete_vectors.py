"""Arrow input with option ``op_column``: a delete row needs an id and nothing else, so what its vector
cells hold (null, text that is no JSON list, a null element, in the single, a named or a multi-vector
column) cannot fail it (README, "Deletes"), as for dict rows. The Arrow reader refused such rows for
their vectors; an upsert row holding the same is still refused, with the same reason as before."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.rows import ColumnSpec, DimensionState, Prepared, RowRules, prepare_arrow

V = [0.5, 1.0, -2.0]
LISTS = pa.list_(pa.float32())


def prepare(table: pa.Table, spec: ColumnSpec) -> Prepared:
    names = [name for name, _ in spec.vector_columns + spec.multi_vector_columns]
    return prepare_arrow(table, spec, RowRules(), DimensionState(named=dict.fromkeys(names, 3)))


def outcome(prepared: Prepared) -> tuple[list[tuple[str, list[Any]]], dict[Any, str]]:
    return (
        [(b.op, list(b.ids)) for b in prepared.batches],
        {f.ids[0]: f.error for f in prepared.failures},
    )


def test_a_delete_rows_single_vector_text_is_not_read() -> None:
    table = pa.table(
        {
            "id": ["keep", "a", "b", "c", "d", "bad"],
            "values": ["[0.5, 1, -2]", "n/a", "null", "[1, null, 3]", None, "n/a"],
            "op": ["upsert", "delete", "DELETE", "delete", "delete", "upsert"],
        }
    )
    batches, failures = outcome(prepare(table, ColumnSpec(op_column="op")))
    assert batches == [("upsert", ["keep"]), ("delete", ["a", "b", "c", "d"])]
    assert failures == {"bad": "column 'values': vector text is not a JSON list of numbers: 'n/a'"}


def test_a_delete_rows_single_list_vector_with_a_null_element_is_not_read() -> None:
    table = pa.table(
        {
            "id": ["keep", "gone", "bad"],
            "values": pa.array([V, [1.0, None, 3.0], [1.0, None, 3.0]], LISTS),
            "op": ["upsert", "delete", "upsert"],
        }
    )
    batches, failures = outcome(prepare(table, ColumnSpec(op_column="op")))
    assert batches == [("upsert", ["keep"]), ("delete", ["gone"])]
    assert failures == {"bad": "column 'values': vector has a null element at index 1"}


def test_a_delete_rows_named_and_multi_vectors_are_not_read() -> None:
    spec = ColumnSpec(
        op_column="op", vector_columns=(("title", "tv"),), multi_vector_columns=(("colbert", "tok"),)
    )
    table = pa.table(
        {
            "id": ["keep", "a", "b", "c", "bad"],
            "tv": pa.array([V, [1.0, None, 0.0], None, V, V], LISTS),
            "tok": pa.array(
                [[V], [V], [[1.0, None, 0.0]], [None, [1.0, None]], [[1.0, None, 0.0]]],
                pa.list_(LISTS),
            ),
            "op": ["upsert", "delete", "delete", "delete", "upsert"],
        }
    )
    batches, failures = outcome(prepare(table, spec))
    assert batches == [("upsert", ["keep"]), ("delete", ["a", "b", "c"])]
    assert failures == {
        "bad": "multi-vector 'colbert' (column 'tok'): vector 0 has a null element at index 1"
    }
    text = table.set_column(1, "tv", pa.array(["[0.5, 1, -2]", "1;2;3", "null", None, "[1, 2, 3]"]))
    batches, failures = outcome(prepare(text, spec))
    assert batches == [("upsert", ["keep"]), ("delete", ["a", "b", "c"])]
    assert list(failures) == ["bad"]


def test_a_delete_rows_metadata_is_not_read() -> None:
    table = pa.table(
        {
            "id": ["keep", "gone"],
            "values": pa.array([V, None], LISTS),
            "tags": pa.array([[("k", 1)], [("k", 1), ("k", 2)]], pa.map_(pa.string(), pa.int64())),
            "op": ["upsert", "delete"],
        }
    )
    batches, failures = outcome(prepare(table, ColumnSpec(op_column="op")))
    assert batches == [("upsert", ["keep"]), ("delete", ["gone"])] and not failures


@pytest.mark.parametrize(
    ("options", "column", "seed", "cells"),
    [
        (dict(dimension=3), "values", [1.0, 0.0, 0.0], pa.array(["null", "n/a", None])),
        (dict(dimension=3), "values", [1.0, 0.0, 0.0], pa.array([[1.0, None, 0.0], None, V], LISTS)),
        (
            dict(vector_columns="title:tv", vector_dimensions="title:3"),
            "tv",
            [1.0, 0.0, 0.0],
            pa.array([[1.0, None, 0.0], None, V], LISTS),
        ),
        (
            dict(vector_columns="title:tv", vector_dimensions="title:3"),
            "tv",
            [1.0, 0.0, 0.0],
            pa.array(["1;2;3", "null", None]),
        ),
        (
            dict(multi_vector_columns="colbert:tok", vector_dimensions="colbert:3"),
            "tok",
            [[1.0, 0.0, 0.0]],
            pa.array([[[1.0, None, 0.0]], [None], None], pa.list_(LISTS)),
        ),
    ],
    ids=["text", "null-element", "named", "named-text", "multi"],
)
def test_arrow_deletes_whatever_their_vector_cells_hold_are_deleted(
    options: dict[str, Any], column: str, seed: Any, cells: pa.Array
) -> None:
    opts = dict(create=True, op_column="op", on_error="report", **options)
    with QdrantServer() as srv:
        with connect(srv.rest_uri("c"), **opts) as client:
            client.upsert([{"id": i, column: seed} for i in (1, 2, 3, 4)])
        assert sorted(srv.store.points("c")) == [1, 2, 3, 4]
        table = pa.table({"id": [1, 2, 3], column: cells, "op": ["delete"] * 3})
        with connect(srv.rest_uri("c"), **opts) as client:
            report = client.upsert(table)
        assert (report.failed, [f.error for f in report.failures]) == (0, [])
        assert sorted(srv.store.points("c")) == [4]
