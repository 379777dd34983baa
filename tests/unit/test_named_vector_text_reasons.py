"""A named vector given as text that is no JSON list of numbers fails its row with one reason through
dict rows and Arrow input alike, naming the vector and its column; the Arrow reader named the column
alone ("column 'tv': vector text is ...")."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow, prepare_dicts

SPEC = ColumnSpec(vector_columns=(("title", "tv"),))


def reasons(rows: list[dict[str, Any]], form: str) -> dict[str, str]:
    dims = DimensionState(named={"title": 3})
    if form == "arrow":
        prepared = prepare_arrow(pa.Table.from_pylist(rows), SPEC, RowRules(), dims)
    else:
        prepared = prepare_dicts(rows, SPEC, RowRules(), dims)
    return {f.ids[0]: f.error for f in prepared.failures}


@pytest.mark.parametrize("form", ["arrow", "dicts"])
def test_named_vector_text_is_refused_naming_the_vector_and_its_column(form: str) -> None:
    rows = [{"id": "good", "tv": "[1, 2, 3]"}, {"id": "bad", "tv": "1;2;3"}, {"id": "null", "tv": "null"}]
    assert reasons(rows, form) == {
        "bad": "vector 'title' (column 'tv') text is not a JSON list of numbers: '1;2;3'",
        "null": "vector 'title' (column 'tv') text is not a JSON list of numbers: 'null'",
    }
