"""A bool as a row's id is refused, per row, whatever the input: to Python ``True == 1`` (and it was
written as the text ``"True"``), so it silently took the row of id 1 or of id "True"."""

from __future__ import annotations

import numpy as np
import pytest

from vectordb.connector.rows import (
    Columns,
    ColumnSpec,
    DimensionState,
    RowRules,
    prepare_columns,
    prepare_dicts,
)

V = [0.5, 1.0]


def failed(prepared) -> dict[str | None, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


def written(prepared) -> list:
    return [i for b in prepared.batches for i in b.ids]


@pytest.mark.parametrize("numeric_ids", [False, True])
@pytest.mark.parametrize("flag", [True, False, np.bool_(True)])
def test_a_bool_id_fails_its_row_and_the_rows_of_1_and_true_are_written(
    flag: object, numeric_ids: bool
) -> None:
    rows = [
        {"id": flag, "values": V},
        {"id": 1, "values": V},
        {"id": "True", "values": V},
        {"id": 0, "values": V},
    ]
    prepared = prepare_dicts(rows, ColumnSpec(), RowRules(numeric_ids=numeric_ids), DimensionState(None))
    assert failed(prepared) == {str(bool(flag)): f"id {bool(flag)!r} is a boolean; ids are text or integers"}
    assert written(prepared) == ([1, "True", 0] if numeric_ids else ["1", "True", "0"])


def test_a_bool_id_in_columns_fails_its_row() -> None:
    cols = Columns(
        2, [True, "a"], np.ones(4, np.float32), np.array([0, 2, 4]), np.zeros(2, bool), None, None, None
    )
    prepared = prepare_columns(cols, RowRules(), DimensionState(None))
    assert failed(prepared) == {"True": "id True is a boolean; ids are text or integers"}
    assert written(prepared) == ["a"]
