"""An Arrow multi-vector row (or inner vector) that is null is refused as such ("is null", "holds a null
vector"), whatever its span of the values buffer holds (Arrow never reads it): not for a null element it
does not have; a real null element is still named by its vector and its index."""

from __future__ import annotations

import pyarrow as pa
import pytest

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow

F = pa.float32()
MULTI = ColumnSpec(multi_vector_columns=(("colbert", "c"),))


def _multi(rows: list[int], vectors: list[int], values: list[float | None], **masks: list[bool]) -> pa.Array:
    """A multi-vector column from its two offsets arrays; ``masks``: ``outer`` (null rows) and ``inner``
    (null vectors)."""
    inner = pa.ListArray.from_arrays(
        pa.array(vectors, pa.int32()), pa.array(values, F), mask=_mask(masks.get("inner"))
    )
    return pa.ListArray.from_arrays(pa.array(rows, pa.int32()), inner, mask=_mask(masks.get("outer")))


def _mask(flags: list[bool] | None) -> pa.Array | None:
    return None if flags is None else pa.array(flags)


def multi_reasons(column: pa.Array) -> dict[str, str]:
    table = pa.table({"id": [str(i) for i in range(len(column))], "c": column})
    prepared = prepare_arrow(table, MULTI, RowRules(), DimensionState(named={"colbert": 2}))
    return {i: f.error for f in prepared.failures for i in f.ids}


def test_a_null_multi_vector_row_whose_span_holds_nulls_is_null() -> None:
    column = _multi([0, 1, 2, 3], [0, 2, 4, 6], [1, 2, None, 9, 3, 4], outer=[False, True, False])
    assert column[1].as_py() is None
    assert multi_reasons(column) == {"1": "multi-vector 'colbert' is null"}


def test_a_null_inner_vector_whose_span_holds_nulls_is_a_null_vector() -> None:
    column = _multi([0, 1, 3], [0, 2, 4, 6], [1, 2, None, 9, 3, 4], inner=[False, True, False])
    assert column[1].as_py() == [None, [3.0, 4.0]]
    assert multi_reasons(column) == {"1": "multi-vector 'colbert' holds a null vector"}


def test_a_null_element_after_null_spans_is_still_found_where_it_is() -> None:
    """Row 1 null (its span holds a null), row 2's inner vector 0 null (its span too), row 2's vector 1
    holds a real null element at index 1, row 3 one at index 0 of its vector 0."""
    column = _multi(
        [0, 1, 2, 4, 5],
        [0, 2, 4, 6, 8, 10],
        [1, 2, None, 9, None, 5, 6, None, None, 8],
        outer=[False, True, False, False],
        inner=[False, False, True, False, False],
    )
    assert column.to_pylist() == [[[1, 2]], None, [None, [6, None]], [[None, 8]]]
    assert multi_reasons(column) == {
        "1": "multi-vector 'colbert' is null",
        "2": "multi-vector 'colbert' (column 'c'): vector 1 has a null element at index 1",
        "3": "multi-vector 'colbert' (column 'c'): vector 0 has a null element at index 0",
    }


@pytest.mark.parametrize("offset", [1, 2])
def test_null_spans_in_a_slice(offset: int) -> None:
    column = _multi(
        [0, 1, 2, 3, 4], [0, 2, 4, 6, 8], [None, 1, 1, 2, None, 9, 3, 4], outer=[True, False, True, False]
    ).slice(offset)
    assert multi_reasons(column) == {str(2 - offset): "multi-vector 'colbert' is null"}


def test_fixed_size_vectors_null_spans() -> None:
    """Vectors as fixed-size lists: a null one's two values (one of them null) are not its row's."""
    inner = pa.FixedSizeListArray.from_arrays(
        pa.array([1, 2, None, 9, 3, None], F), 2, mask=pa.array([False, True, False])
    )
    column = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), inner)
    assert column.to_pylist() == [[[1, 2]], [None, [3, None]]]
    assert multi_reasons(column) == {
        "1": "multi-vector 'colbert' (column 'c'): vector 1 has a null element at index 1"
    }
    only_null = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), inner.slice(0, 2))
    assert multi_reasons(only_null) == {"1": "multi-vector 'colbert' holds a null vector"}
