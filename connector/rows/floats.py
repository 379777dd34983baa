"""A row's vector as given (a list or tuple of Python numbers, a numpy array, anything numpy reads) as a
1-d float32 array: the one conversion of dict rows, Beam ``Chunk``s and ``Row``s.

A list or tuple of numbers is read by the native speedups where they are installed (about 2 µs a
768-d row here), else by ``struct`` (about 5 µs); both round each item as ``struct.pack("<f")`` does
(the double ``float()`` makes of it, then the nearest float32, ties to even: numpy's rounding too) and
give the same bits, NaN's and -0.0's included. Either one leaves to numpy what it does not take (an
item that is no float, int or bool and has no ``__float__``, such as a string of digits, a nested list
or ``None``; a finite number beyond float32, which numpy makes an infinity), so the rules are
numpy's in both cases. What numpy cannot read either is no vector (``None``): the row is refused with
that reason; an infinity or NaN is refused later, by name, with the whole chunk's checks
(``checks.assemble``).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import speedups

__all__ = ["float32_vector", "native_floats"]

_FLOAT32 = np.dtype(np.float32)

_native_pack: Callable[[Any], bytes | None] | None = speedups.native("float32_from_numbers")


def native_floats() -> bool:
    """True when lists of Python numbers are read by the native speedups."""
    return _native_pack is not None


def float32_vector(value: Any) -> np.ndarray | None:
    """``value`` as a 1-d float32 array (itself when it is one), or ``None`` when it is no sequence of numbers."""
    if type(value) is np.ndarray and value.dtype is _FLOAT32 and value.ndim == 1:
        return value
    if type(value) is list or type(value) is tuple:
        packed = _pack_numbers(value)
        if packed is not None:
            return np.frombuffer(packed, dtype=_FLOAT32)
    try:
        with np.errstate(over="ignore"):  # beyond float32 becomes inf, which assemble refuses by name
            array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any double
        return None
    # a vector is flat: nested lists or a 2-d array would be flattened into another vector, a number
    # alone is none (each refused by the caller with its reason)
    return array if array.ndim == 1 else None


def _pack_numbers(values: list[Any] | tuple[Any, ...]) -> bytes | None:
    """The float32 bytes of a list or tuple of numbers (native byte order), or ``None`` for numpy to decide."""
    if _native_pack is not None:
        return _native_pack(values)
    try:
        return _packer(len(values)).pack(*values)
    except (struct.error, OverflowError, TypeError):  # not a number, or a finite number beyond float32
        return None


@functools.lru_cache(maxsize=64)
def _packer(length: int) -> struct.Struct:
    return struct.Struct(f"={length}f")
