"""Rows' metadata checks: each row refused for its metadata with the reason its metadata gives (None,
binary values, what JSON cannot hold, over the size limit), deletes never, whatever the mix of rows."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis import given, settings

from vectordb.connector.rows import Columns, DimensionState, RowRules, prepare_columns
from vectordb.connector.rows.ops import CODES, DELETE

RULES = RowRules(max_metadata_bytes=100)
BINARY = (
    "metadata 'b' is binary; no database here stores bytes as metadata: convert the column (base64, hex) "
    "or leave it out (option metadata_columns)"
)
KINDS: list[tuple[Any, str | None]] = [
    ({}, None),
    ({"a": 1}, None),
    (None, "metadata is not a JSON object"),
    ({"b": b"x"}, BINARY),
    ({"big": "x" * 200}, "metadata is 210 bytes as JSON; the limit is 100"),
    ({"k": {1.5: 1}}, "metadata 'k' cannot be written as JSON: Dict key must be str"),
    # JSON has no NaN: orjson writes null, which every database would store in the value's place
    ({"s": float("nan")}, "metadata 's' is NaN or infinity, which JSON cannot hold (it would be null)"),
    (
        {"o": {"p": [1.0, np.float32("-inf")]}},
        "metadata 'o'['p'][1] is NaN or infinity, which JSON cannot hold (it would be null)",
    ),
    (
        {"v": np.array([0.5, np.nan])},
        "metadata 'v'[1] is NaN or infinity, which JSON cannot hold (it would be null)",
    ),
    ({"n": None, "t": "null"}, None),  # a null, and the text null, are no NaN
]


@settings(max_examples=300, deadline=None)
@given(kinds=st.lists(st.tuples(st.integers(0, len(KINDS) - 1), st.booleans()), max_size=8))
def test_each_row_is_refused_for_its_own_metadata(kinds: list[tuple[int, bool]]) -> None:
    n = len(kinds)
    columns = Columns(
        n=n,
        ids=[f"r{i}" for i in range(n)],
        flat=np.ones(2 * n, np.float32),
        offsets=np.arange(n + 1) * 2,
        null_vector=np.zeros(n, bool),
        sparse=None,
        metadata=[KINDS[k][0] for k, _ in kinds],
        namespaces=None,
        ops=np.array([CODES[DELETE] if delete else 0 for _, delete in kinds], np.int8),
    )
    prepared = prepare_columns(columns, RULES, DimensionState())
    failed = {i: f.error for f in prepared.failures for i in f.ids}
    expected = {f"r{i}": KINDS[k][1] for i, (k, delete) in enumerate(kinds) if not delete and KINDS[k][1]}
    assert failed == expected
