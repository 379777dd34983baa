"""Protocol-buffers wire format by hand, for the hot path: no message objects, no Python floats.

A packed ``repeated float`` field is the tag, the byte length, then the raw little-endian
float32 values, so a vector goes from its numpy buffer to the request in one copy.
Messages are written in field-number order and map entries sorted by key, which is what
``SerializeToString(deterministic=True)`` of the generated classes produces; tests compare
our bytes with theirs.

``frame_rows`` writes the repeated row messages of a request around the rows of a float32 matrix
(each row message: a head, the vector, a tail). The native speedups, where installed, make the
request one bytes object written once, with Python's lock released: built in Python it is two fresh
buffers of the request's size, and at 100 rows of 1536 floats (616 KB) freeing them hands the memory
back to the system, so every request faults it in again (about 3 µs a row here, ten times the copy).
Both paths give the same bytes. ``encode_struct`` (metadata as a ``google.protobuf.Struct``) is native
too where installed: about 0.4 µs for three fields against 4 µs in Python.
"""

from __future__ import annotations

import builtins
import datetime
import decimal
import struct
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from . import speedups

__all__ = [
    "FieldReader",
    "encode_struct",
    "encode_value",
    "frame_rows",
    "key",
    "len_field",
    "packed_floats",
    "packed_uint32",
    "read_fields",
    "read_varint",
    "string_field",
    "string_fields",
    "varint",
    "varint_field",
]

VARINT, I64, LEN, I32 = 0, 1, 2, 5


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# Every one- and two-byte varint, and the tag of every length-delimited field below 128: lengths of
# ids, strings and rows are mostly under 16,384, so the hot path builds no bytes for them.
_VARINT_CACHE = [bytes((i,)) for i in range(128)] + [
    bytes((i & 0x7F | 0x80, i >> 7)) for i in range(128, 1 << 14)
]
_LEN_TAGS = [_encode_varint((f << 3) | LEN) for f in range(128)]


def varint(value: int) -> bytes:
    """Base-128 varint; negative int64 values take ten bytes, as protobuf does."""
    if 0 <= value < 16_384:
        return _VARINT_CACHE[value]
    if value < 0:
        value += 1 << 64
    return _encode_varint(value)


def key(field: int, wire_type: int) -> bytes:
    return varint((field << 3) | wire_type)


def len_field(field: int, payload: bytes | bytearray | memoryview) -> bytes:
    """A length-delimited field (string, bytes, sub-message, packed repeated)."""
    n = len(payload)
    tag = _LEN_TAGS[field] if field < 128 else key(field, LEN)
    return b"".join((tag, _VARINT_CACHE[n] if n < 16_384 else varint(n), payload))


def string_field(field: int, text: str) -> bytes:
    return len_field(field, text.encode()) if text else b""


def string_fields(field: int, texts: list[str]) -> bytes:
    """A repeated string field, every value in one pass (ids of a delete request): the same bytes as
    ``string_field`` for each, joined. ASCII texts of one length under 128 (the usual ids) in a field
    under 16 share one two-byte tag and length, so the whole field is one join and one encode."""
    lengths = set(map(len, texts))
    if field < 16 and len(lengths) == 1 and 0 < (length := lengths.pop()) < 128:
        head = chr((field << 3) | LEN) + chr(length)  # both one byte, so ASCII
        text = head + head.join(texts)
        if text.isascii():  # then characters are bytes: the lengths above are byte lengths
            return text.encode("ascii")
    tag = _LEN_TAGS[field] if field < 128 else key(field, LEN)
    encoded = [text.encode() for text in texts]
    if all(len(e) < 16_384 for e in encoded):
        cache = _VARINT_CACHE
        return b"".join([tag + cache[len(e)] + e for e in encoded if e])
    return b"".join(len_field(field, e) for e in encoded if e)


def varint_field(field: int, value: int) -> bytes:
    return key(field, VARINT) + varint(value) if value else b""


def packed_floats(field: int, values: np.ndarray) -> bytes:
    """Packed ``repeated float`` straight from a float32 buffer (little-endian on every supported host)."""
    data = values.astype("<f4", copy=False).tobytes() if values.dtype != np.dtype("<f4") else values.tobytes()
    return len_field(field, data) if data else b""


def packed_uint32(field: int, values: np.ndarray) -> bytes:
    if not len(values):
        return b""
    return len_field(field, b"".join(varint(int(v)) for v in values))


_native_frame_rows: Callable[..., bytes] | None = (
    speedups.native("frame_rows") if sys.byteorder == "little" else None
)


