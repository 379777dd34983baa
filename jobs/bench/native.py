"""The connector with a native speedup switched off, for benchmarks that run both paths side by side."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["python_floats", "python_heads", "python_json"]


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


@contextlib.contextmanager
def python_heads() -> Iterator[None]:
    """Qdrant point ids and heads and Pinecone vectors' ids and metadata written in Python while inside,
    not natively (the same bytes)."""
    from vectordb.connector.backends import pinecone, qdrant

    saved = qdrant._native_ids, qdrant._native_heads, pinecone._native_parts
    qdrant._native_ids = qdrant._native_heads = pinecone._native_parts = None
    try:
        yield
    finally:
        qdrant._native_ids, qdrant._native_heads, pinecone._native_parts = saved
