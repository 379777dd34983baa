"""Float32 rows as the JSON arrays of a REST body: the same bytes from the native writer or from orjson.

Every REST body that carries dense vectors (Pinecone's upsert, Qdrant's points, Chroma's embeddings)
puts ``json_rows(matrix)`` where the vectors go, and orjson writes the body with
``OPT_SERIALIZE_NUMPY``. Each float is the shortest text that parses back to the same float32
(``0.1``, not the double ``0.10000000149011612``; ``1.0``, ``-0.0``, ``1e-45``, ``3.4028235e+38``),
written by zmij's algorithm in both paths. One exception, found by checking all 2^32 bit patterns:
±7.038531e-26 (bits 0x15ae43fd) reads back as the next float32 up through a parser that reads a double
first and rounds it to float32 (many do; serde_json's f32 does unless built with ``float_roundtrip``),
so it is written ``7.0385307e-26``, exact either way. Every other shortest text reads back exactly
both ways.

- native (``vectordb-connector-speedups``, where installed): every row is written in Rust with
  Python's lock released, so the next body is formatted while sender threads run, and handed to
  orjson as an ``orjson.Fragment``, which it copies into the body as it is;
- Python: the matrix itself, whose rows orjson formats holding the lock (about 27 ns a float here,
  41 µs of a 1536-d row); a row holding ±7.038531e-26 (checked for in about 25 µs a 100 × 1536 batch)
  goes as its orjson text with that number rewritten.

JSON has no NaN or infinity (orjson would write ``null``, which a server reads as a missing value or
refuses with a message about something else), so both refuse them with the same ``ValueError``,
naming the first one's row and column. Rows are checked long before (``rows.checks``); this is the
last line, not the rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from . import speedups

__all__ = ["json_rows", "native_encoder"]

_native_encode: Callable[[np.ndarray], list[bytes]] | None = speedups.native("encode_float32_rows")

# The float32 whose shortest text reads back through a double as another, and what is written instead.
_DOUBLE_ROUNDED = np.uint32(0x15AE43FD).view(np.float32)
_SHORTEST, _EXACT = b"7.038531e-26", b"7.0385307e-26"


def native_encoder() -> bool:
    """True when float32 rows are written natively, with Python's lock released."""
    return _native_encode is not None


def json_rows(matrix: np.ndarray) -> np.ndarray | list[Any]:
    """What orjson (``OPT_SERIALIZE_NUMPY``) writes as the rows of ``matrix`` as JSON arrays: item ``i``
    is row ``i``, and the whole is the list of rows. The same bytes either way.

    Raises:
        ValueError: a NaN or an infinity, named by row and column.
    """
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"expected an (n, d) matrix, got shape {matrix.shape}")
    if _native_encode is not None:
        return [orjson.Fragment(text) for text in _native_encode(matrix)]
    if matrix.size and not (np.isfinite(matrix.min()) and np.isfinite(matrix.max())):  # NaN propagates
        row, column = np.argwhere(~np.isfinite(matrix))[0]
        value = matrix[row, column]
        shown = "NaN" if np.isnan(value) else str(float(value))  # as the native writer says it
        raise ValueError(f"row {row} column {column} is {shown}: JSON has no such number")
    if not ((matrix == _DOUBLE_ROUNDED).any() or (matrix == -_DOUBLE_ROUNDED).any()):
        return matrix
    rows: list[Any] = list(matrix)
    for i in np.flatnonzero((np.abs(matrix) == _DOUBLE_ROUNDED).any(axis=1)):
        text = orjson.dumps(matrix[i], option=orjson.OPT_SERIALIZE_NUMPY)
        rows[i] = orjson.Fragment(text.replace(_SHORTEST, _EXACT))  # numbers only: nothing else can match
    return rows
