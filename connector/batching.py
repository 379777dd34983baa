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
    start = 0
    size = 0
    for i in range(n):
        b = int(row_bytes[i])
        if b > budget:
            if i > start:
                yield (start, i)
            yield i
            start, size = i + 1, 0
            continue
        if i - start >= max_rows or size + b > budget:
            yield (start, i)
            start, size = i, 0
        size += b
    if start < n:
        yield (start, n)
