"""Weaviate's gRPC batch messages by hand: ``BatchObjectsRequest`` out, ``BatchObjectsReply`` in.

Field numbers (WIRE.md §2, from weaviate-client's generated descriptors):
``BatchObjectsRequest{objects=1, consistency_level=2}``; ``BatchObject{uuid=1, properties=3,
collection=4, tenant=5, vector_bytes=6, vectors=23 base.Vectors{name=1, vector_bytes=3, type=4
(SINGLE_FP32=1, MULTI_FP32=2)}}``;
``Properties{non_ref_properties=1 Struct, number_array_properties=4 {prop_name=2, values_bytes=3},
int_array_properties=5 {values=1 packed int64, prop_name=2}, text_array_properties=6 {values=1,
prop_name=2}, boolean_array_properties=7 {values=1 packed bool, prop_name=2}, empty_list_props=10}``;
``BatchObjectsReply{took=1, errors=2 {index=1 int32, error=2}}``.

A vector is the matrix row's own float32 bytes, a multi-vector a little-endian uint16 (its vectors'
length) and then its rows' block of ``MultiVectors.values``; scalars go into the Struct (numbers as doubles,
dates as RFC 3339 text), lists into the typed array fields, as weaviate-client sends them. Fields
are written in number order and Struct keys sorted, so our bytes equal the generated classes'
deterministic serialisation (tests/unit/test_wire_weaviate.py).
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ... import protowire as pw
from ...errors import ConfigError
from ...redaction import Secrets
from ...rows import InstantText, MultiVectors, RowBatch

__all__ = [
    "CONSISTENCY",
    "MAX_DIMENSION",
    "MAX_MULTI_DIMENSION",
    "encode_batch",
    "encode_properties",
    "formless",
    "kind_of",
    "read_errors",
    "rfc3339",
]

CONSISTENCY = {"one": 1, "quorum": 2, "all": 3}  # ConsistencyLevel enum
SINGLE_FP32, MULTI_FP32 = 1, 2  # base.Vectors.VectorType
MAX_MULTI_DIMENSION = 65_535  # a multi-vector's bytes start with its vectors' length as a uint16
# a dense vector's floats: the server stores an object's vector length as a uint16 and refuses a longer
# one only when storing it ("could not marshal 'vector' max length exceeded (70000/65535)")
MAX_DIMENSION = 65_535
_MULTI_TAIL = pw.varint_field(4, MULTI_FP32)
_PLAIN = frozenset((str, int, float, bool))  # exactly these types: no subclass, no numpy scalar


def rfc3339(value: dt.date | InstantText) -> str:
    """A date or timestamp as Weaviate's ``date`` takes it: a time and a zone are required, and a
    timestamp without a zone is read as UTC (also one finer than a microsecond, which comes as
    ``InstantText``: sent as it came, a zone-less one failed its row)."""
    if isinstance(value, InstantText):
        zoned = value.endswith("Z") or value[-6:-5] in ("+", "-")  # ...+00:00
        return str(value) if zoned else value + "Z"
    if isinstance(value, dt.datetime):
        return value.isoformat() if value.tzinfo is not None else value.isoformat() + "Z"
    return f"{value.isoformat()}T00:00:00Z"


def kind_of(value: Any) -> str | None:
    """Weaviate's data type for a value as Arrow hands it to Python (``int64`` → ``int``, ``double`` →
    ``number``, ``string`` → ``text``, ``bool``, ``date32``/``timestamp`` → ``date`` (an ``InstantText``
    too: a timestamp finer than a microsecond; any other text, however it looks, is ``text``), lists of
    them → ``…[]``); ``None`` where the value says nothing (an empty list) or is no such type (nested
    objects, left to Weaviate's auto-schema)."""
    if isinstance(value, InstantText):
        return "date"
    if isinstance(value, bool | np.bool_):
        return "boolean"
    if isinstance(value, int | np.integer):
        return "int"
    if isinstance(value, float | np.floating):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, list | tuple | np.ndarray):
        kinds = {kind_of(v) for v in value}
        if len(kinds) == 1:
            (kind,) = kinds
            return None if kind is None or kind.endswith("[]") else kind + "[]"
        if kinds == {"int", "number"}:
            return "number[]"
    return None


