"""Float32 bit patterns for the JSON-vector tests, and a switch between the two JSON writers; shared by
``tests/unit/test_jsonvec.py`` (the writers' own rules) and ``tests/e2e/test_json_vectors.py`` (the
official clients' models reading what they write)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest

from vectordb.connector import jsonvec

ENCODERS = ["native", "python"]
SPECIAL_BITS = [
    0x00000000,  # 0.0
    0x80000000,  # -0.0
    0x00000001,  # the smallest subnormal, 1e-45
    0x80000001,
    0x007FFFFF,  # the largest subnormal
    0x00800000,  # the smallest normal, 1.1754944e-38
    0x7F7FFFFF,  # the largest, 3.4028235e+38
    0xFF7FFFFF,  # the smallest, -3.4028235e+38
    0x3F800000,  # 1.0
    0x4B800000,  # 16777216.0: integers stop being exact
    0x5A0E1BCA,  # 1e+16, written with an exponent
    0x3727C5AC,  # 0.00001, the last one written without
    0x15AE43FD,  # 7.038531e-26: the one shortest text that a double parser rounds to the next float32
    0x95AE43FD,
]


def finite_bits() -> st.SearchStrategy[int]:
    """Any finite float32, as its bits: every exponent alike, so subnormals and extremes come up often."""
    anything = st.integers(0, 2**32 - 1).filter(lambda bits: bits & 0x7F800000 != 0x7F800000)
    subnormal = st.integers(0, 0x007FFFFF).map(lambda bits: bits | 0x80000000) | st.integers(0, 0x007FFFFF)
    return st.sampled_from(SPECIAL_BITS) | anything | subnormal


def matrices(
    *, min_rows: int = 0, max_rows: int = 6, min_dim: int = 0, max_dim: int = 40
) -> st.SearchStrategy[np.ndarray]:
    shape = st.tuples(st.integers(min_rows, max_rows), st.integers(min_dim, max_dim))
    return hnp.arrays(np.uint32, shape, elements=finite_bits()).map(lambda bits: bits.view(np.float32))


@contextlib.contextmanager
def encoder(name: str) -> Iterator[None]:
    """Write with ``name`` only: the native writer where it is built, or orjson with it switched off."""
    if name == "native" and not jsonvec.native_encoder():
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    saved = jsonvec._native_encode
    if name == "python":
        jsonvec._native_encode = None
    try:
        yield
    finally:
        jsonvec._native_encode = saved
