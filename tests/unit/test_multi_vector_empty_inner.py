"""A multi-vector holding an empty vector (``[[]]``) fails its row alone, as a dense ``[]`` does, and a
length of 0 is never learnt as a dimension: ``[[]]`` once tied with ``[[1, 2]]`` and, the smaller winning,
made a name 0-dimensional (Qdrant then made the collection without it)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow, prepare_dicts
from vectordb.connector.rows.types import agreed_length

SPEC = ColumnSpec(vector_columns=(("title", "t"),), multi_vector_columns=(("colbert", "tok"),))
F32 = pa.list_(pa.float32())
EMPTY = "multi-vector 'colbert' holds an empty vector"


def reasons(prepared) -> dict[str, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


def table(tokens: list) -> pa.Table:
    n = len(tokens)
    return pa.table(
        {
            "id": [f"r{i}" for i in range(n)],
            "t": pa.array([[1.0, 2.0]] * n, F32),
            "tok": pa.array(tokens, pa.list_(F32)),
        }
    )


@pytest.mark.parametrize(
    "tokens",
    [
        [[[]], [[1.0, 2.0]]],  # a tie: the smaller length once won
        [[[]], [[]], [[1.0, 2.0]]],  # a majority of empty vectors
        [[[], []], [[1.0, 2.0]]],
        [[[1.0, 2.0], []], [[1.0, 2.0]]],  # beside a real vector: an empty one, not "different lengths"
    ],
)
def test_an_empty_vector_fails_its_row_and_gives_no_dimension(tokens: list) -> None:
    state = DimensionState(named={"title": None, "colbert": None})
    prepared = prepare_arrow(table(tokens), SPEC, RowRules(), state, None)
    assert state.named == {"title": 2, "colbert": 2}
    bad = [f"r{i}" for i, row in enumerate(tokens) if [] in row]
    assert reasons(prepared) == dict.fromkeys(bad, EMPTY)
    assert [b.ids for b in prepared.batches] == [[f"r{len(tokens) - 1}"]]
    assert prepared.batches[0].multi_vectors["colbert"].dim == 2


def test_dict_rows_alike() -> None:
    state = DimensionState(named={"title": None, "colbert": None})
    rows = [{"id": "a", "t": [1.0, 2.0], "tok": [[]]}, {"id": "b", "t": [1.0, 2.0], "tok": [[3.0, 4.0]]}]
    prepared = prepare_dicts(rows, SPEC, RowRules(), state, None)
    assert state.named["colbert"] == 2
    assert reasons(prepared) == {"a": EMPTY}
    assert [b.ids for b in prepared.batches] == [["b"]]


def test_every_row_empty_learns_nothing_and_resolves_nothing() -> None:
    calls: list[dict] = []

    def resolve(dimensions: dict) -> dict:
        calls.append(dimensions)
        return {}

    state = DimensionState(named={"title": 2, "colbert": None}, resolve_named=resolve)
    prepared = prepare_arrow(table([[[]], [[], []]]), SPEC, RowRules(), state, None)
    assert state.named["colbert"] is None and calls == []  # no target made with colbert of length 0
    assert reasons(prepared) == {"r0": EMPTY, "r1": EMPTY} and prepared.batches == []


def test_a_length_of_zero_is_never_learnt() -> None:
    assert agreed_length(np.array([0, 0, 0, 4])) == 4
    assert agreed_length(np.array([0, 3, 4])) == 3
    with pytest.raises(ValueError):
        agreed_length(np.array([0, 0]))
    state = DimensionState()
    state.learn(np.array([0, 0]))
    assert state.value is None
    state.learn(np.array([0, 0, 5]))
    assert state.value == 5
    named = DimensionState(named={"colbert": None})
    named.learn_named({"colbert": np.array([0])})
    assert named.named == {"colbert": None}
    named.learn_named({"colbert": np.array([0, 0, 7])})
    assert named.named == {"colbert": 7}
