from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from vectordb.connector.batching import split_rows


def ranges(items: list) -> list[tuple[int, int]]:
    return [x for x in items if isinstance(x, tuple)]


def test_uniform_rows_split_by_count() -> None:
    assert list(split_rows(np.full(10, 100), max_rows=4, max_bytes=10_000)) == [(0, 4), (4, 8), (8, 10)]


def test_uniform_rows_split_by_bytes() -> None:
    assert list(split_rows(np.full(10, 100), max_rows=100, max_bytes=350)) == [
        (0, 3),
        (3, 6),
        (6, 9),
        (9, 10),
    ]


def test_overhead_counts_against_the_byte_limit() -> None:
    assert list(split_rows(np.full(4, 100), max_rows=100, max_bytes=350, overhead_bytes=150)) == [
        (0, 2),
        (2, 4),
    ]


def test_a_row_larger_than_a_request_is_returned_alone() -> None:
    sizes = np.array([10, 10, 500, 10])
    assert list(split_rows(sizes, max_rows=100, max_bytes=100)) == [(0, 2), 2, (3, 4)]


def test_empty_input_yields_nothing() -> None:
    assert list(split_rows(np.zeros(0, dtype=np.int64), max_rows=10, max_bytes=100)) == []


@given(
    st.lists(st.integers(min_value=1, max_value=300), max_size=200),
    st.integers(min_value=1, max_value=20),
    st.integers(min_value=50, max_value=1000),
)
def test_every_row_once_in_order_and_within_limits(sizes: list[int], max_rows: int, max_bytes: int) -> None:
    arr = np.asarray(sizes, dtype=np.int64)
    out = list(split_rows(arr, max_rows, max_bytes))
    covered: list[int] = []
    for item in out:
        if isinstance(item, int):
            assert arr[item] > max_bytes
            covered.append(item)
        else:
            start, stop = item
            assert 0 < stop - start <= max_rows
            assert arr[start:stop].sum() <= max_bytes
            covered.extend(range(start, stop))
    assert covered == list(range(len(sizes)))


def walked(sizes: list[int], max_rows: int, budget: int) -> list[tuple[int, int] | int]:
    """The greedy split, row by row: a request ends when the next row would pass a limit."""
    out: list[tuple[int, int] | int] = []
    start = size = 0
    for i, b in enumerate(sizes):
        if b > budget:
            if i > start:
                out.append((start, i))
            out.append(i)
            start, size = i + 1, 0
            continue
        if i - start >= max_rows or size + b > budget:
            out.append((start, i))
            start, size = i, 0
        size += b
    if start < len(sizes):
        out.append((start, len(sizes)))
    return out


@given(
    st.lists(st.integers(min_value=0, max_value=300), max_size=300),
    st.integers(min_value=1, max_value=20),
    st.integers(min_value=1, max_value=1000),
    st.integers(min_value=0, max_value=40),
)
def test_requests_are_as_full_as_the_limits_allow(
    sizes: list[int], max_rows: int, max_bytes: int, overhead: int
) -> None:
    # the fewest requests: each ends only where the next row would pass the row count or the bytes
    arr = np.asarray(sizes, dtype=np.int64)
    assert list(split_rows(arr, max_rows, max_bytes, overhead)) == walked(
        sizes, max_rows, max_bytes - overhead
    )
