"""A row's vector as given (a list or tuple of Python numbers, a numpy array of numbers, anything numpy
reads as numbers, or JSON text of a list of numbers) as a 1-d float32 array: the one conversion of dict
rows, Beam ``Chunk``s and ``Row``s, and the one reader of vector text, Arrow's too (``json_vector``).

A list or tuple of numbers is read by the native speedups where they are installed (about 2 µs a 768-d row
here), else by ``struct`` (about 9 µs, the look for bools included); both round each item as
``struct.pack("<f")`` does (the double ``float()`` makes of it, then the nearest float32, ties to even:
numpy's rounding too) and give the same bits, NaN's and -0.0's included. Either one leaves to the Python path
what it does not take (an item that is no float or int and has no ``__float__``, a bool, a finite number
beyond float32, which becomes an infinity). An item that is text, bytes or a bool (Python's or numpy's: a list
of a bool array's items) is refused, never read as the number it spells (``"1e3"``, ``True``): a vector of
flags or of strings is a mistake upstream; a ``None`` item is a null element, refused with its index
(``vector_problem``), as Arrow's nulls are. A numpy array is read when its dtype is numeric (bool, text and
object arrays are refused). An infinity or NaN is refused later, by name, with the whole chunk's checks
(``checks.assemble``).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from .. import speedups

__all__ = [
    "excerpt",
    "float32_vector",
    "json_multi_vector",
    "json_vector",
    "native_floats",
    "vector_problem",
]

_FLOAT32 = np.dtype(np.float32)
# items never read as numbers (other numpy scalars in a list are read as their float())
_NOT_NUMBERS = (str, bytes, bytearray, bool, np.bool_)
_BOOLS = frozenset((bool, np.bool_))  # flags, which ``struct`` would pack as 1.0 and 0.0
_NUMERIC_KINDS = frozenset("fiu")  # numpy dtypes a vector may have: floats, signed and unsigned ints

_native_pack: Callable[[Any], bytes | None] | None = speedups.native("float32_from_numbers")


def native_floats() -> bool:
    """True when lists of Python numbers are read by the native speedups."""
    return _native_pack is not None


def float32_vector(value: Any) -> np.ndarray | None:
    """``value`` as a 1-d float32 array (itself when it is one), or ``None`` when it is no sequence of
    numbers (``vector_problem`` says why). Text is read as a JSON list of numbers."""
    if type(value) is np.ndarray and value.dtype is _FLOAT32 and value.ndim == 1:
        return value
    if type(value) is list or type(value) is tuple:
        packed = _pack_numbers(value)
        if packed is not None:
            return np.frombuffer(packed, dtype=_FLOAT32)
        if any(item is None or isinstance(item, _NOT_NUMBERS) for item in value):
            return None  # the odd row only: the fast paths above took every plain one
    elif isinstance(value, str):
        return json_vector(value)
    elif isinstance(value, bytes | bytearray | dict):
        return None
    try:
        with np.errstate(over="ignore"):  # beyond float32 becomes inf, which assemble refuses by name
            if type(value) is not list and type(value) is not tuple:  # its items are not screened above
                given = np.asarray(value)
                if given.dtype.kind not in _NUMERIC_KINDS:  # bools, text, objects (a None among numbers)
                    return None
            array = np.asarray(value, dtype=_FLOAT32)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any double
        return None
    # a vector is flat: nested lists or a 2-d array would be flattened into another vector, a number
    # alone is none (each refused by the caller with its reason)
    return array if array.ndim == 1 else None


def vector_problem(value: Any) -> str:
    """Why ``float32_vector(value)`` is ``None``, as a failure reason about the row's vector."""
    if isinstance(value, str):
        return f"vector text is not a JSON list of numbers: {excerpt(value)}"
    if isinstance(value, list | tuple) or (isinstance(value, np.ndarray) and value.dtype.kind == "O"):
        items = list(value) if getattr(value, "ndim", 1) == 1 else []
        if not any(isinstance(item, _NOT_NUMBERS) for item in items):
            for i, item in enumerate(items):
                if item is None:
                    return f"vector has a null element at index {i}"
    return "vector is not a sequence of numbers"


def json_vector(text: str) -> np.ndarray | None:
    """A JSON list of numbers as float32 (beyond float32: an infinity, which the checks refuse by name);
    ``None`` for any other text (not JSON, not a list, an item that is no number: ``null``, ``true``)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if type(value) is not list or not set(map(type, value)) <= {int, float}:
        return None
    try:
        with np.errstate(over="ignore"):
            return np.asarray(value, dtype=np.float32)
    except OverflowError:  # an integer beyond any double
        return None


def json_multi_vector(text: str) -> tuple[np.ndarray, list[int]] | None:
    """A JSON list of lists of numbers as (its numbers as float32, each list's length), read strictly as
    ``json_vector`` reads one list: ``None`` for any other text (trailing text, a flat list, a cut one, a
    ``null`` or ``true`` item). The lists' lengths are the checks' to judge, as for Arrow's lists."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if type(value) is not list:
        return None
    for item in value:
        if type(item) is not list or not set(map(type, item)) <= {int, float}:
            return None
    try:
        with np.errstate(over="ignore"):
            flat = np.array([x for item in value for x in item], dtype=np.float32)
    except OverflowError:  # an integer beyond any double
        return None
    return flat, [len(item) for item in value]


def excerpt(text: str, limit: int = 40) -> str:
    """``text`` quoted, cut to ``limit`` characters: enough to find the row, not a whole vector."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _pack_numbers(values: list[Any] | tuple[Any, ...]) -> bytes | None:
    """The float32 bytes of a list or tuple of numbers (native byte order), or ``None`` for the Python
    path to decide (a bool among them included: ``struct`` would read it as 1.0)."""
    if _native_pack is not None:
        return _native_pack(values)
    try:
        packed = _packer(len(values)).pack(*values)
    except (struct.error, OverflowError, TypeError):  # not a number, or a finite number beyond float32
        return None
    # a bool packs as 1.0 or 0.0: the types are looked at only where those bytes are (a find in C; a
    # match across two floats only costs the look). Both hold two zero bytes in either byte order, so
    # one find of those comes first: in an embedding's bytes it is rarely there, and one find of a
    # short needle is cheaper than the two (768-d normal floats: about 10.0 -> 8.7 us a row)
    if _ZEROS in packed and (_ONE in packed or _ZERO in packed) and not _BOOLS.isdisjoint(map(type, values)):
        return None
    return packed


_ONE, _ZERO = struct.pack("=f", 1.0), struct.pack("=f", 0.0)
_ZEROS = b"\0\0"  # in _ONE and in _ZERO, whatever the byte order


@functools.lru_cache(maxsize=64)
def _packer(length: int) -> struct.Struct:
    return struct.Struct(f"={length}f")
