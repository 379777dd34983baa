"""A single vector given as text that is no JSON list of numbers fails its row with one reason through
dict rows and Arrow input alike, naming the vector column; the dict reader named no column ("vector text
is not a JSON list of numbers: '1;2;3'")."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow, prepare_dicts


def reasons(rows: list[dict[str, Any]], form: str, spec: ColumnSpec) -> dict[str, str]:
    dims = DimensionState(3)
    if form == "arrow":
        prepared = prepare_arrow(pa.Table.from_pylist(rows), spec, RowRules(), dims)
    else:
        prepared = prepare_dicts(rows, spec, RowRules(), dims)
    return {f.ids[0]: f.error for f in prepared.failures}


@pytest.mark.parametrize("form", ["arrow", "dicts"])
@pytest.mark.parametrize("column", ["values", "emb"])
def test_vector_text_is_refused_naming_the_vector_column(form: str, column: str) -> None:
    rows = [
        {"id": "good", column: "[1, 2, 3]"},
        {"id": "bad", column: "1;2;3"},
        {"id": "null", column: "null"},
    ]
    assert reasons(rows, form, ColumnSpec(vector_column=column)) == {
        "bad": f"column {column!r}: vector text is not a JSON list of numbers: '1;2;3'",
        "null": f"column {column!r}: vector text is not a JSON list of numbers: 'null'",
    }
