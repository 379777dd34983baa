"""The check that vectors hold no NaN or infinity: exactly the rows ``np.isfinite`` finds, whatever the
values (finite values so large that any sum or square overflows float32 pass), on every layout, with
the same per-row reasons."""

from __future__ import annotations

import itertools

import hypothesis.strategies as st
import numpy as np
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

from vectordb.connector.rows import Columns, DimensionState, RowRules, prepare_columns
from vectordb.connector.rows.checks import _finite_multi, _finite_rows
from vectordb.connector.rows.types import MultiColumn, offsets_of

FLOAT32_MAX = float(np.finfo(np.float32).max)
values = st.one_of(
    st.floats(width=32),  # NaN, infinities, subnormals, -0.0
    st.sampled_from([FLOAT32_MAX, -FLOAT32_MAX, 1e20, -1e20, 2e19, np.nan, np.inf, -np.inf, 0.0]),
)


@st.composite
def ragged(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat float32 values, offsets, rows to check): rows of one length, or of several."""
    n = draw(st.integers(0, 6))
    if draw(st.booleans()):
        lengths = np.full(n, draw(st.integers(0, 5)), dtype=np.int64)
    else:
        lengths = np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=np.int64)
    offsets = offsets_of(lengths)
    flat = draw(hnp.arrays(np.float32, int(offsets[-1]), elements=values))
    rows = draw(hnp.arrays(bool, n))
    return flat, offsets, rows


def exact(flat: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    per_row = np.array([np.isfinite(flat[a:b]).all() for a, b in itertools.pairwise(offsets)])
    return per_row.astype(bool) | ~rows


@settings(max_examples=500, deadline=None)
@given(case=ragged())
def test_rows_with_a_nan_or_infinity_and_only_those(case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    flat, offsets, rows = case
    assert _finite_rows(flat, offsets, rows).tolist() == exact(flat, offsets, rows).tolist()


def test_finite_values_whose_sum_and_squares_overflow_pass() -> None:
    for value in (FLOAT32_MAX, -FLOAT32_MAX, 1e20, 3e19):
        flat = np.full(4 * 768, value, dtype=np.float32)
        with np.errstate(over="ignore"):
            assert not np.isfinite(flat.sum()) or not np.isfinite(np.dot(flat, flat))
        offsets = np.arange(5, dtype=np.int64) * 768
        assert _finite_rows(flat, offsets, np.ones(4, bool)).all()


@settings(max_examples=300, deadline=None)
@given(case=ragged(), inner=st.integers(1, 3))
def test_multi_vectors_with_a_nan_or_infinity_and_only_those(
    case: tuple[np.ndarray, np.ndarray, np.ndarray], inner: int
) -> None:
    flat, offsets, _ = case
    lengths = np.diff(offsets)
    vectors = len(lengths)
    counts = np.array([inner] * (vectors // inner) + ([vectors % inner] if vectors % inner else []))
    multi = MultiColumn(
        flat, offsets[:-1], lengths, np.zeros(vectors, bool), offsets_of(counts), np.zeros(len(counts), bool)
    )
    vector_ok = exact(flat, offsets, np.ones(vectors, bool))
    expected = [bool(vector_ok[a:b].all()) for a, b in itertools.pairwise(multi.outer)]
    assert _finite_multi(multi, len(counts)).tolist() == expected


def test_the_reason_names_each_bad_row() -> None:
    flat = np.full(16, FLOAT32_MAX, dtype=np.float32)
    flat[5], flat[14] = np.nan, -np.inf
    columns = Columns(
        n=4,
        ids=["a", "b", "c", "d"],
        flat=flat,
        offsets=np.arange(5) * 4,
        null_vector=np.zeros(4, bool),
        sparse=None,
        metadata=[{}] * 4,
        namespaces=None,
    )
    prepared = prepare_columns(columns, RowRules(), DimensionState())
    failed = {i: f.error for f in prepared.failures for i in f.ids}
    assert failed == {
        "b": "vector has NaN or infinity at index 1",
        "d": "vector has NaN or infinity at index 2",
    }
    assert [i for b in prepared.batches for i in b.ids] == ["a", "c"]
