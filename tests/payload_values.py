"""Hypothesis strategies for the values rows carry as metadata or payload, shared by the tests that hold
the native encoders to the Python ones: JSON-like values, and the odd ones (NaN, every float bit pattern,
ints beyond int64 and beyond a double, lone surrogates, numpy scalars, dates, objects known only by
their ``str``), nested in lists, tuples and dicts whose keys may be text, ints or an ``OrderedDict``'s."""

from __future__ import annotations

import datetime
from collections import OrderedDict
from typing import Any

import hypothesis.strategies as st
import numpy as np


def utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogate)."""
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


class Opaque:
    """A value known only by its ``str``."""

    def __str__(self) -> str:
        return "opaque"


json_scalars = (
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False)
    | st.integers(-(2**63), 2**63 - 1)
    | st.text(max_size=8).filter(utf8)
)
odd_scalars = st.one_of(
    st.floats(),  # NaN and infinities, -0.0
    st.integers(0, 2**64 - 1).map(lambda b: np.array(b, np.uint64).view(np.float64).item()),  # any bits
    st.integers(-(2**80), 2**80),  # beyond int64: the double
    st.integers(-(2**1100), 2**1100),  # beyond a double: float() raises
    st.text(max_size=4),  # lone surrogates: str.encode raises
    st.floats(width=32).map(np.float32),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.booleans().map(np.bool_),
    st.dates(),
    st.datetimes(timezones=st.none() | st.just(datetime.UTC)),
    st.builds(Opaque),
    st.lists(st.integers(0, 9), max_size=3).map(np.array),
)


def nested(
    scalars: st.SearchStrategy[Any], keys: st.SearchStrategy[str], *, json_only: bool = False
) -> st.SearchStrategy[Any]:
    """``scalars`` in lists, tuples and dicts, up to 12 leaves; ``json_only``: dicts with text keys only."""

    def containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        made = st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple)
        made |= st.dictionaries(keys, inner, max_size=3)
        if not json_only:
            made |= st.dictionaries(st.integers(0, 3), inner, min_size=1, max_size=2)  # keys that are no str
            made |= st.dictionaries(keys, inner, max_size=2).map(OrderedDict)
        return made

    return st.recursive(scalars, containers, max_leaves=12)
