"""A row wrong under several vector names fails once, every reason joined by "; ", also when some are found
while the row is read (text that is no list of numbers, JSON text that is not JSON, a null element): the
readers' reasons for every name in the columns' order, then the checks' about the row's other names and
its metadata; none about a name the reader refused."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow, prepare_dicts

F = pa.float32()
RULES = RowRules()
SPEC = ColumnSpec(vector_columns=(("title", "t"), ("body", "b")), multi_vector_columns=(("colbert", "c"),))
DIMS = {"title": 3, "body": 2, "colbert": 2}
GOOD = {"id": "ok", "t": [1.0, 2.0, 3.0], "b": [1.0, 2.0], "c": [[1.0, 2.0]]}


def reasons(prepared: Any) -> dict[str, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


def written(prepared: Any) -> list[str]:
    return [i for batch in prepared.batches for i in batch.ids]


def dicts(rows: list[dict[str, Any]]) -> Any:
    return prepare_dicts([GOOD, *rows], SPEC, RULES, DimensionState(named=dict(DIMS)))


def arrow(table: pa.Table) -> Any:
    return prepare_arrow(table, SPEC, RULES, DimensionState(named=dict(DIMS)))


def test_dicts_a_name_unread_and_another_checked() -> None:
    prepared = dicts([{"id": "x", "t": ["a", "b", "c"], "b": [1.0, 2.0, 3.0, 4.0], "c": [[1.0, 2.0]]}])
    assert reasons(prepared) == {
        "x": "vector 'title' (column 't') is not a sequence of numbers; vector 'body' has 4 dimensions; "
        "expected 2"
    }
    assert written(prepared) == ["ok"]


def test_dicts_two_names_unread() -> None:
    prepared = dicts([{"id": "x", "t": ["a", "b", "c"], "b": [1.0, 2.0], "c": "[[1.0, 2.0"}])
    assert reasons(prepared) == {
        "x": "vector 'title' (column 't') is not a sequence of numbers; multi-vector 'colbert' (column 'c') "
        "text is not a JSON list of lists of numbers: '[[1.0, 2.0'"
    }


def test_dicts_unread_multi_vector_and_a_nan_title() -> None:
    prepared = dicts([{"id": "x", "t": [1.0, math.nan, 3.0], "b": [1.0, 2.0], "c": "[[1.0, 2.0"}])
    assert reasons(prepared) == {
        "x": "multi-vector 'colbert' (column 'c') text is not a JSON list of lists of numbers: "
        "'[[1.0, 2.0'; vector 'title' (column 't') has NaN or infinity at index 1"
    }


def test_dicts_an_unread_name_and_metadata() -> None:
    prepared = dicts([{"id": "x", "t": ["a"], "b": [1.0, 2.0], "c": [[1.0, 2.0]], "m": math.inf}])
    assert reasons(prepared) == {
        "x": "vector 'title' (column 't') is not a sequence of numbers; metadata 'm' is NaN or infinity, "
        "which JSON cannot hold (it would be null)"
    }


def test_dicts_an_unread_name_is_not_also_null() -> None:
    """The name its reader refused is not checked again (it would be 'vector 'title' is null')."""
    prepared = dicts([{"id": "x", "t": "[1, 2", "b": [1.0, 2.0], "c": [[1.0, 2.0]]}])
    assert reasons(prepared) == {
        "x": "vector 'title' (column 't') text is not a JSON list of numbers: '[1, 2'"
    }


def test_dicts_a_reason_not_about_names_still_stands_alone() -> None:
    prepared = dicts([{"id": "x", "t": ["a"], "b": [1.0], "c": [[1.0, 2.0]], "metadata": "[1]"}])
    assert reasons(prepared) == {"x": "metadata is not a JSON object"}


def test_arrow_a_null_element_and_another_name_checked() -> None:
    table = pa.table(
        {
            "id": ["ok", "x", "y"],
            "t": pa.array([[1.0, 2.0, 3.0], [1.0, 2.0], [1.0, None, 3.0]], pa.list_(F)),
            "b": pa.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0]], pa.list_(F)),
            "c": pa.array([[[1.0, 2.0]], [[1.0, None]], [[1.0, 2.0]]], pa.list_(pa.list_(F))),
        }
    )
    prepared = arrow(table)
    assert reasons(prepared) == {
        "x": "multi-vector 'colbert' (column 'c'): vector 0 has a null element at index 1; "
        "vector 'title' has 2 dimensions; expected 3",
        "y": "vector 'title' (column 't') has a null element at index 1; vector 'body' has 3 dimensions; "
        "expected 2",
    }
    assert written(prepared) == ["ok"]


def test_arrow_two_names_unread_in_the_columns_order() -> None:
    """A null element under 'title', a multi-vector's text that is not JSON under 'colbert'; the null
    element's NaN, and 'title''s wrong length, are not named again."""
    table = pa.table(
        {
            "id": ["ok", "x"],
            "t": pa.array([[1.0, 2.0, 3.0], [None, 2.0]], pa.list_(F)),
            "b": pa.array([[1.0, 2.0], [1.0, 2.0]], pa.list_(F)),
            "c": pa.array(["[[1.0, 2.0]]", "[[1.0, 2.0"]),
        }
    )
    assert reasons(arrow(table)) == {
        "x": "vector 'title' (column 't') has a null element at index 0; multi-vector 'colbert' "
        "(column 'c') text is not a JSON list of lists of numbers: '[[1.0, 2.0'"
    }


def test_arrow_json_text_unread_and_metadata() -> None:
    table = pa.table(
        {
            "id": ["ok", "x"],
            "t": pa.array(["[1, 2, 3]", "[1, 2"]),
            "b": pa.array([[1.0, 2.0], [1.0, 2.0, 3.0]], pa.list_(F)),
            "c": pa.array([[[1.0, 2.0]], [[1.0, 2.0]]], pa.list_(pa.list_(F))),
            "m": pa.array([1.0, math.nan]),
        }
    )
    assert reasons(arrow(table)) == {
        "x": "vector 'title' (column 't') text is not a JSON list of numbers: '[1, 2'; "
        "vector 'body' has 3 dimensions; expected 2; "
        "metadata 'm' is NaN or infinity, which JSON cannot hold (it would be null)"
    }
