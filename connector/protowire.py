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
from typing import Any, NamedTuple

import numpy as np

from . import speedups

__all__ = [
    "PROTOBUF_VALUE",
    "FieldReader",
    "ValueFields",
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
    "value_problem",
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
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class ValueFields(NamedTuple):
    """The field numbers of a ``Value`` message: ``google.protobuf.Value``'s, or a database's own
    (Qdrant's adds an int64 ``integer``). Its struct is ``{fields = 1: map<string, Value>}`` in both."""

    null: int
    number: int  # double
    string: int
    boolean: int
    struct: int
    list: int  # ListValue{values = 1}
    integer: int = 0  # an int64 field: an integer within int64 goes there; 0: none, every number a double


PROTOBUF_VALUE = ValueFields(null=1, number=2, string=3, boolean=4, struct=5, list=6)


def encode_value(value: Any, fields: ValueFields = PROTOBUF_VALUE) -> bytes:
    """A ``Value`` (``google.protobuf.Value`` unless ``fields`` says another): null, bool, number (an
    integer in ``fields.integer`` where there is one and it holds it, else a double), string, struct,
    list. numpy values as the Python values they hold; dates and times as ISO 8601, decimals, UUIDs and
    durations as their text, as the JSON encoders write them. Any other value is a ``TypeError``, never
    its ``str()`` (rows' metadata reaches here made plain by the rows' checks, and refused there when
    JSON has no form for it; a backend refuses a row whose value has no form here: ``value_problem``)."""
    if value is None:
        return key(fields.null, VARINT) + b"\x00"
    if isinstance(value, bool | np.bool_):
        return key(fields.boolean, VARINT) + (b"\x01" if value else b"\x00")
    if isinstance(value, int | np.integer):
        if (
            fields.integer and _INT64_MIN <= (number := int(value)) <= _INT64_MAX
        ):  # int(): numpy compares as floats
            return key(fields.integer, VARINT) + varint(number)
        return key(fields.number, I64) + _DOUBLE.pack(float(value))
    if isinstance(value, float | np.floating):
        return key(fields.number, I64) + _DOUBLE.pack(float(value))
    if isinstance(value, str):
        return len_field(fields.string, value.encode())
    if isinstance(value, Mapping):  # Python all the way down: the native depth bound holds
        return len_field(fields.struct, _encode_struct(value, fields))
    if isinstance(value, list | tuple | np.ndarray):
        return len_field(fields.list, b"".join(len_field(1, encode_value(v, fields)) for v in value))
    if isinstance(value, datetime.date | datetime.time):
        return len_field(fields.string, value.isoformat().encode())
    if isinstance(value, decimal.Decimal | uuid.UUID | datetime.timedelta):
        return len_field(fields.string, str(value).encode())
    raise TypeError(f"a {type(value).__name__} has no protocol-buffers Value form")


def value_problem(value: Any, prepare: Callable[[Any], Any] | None = None) -> str | None:
    """Why ``value`` (at any depth) has no ``Value`` form (``encode_value``'s ``TypeError``), or ``None``:
    plain values and containers are only looked at, any other value is encoded alone (after ``prepare``,
    what the backend's encoder does to such a value first). For a backend's refusal step, so such a row
    fails alone instead of its encoding error stopping the write."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return None
    items: Any
    if kind is list or kind is tuple:
        items = value
    elif isinstance(value, Mapping):
        items = value.values()
    elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return None
    else:
        try:
            encode_value(value if prepare is None else prepare(value))
        except (TypeError, ValueError, OverflowError) as exc:  # no form; text no UTF-8 holds; beyond a double
            return str(exc)
        return None
    for item in items:
        problem = value_problem(item, prepare)
        if problem is not None:
            return problem
    return None


def encode_struct(fields: Mapping[str, Any], form: ValueFields = PROTOBUF_VALUE) -> bytes:
    """A ``google.protobuf.Struct`` (or ``form``'s struct): map<string, Value> fields = 1, entries sorted by
    key, a key that is no ``str`` as its text; written by the native speedups where installed (the same
    bytes: they hand any value but plain None, bool, int, float, str, dict, list and tuple back to
    ``encode_value``)."""
    if _native_struct is not None and type(fields) is dict and form is PROTOBUF_VALUE:
        return _native_struct(fields, encode_value, _encode_struct)
    return _encode_struct(fields, form)


def _encode_struct(fields: Mapping[Any, Any], form: ValueFields = PROTOBUF_VALUE) -> bytes:
    parts = []
    for name in sorted(fields):
        text = name if type(name) is str else str(name)
        entry = len_field(1, text.encode()) + len_field(2, encode_value(fields[name], form))
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
