"""Named vectors and multi-vectors: a null element, or a NaN, fails its row naming the vector, its column
and the element's index (in a multi-vector also the vector's index), for Arrow and dict input alike, as
the single vector's reasons do (README: "a null element (named by its index, and the column where the
input has one)"). Both said "vector 'title' contains NaN or infinity" before."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow, prepare_dicts

RULES = RowRules(max_id_length=512, max_metadata_bytes=40_960)
SPEC = ColumnSpec(vector_columns=(("title", "title_vec"),), multi_vector_columns=(("colbert", "tokens"),))
GOOD = {"id": "good", "title_vec": [0.1, 0.2], "tokens": [[1.0, 2.0], [3.0, 4.0]]}
CASES: list[tuple[dict[str, Any], str]] = [
    (
        {"id": "bad", "title_vec": [0.1, None], "tokens": [[1.0, 2.0]]},
        "vector 'title' (column 'title_vec') has a null element at index 1",
    ),
    (
        {"id": "bad", "title_vec": [0.1, 0.2], "tokens": [[1.0, 2.0], [3.0, None]]},
        "multi-vector 'colbert' (column 'tokens'): vector 1 has a null element at index 1",
    ),
    (
        {"id": "bad", "title_vec": [math.nan, 0.2], "tokens": [[1.0, 2.0]]},
        "vector 'title' (column 'title_vec') has NaN or infinity at index 0",
    ),
    (
        {"id": "bad", "title_vec": [0.1, 0.2], "tokens": [[1.0, 2.0], [3.0, 4.0], [math.inf, 1.0]]},
        "multi-vector 'colbert' (column 'tokens'): vector 2 has NaN or infinity at index 0",
    ),
]


def dims() -> DimensionState:
    return DimensionState(named={"title": 2, "colbert": 2})


def arrow_of(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {
            "id": [r["id"] for r in rows],
            "title_vec": pa.array([r["title_vec"] for r in rows], pa.list_(pa.float32())),
            "tokens": pa.array([r["tokens"] for r in rows], pa.list_(pa.list_(pa.float32()))),
        }
    )


@pytest.mark.parametrize("form", ["arrow", "dicts"])
@pytest.mark.parametrize(("bad", "reason"), CASES, ids=[reason for _, reason in CASES])
def test_a_bad_element_of_a_named_vector_is_named_by_vector_column_and_index(
    form: str, bad: dict[str, Any], reason: str
) -> None:
    rows = [GOOD, bad]
    if form == "arrow":
        prepared = prepare_arrow(arrow_of(rows), SPEC, RULES, dims())
    else:
        prepared = prepare_dicts(rows, SPEC, RULES, dims())
    assert {i: f.error for f in prepared.failures for i in f.ids} == {"bad": reason}
    assert [i for b in prepared.batches for i in b.ids] == ["good"]


def test_a_null_element_in_a_sliced_arrow_multi_vector_column_names_its_own_row() -> None:
    rows = [GOOD, {"id": "x", "title_vec": [0.1, 0.2], "tokens": [[None, 1.0]]}, GOOD | {"id": "y"}]
    rows += [{"id": "bad", "title_vec": [0.1, 0.2], "tokens": [[1.0, 2.0], [5.0, 6.0], [3.0, None]]}]
    table = arrow_of(rows).slice(2)  # the null of row "x" is outside the slice
    prepared = prepare_arrow(table, SPEC, RULES, dims())
    assert {i: f.error for f in prepared.failures for i in f.ids} == {
        "bad": "multi-vector 'colbert' (column 'tokens'): vector 2 has a null element at index 1"
    }
