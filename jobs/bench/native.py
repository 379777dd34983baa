"""The connector with a native speedup switched off, for benchmarks that run both paths side by side."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["python_floats", "python_json"]


@contextlib.contextmanager
def python_json() -> Iterator[None]:
    """The native JSON vector writer switched off while inside: orjson formats the floats (the same bytes)."""
    from vectordb.connector import jsonvec

    saved, jsonvec._native_encode = jsonvec._native_encode, None
    try:
        yield
    finally:
        jsonvec._native_encode = saved


@contextlib.contextmanager
def python_floats() -> Iterator[None]:
    """Lists of Python numbers read by ``struct`` while inside, not natively (the same float32 bits)."""
    from vectordb.connector.rows import floats

    saved, floats._native_pack = floats._native_pack, None
    try:
        yield
    finally:
        floats._native_pack = saved
