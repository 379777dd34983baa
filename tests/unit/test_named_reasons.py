"""A row wrong in several ways (several named vectors, a vector and its metadata) fails with every reason at
once, joined by "; ", so fixing one does not only reveal the next; a row wrong in one way keeps the reason it
always had."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow, prepare_dicts

RULES = RowRules()
NAMED = ColumnSpec(vector_columns=(("title", "t"), ("body", "b")))
WITH_MULTI = ColumnSpec(
    vector_columns=(("title", "t"), ("body", "b")), multi_vector_columns=(("colbert", "c"),)
)


def reasons(prepared: Any) -> dict[str, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


def named_table(rows: list[dict[str, Any]]) -> pa.Table:
    columns: dict[str, Any] = {"id": [r["id"] for r in rows]}
    for column in ("t", "b"):
        columns[column] = pa.array([r[column] for r in rows], pa.list_(pa.float32()))
    if any("c" in r for r in rows):
        columns["c"] = pa.array([r.get("c") for r in rows], pa.list_(pa.list_(pa.float32())))
    return pa.table(columns)


def prepare(rows: list[dict[str, Any]], arrow: bool, spec: ColumnSpec = NAMED, **dims: int | None) -> Any:
    dim = DimensionState(named=dims or {"title": 3, "body": 2})
    if arrow:
        return prepare_arrow(named_table(rows), spec, RULES, dim)
    return prepare_dicts(rows, spec, RULES, dim)


@pytest.mark.parametrize("arrow", [False, True])
def test_a_row_wrong_under_two_names_names_both(arrow: bool) -> None:
    rows = [
        {"id": "ok", "t": [1.0, 2.0, 3.0], "b": [1.0, 2.0]},
        {"id": "x", "t": [1.0, 2.0], "b": [1.0, 2.0, 3.0, 4.0]},
    ]
    prepared = prepare(rows, arrow)
    assert reasons(prepared) == {
        "x": "vector 'title' has 2 dimensions; expected 3; vector 'body' has 4 dimensions; expected 2"
    }
    assert [i for batch in prepared.batches for i in batch.ids] == ["ok"]


@pytest.mark.parametrize("arrow", [False, True])
def test_every_kind_of_failure_under_every_name_is_named(arrow: bool) -> None:
    """null, NaN and a multi-vector's wrong length in one row: each name once, dense names first."""
    rows = [
        {"id": "ok", "t": [1.0, 2.0, 3.0], "b": [1.0, 2.0], "c": [[1.0, 2.0]]},
        {"id": "x", "t": None, "b": [1.0, math.nan], "c": [[1.0, 2.0, 3.0]]},
        {"id": "y", "t": [1.0, 2.0, 3.0], "b": None, "c": [[1.0], [1.0, 2.0]]},
    ]
    prepared = prepare(rows, arrow, WITH_MULTI, title=3, body=2, colbert=2)
    assert reasons(prepared) == {
        "x": "vector 'title' is null; vector 'body' (column 'b') has NaN or infinity at index 1; "
        "multi-vector 'colbert' holds 3-dimensional vectors; expected 2",
        "y": "vector 'body' is null; multi-vector 'colbert' holds vectors of different lengths (1 to 2)",
    }


def test_a_rows_vector_and_metadata_failures_are_named_together() -> None:
    rows = [{"id": "x", "t": [1.0, 2.0], "b": [1.0, 2.0], "extra": {1, 2}}]
    assert reasons(prepare(rows, False)) == {
        "x": "vector 'title' has 2 dimensions; expected 3; "
        "metadata 'extra' cannot be written as JSON: Type is not JSON serializable: set"
    }


def test_an_unnamed_vector_and_an_id_failure_are_named_together() -> None:
    prepared = prepare_dicts(
        [{"id": "", "values": [1.0, math.inf]}, {"id": "ok", "values": [1.0, 2.0]}],
        ColumnSpec(),
        RULES,
        DimensionState(),
    )
    assert reasons(prepared) == {"": "empty id; vector has NaN or infinity at index 1"}


@pytest.mark.parametrize("arrow", [False, True])
def test_one_failure_keeps_its_reason_alone(arrow: bool) -> None:
    rows = [
        {"id": "a", "t": [1.0, 2.0], "b": [1.0, 2.0]},
        {"id": "b", "t": [1.0, 2.0, 3.0], "b": None},
        {"id": "c", "t": [1.0, 2.0, 3.0], "b": [math.nan, 1.0]},
    ]
    assert reasons(prepare(rows, arrow)) == {
        "a": "vector 'title' has 2 dimensions; expected 3",
        "b": "vector 'body' is null",
        "c": "vector 'body' (column 'b') has NaN or infinity at index 0",
    }


def test_good_rows_go_whole_with_no_failure() -> None:
    rng = np.random.default_rng(0)
    n = 1000
    table = pa.table(
        {
            "id": [f"r{i}" for i in range(n)],
            "t": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(3 * n, dtype=np.float32)), 3),
            "b": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(2 * n, dtype=np.float32)), 2),
        }
    )
    prepared = prepare_arrow(table, NAMED, RULES, DimensionState(named={"title": 3, "body": 2}))
    assert not prepared.failures and sum(len(b) for b in prepared.batches) == n
