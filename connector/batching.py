"""Splitting rows into requests by count and by bytes: pure functions over per-row sizes.

A request holds at most ``max_rows`` rows and at most ``max_bytes`` bytes of estimated
wire size (the backend's estimate, including a per-request overhead). A single row larger
than ``max_bytes`` cannot be sent at all: it is returned separately so the caller reports
it as a failed row instead of crashing or dropping it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["split_rows"]


def split_rows(
    row_bytes: np.ndarray, max_rows: int, max_bytes: int, overhead_bytes: int = 0
) -> Iterator[tuple[int, int] | int]:
    """Yield ``(start, stop)`` ranges to send, in order, and the index of each row too large to send.

    Args:
        row_bytes: estimated encoded size of each row.
        max_rows: rows per request.
        max_bytes: bytes per request, ``overhead_bytes`` included.
        overhead_bytes: fixed bytes a request costs besides its rows.
    """
    budget = max_bytes - overhead_bytes
    n = len(row_bytes)
    if n and row_bytes.min() == row_bytes.max() and 0 < int(row_bytes[0]) <= budget:
        step = max(1, min(max_rows, budget // int(row_bytes[0])))  # uniform rows: no per-row loop
        for start in range(0, n, step):
            yield (start, min(n, start + step))
        return
    # the greedy walk, one request at a time: the last row that fits the byte budget by a search in the
    # running sizes, then the row count's cap (a row over the budget alone is yielded by itself)
    ends = np.cumsum(row_bytes, dtype=np.int64)
    start = 0
    while start < n:
        if int(row_bytes[start]) > budget:
            yield start
            start += 1
            continue
        before = int(ends[start - 1]) if start else 0
        stop = int(np.searchsorted(ends, before + budget, side="right"))
        stop = min(stop, start + max_rows, n)
        yield (start, stop)
        start = stop
