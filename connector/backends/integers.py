"""Integers a database would not store as given: one walker over a metadata value, each database's range.

Qdrant's gRPC ``Value`` and Chroma hold int64; Weaviate and Pinecone keep numbers as float64, exact up to
±2^53. An integer outside its database's range fails its row (each backend says why in its own words)
instead of being stored as another number: rounded to a double, or over one transport only."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["FLOAT64_EXACT", "INT64", "IntegerRange", "integer_outside"]


class IntegerRange(NamedTuple):
    """The integers ``low`` to ``high``, both included."""

    low: int
    high: int


INT64 = IntegerRange(-(1 << 63), (1 << 63) - 1)
FLOAT64_EXACT = IntegerRange(-(1 << 53), 1 << 53)  # a float64 holds every integer here, not all beyond


def integer_outside(value: Any, bounds: IntegerRange) -> int | None:
    """The first integer in ``value`` outside ``bounds``, at any depth (a dict's values, lists, tuples,
    integer and object arrays), or ``None``. An ``int`` subclass and a numpy integer are integers; a bool,
    a ``numpy.bool_`` and a ``timedelta64`` (a numpy integer by class) are not."""
    kind = type(value)
    if kind is str or kind is float or kind is bool or value is None:  # most values: no walk
        return None
    if kind is int:
        return None if bounds.low <= value <= bounds.high else value
    if isinstance(value, int | np.integer) and not isinstance(value, bool | np.timedelta64):
        number = int(value)
        return None if bounds.low <= number <= bounds.high else number
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, np.ndarray):
        if value.dtype.kind not in "uiO":
            return None
        items = value.tolist()
    elif kind is list or kind is tuple or isinstance(value, list | tuple):
        items = value
    else:
        return None
    for item in items:
        found = integer_outside(item, bounds)
        if found is not None:
            return found
    return None
