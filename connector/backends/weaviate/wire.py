"""Weaviate's gRPC batch messages by hand: ``BatchObjectsRequest`` out, ``BatchObjectsReply`` in.

Field numbers (WIRE.md §2, from weaviate-client's generated descriptors):
``BatchObjectsRequest{objects=1, consistency_level=2}``; ``BatchObject{uuid=1, properties=3,
collection=4, tenant=5, vector_bytes=6, vectors=23 base.Vectors{name=1, vector_bytes=3, type=4}}``;
``Properties{non_ref_properties=1 Struct, number_array_properties=4 {prop_name=2, values_bytes=3},
int_array_properties=5 {values=1 packed int64, prop_name=2}, text_array_properties=6 {values=1,
prop_name=2}, boolean_array_properties=7 {values=1 packed bool, prop_name=2}, empty_list_props=10}``;
``BatchObjectsReply{took=1, errors=2 {index=1 int32, error=2}}``.

A vector is the matrix row's own float32 bytes; scalars go into the Struct (numbers as doubles,
dates as RFC 3339 text), lists into the typed array fields, as weaviate-client sends them. Fields
are written in number order and Struct keys sorted, so our bytes equal the generated classes'
deterministic serialisation (tests/unit/test_wire_weaviate.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ... import protowire as pw
from ...redaction import Secrets
from ...rows import RowBatch

__all__ = [
    "CONSISTENCY",
    "encode_batch",
    "encode_properties",
    "kind_of",
    "read_errors",
    "rfc3339",
]

CONSISTENCY = {"one": 1, "quorum": 2, "all": 3}  # ConsistencyLevel enum
SINGLE_FP32 = 1  # base.Vectors.VectorType
_PLAIN = frozenset((str, int, float, bool))  # exactly these types: no subclass, no numpy scalar


def rfc3339(value: dt.date) -> str:
    """A date or timestamp as Weaviate's ``date`` takes it: a time and a zone are required, and a
    timestamp without a zone is read as UTC."""
    if isinstance(value, dt.datetime):
        return value.isoformat() if value.tzinfo is not None else value.isoformat() + "Z"
    return f"{value.isoformat()}T00:00:00Z"


def kind_of(value: Any) -> str | None:
    """Weaviate's data type for a value as Arrow hands it to Python (``int64`` → ``int``, ``double`` →
    ``number``, ``string`` → ``text``, ``bool``, ``date32``/``timestamp`` → ``date``, lists of them →
    ``…[]``); ``None`` where the value says nothing (an empty list) or is no such type (nested objects,
    left to Weaviate's auto-schema)."""
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
            scalars[name] = _scalar(value)
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
            items = [v if isinstance(v, str) else rfc3339(v) for v in value]
            body = b"".join(pw.len_field(1, v.encode()) for v in items) + pw.string_field(2, name)
            texts.append(pw.len_field(6, body))
        else:  # mixed or nested lists: a Struct list, for Weaviate to judge
            scalars[name] = _scalar(list(value))
    head = pw.len_field(1, pw.encode_struct(scalars)) if scalars else b""
    return b"".join((head, *numbers, *ints, *texts, *bools, *empty))


def _scalar(value: Any) -> Any:
    """A Struct value: dates as RFC 3339 text, numpy scalars as Python numbers, nested values likewise."""
    if isinstance(value, dt.date):
        return rfc3339(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): _scalar(v) for k, v in value.items()}
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
    vector (``vector_bytes``), else the named one (``vectors``)."""
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
            name, tail = pw.string_field(1, vector_name), pw.varint_field(4, SINGLE_FP32)
            framed = pw.key(3, pw.LEN) + pw.varint(row_len)  # base.Vectors.vector_bytes
            inner = len(name) + len(framed) + row_len + len(tail)
            head = pw.key(23, pw.LEN) + pw.varint(inner) + name + framed  # BatchObject.vectors
    fixed = len(shared) + (len(head) + row_len + len(tail) if raw is not None else 0)
    object_tag = pw.key(1, pw.LEN)  # BatchObjectsRequest.objects
    parts: list[Any] = []
    for i, uid in enumerate(uuids):
        id_field = pw.string_field(1, uid)
        props = pw.len_field(3, encode_properties(properties[i])) if properties[i] else b""
        parts += (object_tag, pw.varint(len(id_field) + len(props) + fixed), id_field, props, shared)
        if raw is not None:
            parts += (head, raw[i * row_len : (i + 1) * row_len], tail)
    if consistency is not None:
        parts.append(pw.varint_field(2, CONSISTENCY[consistency]))
    return b"".join(parts)


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