def encode_properties(props: Mapping[str, Any]) -> bytes:
    """``BatchObject.Properties``: scalars and objects in the Struct, lists in the typed array fields."""
    scalars: dict[str, Any] = {}
    numbers: list[bytes] = []
    ints: list[bytes] = []
    texts: list[bytes] = []
    bools: list[bytes] = []
    empty: list[bytes] = []
    for name in sorted(props):
        value = props[name]
        if value is None:
            continue
        if type(value) in _PLAIN:  # most metadata: str, int, float, bool go into the Struct as they are
            scalars[name] = value
            continue
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if not isinstance(value, list | tuple):
            scalar = _scalar(value)
            if (
                scalar != {}
            ):  # an empty object (or one of nulls) is left out, as a null is: sent, it fails its row
                scalars[name] = scalar
            continue
        if not value:
            empty.append(pw.len_field(10, name.encode()))
            continue
        kind = kind_of(value)
        if kind == "int[]":
            packed = b"".join(pw.varint(int(v)) for v in value)
            ints.append(pw.len_field(5, pw.len_field(1, packed) + pw.string_field(2, name)))
        elif kind == "number[]":
            raw = np.asarray(value, dtype="<f8").tobytes()
            numbers.append(pw.len_field(4, pw.string_field(2, name) + pw.len_field(3, raw)))
        elif kind == "boolean[]":
            packed = bytes(1 if v else 0 for v in value)
            bools.append(pw.len_field(7, pw.len_field(1, packed) + pw.string_field(2, name)))
        elif kind in ("text[]", "date[]"):
            items = [rfc3339(v) if isinstance(v, dt.date | InstantText) else v for v in value]
            body = b"".join(pw.len_field(1, v.encode()) for v in items) + pw.string_field(2, name)
            texts.append(pw.len_field(6, body))
        else:  # mixed or nested lists: a Struct list, for Weaviate to judge
            scalars[name] = _scalar(list(value))
    head = pw.len_field(1, pw.encode_struct(scalars)) if scalars else b""
    return b"".join((head, *numbers, *ints, *texts, *bools, *empty))


def formless(value: Any) -> str | None:
    """Why ``value`` (a property's, at any depth) has no form in ``encode_properties``, or ``None``
    (``protowire.value_problem``, a value made a Struct value first as the encoder does)."""
    return pw.value_problem(value, _scalar)