def frame_rows(
    field: int,
    heads: Sequence[bytes],
    vector_head: bytes,
    matrix: np.ndarray,
    tails: Sequence[bytes] | None = None,
    prefix: bytes = b"",
    suffix: bytes = b"",
) -> bytes:
    """``prefix``, one length-delimited field ``field`` a row of ``matrix``, ``suffix``: row ``i``'s message
    is ``heads[i] + vector_head + `` its float32 bytes (little-endian) ``+ tails[i]``."""
    matrix = np.ascontiguousarray(matrix, dtype="<f4")
    if matrix.ndim != 2 or len(heads) != len(matrix) or (tails is not None and len(tails) != len(matrix)):
        raise ValueError(f"one head (and tail) a row of an (n, d) matrix: {len(heads)} for {matrix.shape}")
    if _native_frame_rows is not None:
        return _native_frame_rows(
            field, list(heads), vector_head, matrix, None if tails is None else list(tails), prefix, suffix
        )
    raw = matrix.reshape(-1).view(np.uint8).data  # a flat view: a memoryview of no rows cannot be cast
    row_len = 4 * matrix.shape[1]
    tag = _LEN_TAGS[field] if field < 128 else key(field, LEN)
    fixed = len(vector_head) + row_len
    parts: list[Any] = [prefix]
    for i, head in enumerate(heads):
        tail = b"" if tails is None else tails[i]
        row = raw[i * row_len : (i + 1) * row_len]
        parts += (tag, varint(len(head) + fixed + len(tail)), head, vector_head, row, tail)
    parts.append(suffix)
    return b"".join(parts)


_DOUBLE = struct.Struct("<d")


def encode_value(value: Any) -> bytes:
    """A ``google.protobuf.Value``: null 1, number 2 (double), string 3, bool 4, struct 5, list 6. numpy
    values as the Python values they hold; dates and times as ISO 8601, decimals, UUIDs and durations
    as their text, as the JSON encoders write them. Any other value is a ``TypeError``, never its
    ``str()`` (rows' metadata reaches here made plain by the rows' checks, and refused there when
    JSON has no form for it)."""
    if value is None:
        return key(1, VARINT) + b"\x00"
    if isinstance(value, bool | np.bool_):
        return key(4, VARINT) + (b"\x01" if value else b"\x00")
    if isinstance(value, int | float | np.integer | np.floating):
        return key(2, I64) + _DOUBLE.pack(float(value))
    if isinstance(value, str):
        return len_field(3, value.encode())
    if isinstance(value, Mapping):
        return len_field(5, _encode_struct(value))  # Python all the way down: the native depth bound holds
    if isinstance(value, list | tuple | np.ndarray):
        return len_field(6, b"".join(len_field(1, encode_value(v)) for v in value))
    if isinstance(value, datetime.date | datetime.time):
        return len_field(3, value.isoformat().encode())
    if isinstance(value, decimal.Decimal | uuid.UUID | datetime.timedelta):
        return len_field(3, str(value).encode())
    raise TypeError(f"a {type(value).__name__} has no google.protobuf.Value form")


def encode_struct(fields: Mapping[str, Any]) -> bytes:
    """A ``google.protobuf.Struct``: map<string, Value> fields = 1, entries sorted by key; written by the
    native speedups where installed (the same bytes: they hand any value but plain None, bool, int,
    float, str, dict, list and tuple back to ``encode_value``)."""
    if _native_struct is not None and type(fields) is dict:
        return _native_struct(fields, encode_value, _encode_struct)
    return _encode_struct(fields)


def _encode_struct(fields: Mapping[str, Any]) -> bytes:
    parts = []
    for name in sorted(fields):
        entry = len_field(1, name.encode()) + len_field(2, encode_value(fields[name]))
        parts.append(len_field(1, entry))
    return b"".join(parts)


_native_struct: Callable[..., bytes] | None = speedups.native("encode_struct")


def read_fields(buf: bytes | memoryview) -> Iterator[tuple[int, int, Any]]:
    """Yield ``(field, wire_type, value)``: an int for varint/fixed, a memoryview for length-delimited."""
    view = memoryview(buf)
    pos, end = 0, len(view)
    value: Any
    while pos < end:
        tag, pos = read_varint(view, pos)
        field, wire_type = tag >> 3, tag & 7
        if wire_type == VARINT:
            value, pos = read_varint(view, pos)
        elif wire_type == LEN:
            size, pos = read_varint(view, pos)
            value, pos = view[pos : pos + size], pos + size
        elif wire_type == I64:
            value, pos = int.from_bytes(view[pos : pos + 8], "little"), pos + 8
        elif wire_type == I32:
            value, pos = int.from_bytes(view[pos : pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type}")
        yield field, wire_type, value


def read_varint(view: memoryview | bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    result = shift = 0
    while True:
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


class FieldReader:
    """Reads a message into ``{field: [values]}`` for the few reply fields a backend needs."""

    def __init__(self, buf: bytes | memoryview) -> None:
        self.fields: dict[builtins.int, list[Any]] = {}
        for field, _, value in read_fields(buf):
            self.fields.setdefault(field, []).append(value)

    def int(self, field: builtins.int, default: builtins.int = 0) -> builtins.int:
        values = self.fields.get(field)
        return int(values[-1]) if values else default

    def str(self, field: builtins.int, default: builtins.str = "") -> builtins.str:
        values = self.fields.get(field)
        return bytes(values[-1]).decode() if values else default

    def message(self, field: builtins.int) -> FieldReader | None:
        values = self.fields.get(field)
        return FieldReader(values[-1]) if values else None

    def packed_varints(self, field: builtins.int) -> list[builtins.int]:
        out: list[builtins.int] = []
        for chunk in self.fields.get(field, []):
            if isinstance(chunk, int):
                out.append(chunk)
                continue
            pos = 0
            while pos < len(chunk):
                value, pos = read_varint(chunk, pos)
                out.append(value)
        return out