def _scalar(value: Any) -> Any:
    """A Struct value: dates as RFC 3339 text, numpy scalars as Python numbers, nested values likewise.
    An object's nulls are left out, and so are its fields that are objects with nothing else in them, as
    a property's null is: sent, a null makes auto-schema type its nested property ``text``, failing every
    later object with a number there, and an empty object fails its row ("At least one nested property is
    required")."""
    if isinstance(value, dt.date | InstantText):
        return rfc3339(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        fields = ((str(k), _scalar(v)) for k, v in value.items() if v is not None)
        return {k: v for k, v in fields if v != {}}
    if isinstance(value, list | tuple | np.ndarray):
        return [_scalar(v) for v in value]
    return value


def encode_batch(
    batch: RowBatch,
    uuids: Sequence[str],
    properties: Sequence[Mapping[str, Any]],
    *,
    collection: str,
    vector_name: str | None,
    consistency: str | None,
) -> bytes:
    """``BatchObjectsRequest``: one ``BatchObject`` per row; ``vector_name`` ``None`` sends the unnamed
    vector (``vector_bytes``), else the named one (``vectors``). Rows with named vectors (options
    ``vector_columns``, ``multi_vector_columns``) carry one ``vectors`` entry per name instead, dense
    names first, in the options' order."""
    shared = pw.string_field(4, collection) + pw.string_field(5, batch.namespace or "")  # the same each row
    matrix = batch.vectors
    raw: memoryview | None = None
    row_len = 0
    head = tail = b""  # each vector's framing, the same for every row: built once a batch
    if matrix is not None and len(matrix) and matrix.shape[1]:
        row_len = 4 * matrix.shape[1]
        raw = np.ascontiguousarray(matrix, dtype="<f4").data.cast("B")
        if vector_name is None:
            head = pw.key(6, pw.LEN) + pw.varint(row_len)  # BatchObject.vector_bytes
        else:
            head, tail = _dense_framing(vector_name, row_len)
    fixed = len(shared) + (len(head) + row_len + len(tail) if raw is not None else 0)
    dense = [_DenseName(name, m) for name, m in batch.named_vectors.items() if len(m) and m.shape[1]]
    fixed += sum(d.size for d in dense)
    multi = [_MultiName(name, m) for name, m in batch.multi_vectors.items() if len(m)]
    object_tag = pw.key(1, pw.LEN)  # BatchObjectsRequest.objects
    parts: list[Any] = []
    for i, uid in enumerate(uuids):
        id_field = pw.string_field(1, uid)
        props = pw.len_field(3, encode_properties(properties[i])) if properties[i] else b""
        size = len(id_field) + len(props) + fixed
        framed = [m.framing(i) for m in multi]  # (head, values, tail) per multi-vector name
        size += sum(len(h) + len(v) + len(t) for h, v, t in framed)
        parts += (object_tag, pw.varint(size), id_field, props, shared)
        if raw is not None:
            parts += (head, raw[i * row_len : (i + 1) * row_len], tail)
        for d in dense:
            parts += (d.head, d.raw[i * d.row_len : (i + 1) * d.row_len], d.tail)
        for h, v, t in framed:
            parts += (h, v, t)
    if consistency is not None:
        parts.append(pw.varint_field(2, CONSISTENCY[consistency]))
    return b"".join(parts)


def _dense_framing(name: str, row_len: int) -> tuple[bytes, bytes]:
    """``BatchObject.vectors`` around one dense vector of ``row_len`` bytes: (before, after) its floats."""
    name_field, tail = pw.string_field(1, name), pw.varint_field(4, SINGLE_FP32)
    framed = pw.key(3, pw.LEN) + pw.varint(row_len)  # base.Vectors.vector_bytes
    inner = len(name_field) + len(framed) + row_len + len(tail)
    return pw.key(23, pw.LEN) + pw.varint(inner) + name_field + framed, tail


class _DenseName:
    """One dense name's matrix and its framing, the same for every row: built once a batch."""

    __slots__ = ("head", "raw", "row_len", "size", "tail")

    def __init__(self, name: str, matrix: np.ndarray) -> None:
        self.row_len = 4 * matrix.shape[1]
        self.raw = np.ascontiguousarray(matrix, dtype="<f4").data.cast("B")
        self.head, self.tail = _dense_framing(name, self.row_len)
        self.size = len(self.head) + self.row_len + len(self.tail)


class _MultiName:
    """One multi-vector name: row ``i``'s ``base.Vectors.vector_bytes`` is its vectors' length as a
    little-endian uint16, then the floats of its block of ``MultiVectors.values`` (as the server's
    ``byteops.Fp32SliceOfSlicesFromBytes`` reads it), sent from the buffer itself."""

    __slots__ = ("name_field", "offsets", "prefix", "raw", "vector_len")

    def __init__(self, name: str, multi: MultiVectors) -> None:
        dim = multi.dim
        if not 0 < dim <= MAX_MULTI_DIMENSION:  # WeaviateBackend.refuse fails such rows before this
            raise ConfigError(
                f"multi-vector {name!r}: Weaviate takes vectors of 1 to 65,535 floats, not {dim}"
            )
        self.name_field = pw.string_field(1, name)
        self.prefix = struct.pack("<H", dim)
        self.vector_len = 4 * dim
        self.raw = np.ascontiguousarray(multi.values, dtype="<f4").data.cast("B")
        self.offsets: list[int] = multi.offsets.tolist()

    def framing(self, i: int) -> tuple[bytes, memoryview, bytes]:
        start, stop = self.offsets[i] * self.vector_len, self.offsets[i + 1] * self.vector_len
        values = self.raw[start:stop]
        body = len(self.prefix) + len(values)
        vector_bytes = pw.key(3, pw.LEN) + pw.varint(body) + self.prefix
        inner = len(self.name_field) + len(vector_bytes) + len(values) + len(_MULTI_TAIL)
        return pw.key(23, pw.LEN) + pw.varint(inner) + self.name_field + vector_bytes, values, _MULTI_TAIL


def read_errors(body: bytes, secrets: Secrets) -> list[tuple[int, str]]:
    """``BatchObjectsReply.errors`` as ``(index, message)``, ``secrets`` blanked out of the messages; an
    error that names no index reads as index 0, as protobuf defines an absent int32 (the server never
    leaves it out for another index)."""
    out = []
    for raw in pw.FieldReader(body).fields.get(2, []):
        error = pw.FieldReader(raw)
        index = error.int(1)
        if index >= 1 << 31:  # int32 sent as a ten-byte negative varint
            index -= 1 << 64
        out.append((index, secrets.blank(error.str(2))))
    return out
