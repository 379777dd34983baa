"""Milvus messages encoded by hand: the upsert (vectors copied straight from the matrix buffer), the
delete of a batch's keys, and clearing.

Field numbers are milvus-io/milvus-proto's (milvus.proto, schema.proto), given beside each encoder. Rows the collection cannot hold (a non-integer id for an INT64
key, a required field missing, a key with no field and no dynamic field) are left out of the
request, each with its reason, so the rest of the batch lands.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from ... import protowire as pw
from ...errors import ConfigError
from ...report import BatchFailure
from ...rows import RowBatch
from ...rows.checks import metadata_json
from ...rows.types import text_ids
from .schema import (
    ARRAY,
    BOOL,
    DOUBLE,
    FLOAT,
    FLOAT_VECTOR,
    INT8,
    INT16,
    INT32,
    INT64,
    INT_RANGES,
    JSON,
    SPARSE_FLOAT_VECTOR,
    STRING,
    VARCHAR,
    Layout,
    ScalarField,
    kv_pair,
)

__all__ = [
    "Encoded",
    "all_rows_expr",
    "delete_keys",
    "encode_delete",
    "encode_delete_rows",
    "encode_query_keys",
    "encode_upsert",
    "expr_literal",
    "keys_expr",
    "keys_of",
]

DYNAMIC_FIELD = "$meta"
# Milvus's limit is per JSON value (common.JSONMaxLength: a JSON field's, or $meta's: the keys without a
# field of their own); a VarChar field has its own max_length, the server's check. Counted over the whole
# metadata, rows Milvus stores (a 60,000-character VarChar and a 10,000-character dynamic key) were refused.
MAX_JSON_BYTES = 65_536
INT64_TEXT = re.compile(r"-?[0-9]+")  # a text id an INT64 key takes (after strip)


@dataclass(slots=True)
class Encoded:
    """An UpsertRequest (or DeleteRequest) body and the rows that were left out of it, with reasons."""

    body: bytes
    sent: int
    sent_rows: list[int] | None = None  # the batch's rows in the request, in order; None: every row
    refused: list[BatchFailure] = field(default_factory=list)
    absent: bool = False  # a delete where nothing is there (no collection, partition, or key): ids are gone


# --------------------------------------------------------------------------------------------------
# encoding: clearing


# What a string literal escapes. Milvus's grammar (internal/parser/planparserv2/Plan.g4, DoubleSChar:
# ~["\\\r\n] | EscapeSequence) takes every other character raw, and so does Milvus Lite; JSON's \uXXXX,
# which orjson wrote for \x00-\x1f, Lite refused ("unknown escape sequence \u"): such ids could be
# written but never deleted, and a namespace clear over them failed as a whole.
_LITERAL_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"})


def expr_literal(value: Any) -> str:
    """A key or namespace as a Milvus expression literal: integers bare, strings double-quoted and escaped."""
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).translate(_LITERAL_ESCAPES) + '"'


def all_rows_expr(layout: Layout) -> str:
    """An expression every key satisfies (Milvus needs one to delete or query by expression)."""
    if layout.key_int64:
        return f"{layout.key} <= 0 or {layout.key} > 0"  # -2**63 as a literal overflows the parser
    return f'{layout.key} >= ""'


def encode_delete(collection: str, expr: str, *, partition: str | None = None) -> bytes:
    """``DeleteRequest{collection_name 3, partition_name 4, expr 5}``; consistency_level 7 left Strong (0)."""
    return (
        pw.string_field(3, collection)
        + (pw.string_field(4, partition) if partition else b"")
        + pw.string_field(5, expr)
    )


def encode_query_keys(
    collection: str, layout: Layout, partition: str, limit: int, *, expr: str | None = None
) -> bytes:
    """``QueryRequest{collection_name 3, expr 4, output_fields 5, partition_names 6, query_params 9}``: a
    page of keys (those ``expr`` matches; default: any); consistency_level 11 and use_default_consistency
    12 left unset, so Strong."""
    return (
        pw.string_field(3, collection)
        + pw.string_field(4, expr or all_rows_expr(layout))
        + pw.string_field(5, layout.key)
        + pw.string_field(6, partition)
        + pw.len_field(9, kv_pair("limit", str(limit)))
    )


def keys_of(reply: pw.FieldReader, layout: Layout) -> list[Any]:
    """The key column of ``QueryResults{fields_data 2}``: ``long_data`` (3) or ``string_data`` (6)."""
    for raw in reply.fields.get(2, []):
        data = pw.FieldReader(raw)
        if data.str(2) != layout.key:
            continue
        scalars = data.message(3)
        if scalars is None:
            return []
        if layout.key_int64:
            longs = scalars.message(3)
            values = longs.packed_varints(1) if longs is not None else []
            return [v - (1 << 64) if v >= 1 << 63 else v for v in values]
        strings = scalars.message(6)
        return [bytes(v).decode() for v in strings.fields.get(1, [])] if strings is not None else []
    return []


# --------------------------------------------------------------------------------------------------
# encoding: the upsert


def _json(value: Any) -> bytes:
    """A value as JSON, as every database's metadata (``metadata_json``)."""
    return metadata_json(value)


def _message(field_number: int, parts: list[Any]) -> list[Any]:
    """A length-delimited field around ``parts`` without joining them: vectors are copied once, at the end."""
    return [pw.key(field_number, pw.LEN), pw.varint(sum(len(p) for p in parts)), *parts]


def _field_data(
    dtype: int, name: str, slot: int, payload: list[Any], *, dynamic: bool = False, valid: bytes = b""
) -> list[Any]:
    """``FieldData{type 1, field_name 2, scalars 3 | vectors 4, is_dynamic 6, valid_data 7}`` as request field 5."""
    parts = [pw.varint_field(1, dtype), pw.string_field(2, name), *_message(slot, payload)]
    if dynamic:
        parts.append(pw.varint_field(6, 1))
    if valid:
        parts.append(pw.len_field(7, valid))
    return _message(5, parts)


def _strings(values: list[str]) -> list[Any]:
    out: list[Any] = []
    for text in values:
        data = text.encode()
        out += [b"\x0a", pw.varint(len(data)), data]
    return out


def _blobs(values: list[bytes]) -> list[Any]:
    out: list[Any] = []
    for data in values:
        out += [b"\x0a", pw.varint(len(data)), data]
    return out


def _scalar_payload(dtype: int, values: list[Any]) -> list[Any]:
    """``ScalarField`` holding ``values`` (non-null ones only: nulls live in ``valid_data``)."""
    if dtype == BOOL:
        return _message(1, [pw.len_field(1, bytes(int(v) for v in values))] if values else [])
    if dtype in (INT8, INT16, INT32, INT64):
        slot = 3 if dtype == INT64 else 2
        packed = b"".join(pw.varint(int(v)) for v in values)
        return _message(slot, [pw.len_field(1, packed)] if values else [])
    if dtype in (FLOAT, DOUBLE):
        data = np.asarray(values, dtype="<f4" if dtype == FLOAT else "<f8").tobytes()
        return _message(4 if dtype == FLOAT else 5, [pw.len_field(1, data)] if values else [])
    if dtype in (VARCHAR, STRING):
        return _message(6, _strings(values))
    return _message(9, _blobs([_json(v) for v in values]))  # JSON


def _array_payload(f: ScalarField, values: list[Any]) -> list[Any]:
    """``ScalarField{array_data 8: ArrayArray{data 1: ScalarField of each row's elements, element_type 2}}``,
    as pymilvus's ``convert_to_array`` frames an Array field."""
    element = f.element if f.element is not None else VARCHAR
    rows: list[Any] = []
    for value in values:
        rows += _message(1, _scalar_payload(element, list(value)))
    return _message(8, [*rows, pw.varint_field(2, element)])


def _field_payload(f: ScalarField, values: list[Any]) -> list[Any]:
    return _array_payload(f, values) if f.dtype == ARRAY else _scalar_payload(f.dtype, values)


def _json_problem(name: str, data: bytes) -> str | None:
    """Why JSON value ``data`` of field ``name`` is more than Milvus takes, or ``None``."""
    if len(data) <= MAX_JSON_BYTES:
        return None
    what = (
        "the metadata without a field of its own (dynamic field '$meta')"
        if name == DYNAMIC_FIELD
        else f"field {name!r}"
    )
    return f"{what} is {len(data)} bytes as JSON; Milvus's limit is {MAX_JSON_BYTES} a JSON value"


def _scalar_problem(f: ScalarField, value: Any) -> str | None:
    """Why ``value`` cannot go into field ``f``, or ``None`` if it can."""
    if f.dtype == JSON:
        # Milvus Lite stored a bare string it could not read back (every read of the collection failed
        # after), and refused a number or bool with "Expected bytes, got a 'int' object", naming nothing.
        # Checked for any Milvus: the server's proxy (internal/proxy/validate_util.go, checkJSONFieldData)
        # checks only a value's length in recent versions; older ones unmarshalled each into an object
        if not isinstance(value, dict | list | tuple | np.ndarray):
            return f"{f.describe()}: Milvus Lite stores only an object or array here"
        return _json_problem(f.name, _json(value))
    if f.dtype == ARRAY:
        return _array_problem(f, value)
    ok: bool
    if f.dtype == BOOL:
        ok = isinstance(value, bool | np.bool_)
    elif f.dtype in INT_RANGES:
        bits = INT_RANGES[f.dtype]
        ok = (
            isinstance(value, int | np.integer)
            and not isinstance(value, bool)
            and bool(-(1 << bits) <= value < (1 << bits))
        )
    elif f.dtype in (FLOAT, DOUBLE):
        ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
        if ok:  # a value the field would hold changed: beyond float32 (inf), below it (1e-50 as 0.0),
            # an integer made inexact
            width = np.float32 if f.dtype == FLOAT else np.float64
            with np.errstate(over="ignore", under="ignore"):
                held = width(value) if math.isfinite(float(value)) else None
            if held is not None and (
                not np.isfinite(held)
                or (held == 0 and value != 0)
                or (isinstance(value, int | np.integer) and int(held) != int(value))
            ):
                return f"{f.describe()} would store {value!r} as {float(held)!r}"
    else:
        ok = isinstance(value, str)
        if ok and f.max_length is not None and len(value) > f.max_length:  # Milvus counts characters
            return f"{f.describe()} holds at most {f.max_length} characters; the value has {len(value)}"
    return None if ok else f"{f.describe()} cannot hold {value!r}"


def _array_problem(f: ScalarField, value: Any) -> str | None:
    """Why ``value`` cannot go into Array field ``f``: not a list, more elements than its ``max_capacity``,
    or an element its element type cannot hold (a null among them: an Array holds none)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list | tuple):
        return f"{f.describe()} cannot hold {value!r}: it takes a list"
    if f.max_capacity is not None and len(value) > f.max_capacity:
        return f"{f.describe()} holds at most {f.max_capacity} elements; the value has {len(value)}"
    dtype = f.element if f.element is not None else VARCHAR
    for i, item in enumerate(value):
        element = ScalarField(f"{f.name}[{i}]", dtype, True, max_length=f.max_length)
        if item is None:
            return f"{element.describe()} cannot hold None: an Array holds no nulls"
        problem = _scalar_problem(element, item)
        if problem:
            return problem
    return None


def _add_reason(reasons: dict[int, str], row: int, why: str) -> None:
    """Add ``why`` to the reasons row ``row`` fails for, joined with "; ": a row with several bad fields
    named only the first, and fixing it earned the next failure, one write per field."""
    had = reasons.get(row)
    if had is None:
        reasons[row] = why
    elif why not in had.split("; "):
        reasons[row] = f"{had}; {why}"


def _key_values(
    batch: RowBatch, layout: Layout, reasons: dict[int, str], *, upsert: bool = True
) -> list[Any]:
    """The batch's keys as the collection has them; a row whose id it cannot have gets a reason. A
    VarChar key longer than the key's max_length is an upsert's refusal only: a delete of it deletes
    nothing (unchecked, the server refused the whole upsert, and each row cost about one more request)."""
    ids = batch.ids
    if not layout.key_int64:
        keys = list(text_ids(ids))
        limit = layout.key_max_length
        if upsert and limit is not None:
            for row, key in enumerate(keys):
                if len(key) > limit:  # Milvus counts characters
                    _add_reason(
                        reasons,
                        row,
                        f"id has {len(key)} characters; key {layout.key!r} holds at most {limit}",
                    )
        return keys
    out: list[Any] = []
    for row, value in enumerate(ids):
        if isinstance(value, str):
            text = value.strip()
            # one rule, checked before int(): lstrip("-") let "--7" through to int(), whose ValueError
            # stopped the whole write; ASCII digits only, as Milvus's parser reads a key
            value = int(text) if INT64_TEXT.fullmatch(text) else None
        if not isinstance(value, int) or not -(1 << 63) <= value < (1 << 63):
            _add_reason(
                reasons,
                row,
                f"id {ids[row]!r} is not a 64-bit integer; collection {layout.collection} has an INT64 primary key",
            )
            value = 0
        out.append(value)
    return out


def _split_metadata(
    batch: RowBatch, layout: Layout, reasons: dict[int, str]
) -> tuple[dict[str, list[Any]], list[bytes]]:
    """Per declared scalar field its column (``None`` = null), and the ``$meta`` JSON of each row."""
    n = len(batch)
    rows = batch.metadata if batch.metadata is not None else [None] * n
    columns: dict[str, list[Any]] = {f.name: [None] * n for f in layout.scalars}
    meta: list[bytes] = []
    # a key named as the collection's key or vector field: the server takes it for that field and refuses
    # the request ("vector field 'title' must be list/tuple") without naming the row or the clash
    # a vector field the write leaves out (a nullable one, or a function's output) is taken as well: the
    # key's value became that vector, stored and searchable
    taken = (
        {layout.key, *(name for name, _ in layout.named), *layout.vector_fields}
        | (set() if layout.named else {layout.vector})
        | ({layout.sparse} if layout.sparse else set())
    )
    for row, md in enumerate(rows):
        if (
            md and DYNAMIC_FIELD in md
        ):  # the server reads such a key as the dynamic field itself: restructured
            _add_reason(
                reasons,
                row,
                f"metadata key {DYNAMIC_FIELD!r} is the name of Milvus's dynamic field, which holds the other "
                "keys: rename the column, or leave it out (option metadata_columns)",
            )
        clashes = [k for k in md if k in taken] if md else []
        if len(clashes) == 1:
            _add_reason(
                reasons,
                row,
                f"metadata key {clashes[0]!r} is the name of collection {layout.collection}'s field "
                f"{clashes[0]!r} (its key or a vector): rename the column, or leave it out (option metadata_columns)",
            )
        elif clashes:  # each named: fixing the first earned the next failure, one write per key
            listed = ", ".join(map(repr, clashes))
            _add_reason(
                reasons,
                row,
                f"metadata keys {listed} are the names of collection {layout.collection}'s fields {listed} "
                "(its key or a vector): rename the columns, or leave them out (option metadata_columns)",
            )
    if not layout.scalars:
        meta = [_json(md) if md else b"{}" for md in rows] if layout.dynamic else []
        for row, data in enumerate(meta):
            problem = _json_problem(DYNAMIC_FIELD, data)
            if problem:
                _add_reason(reasons, row, problem)
        if not layout.dynamic:
            for row, md in enumerate(rows):
                if md:
                    _add_reason(reasons, row, _no_field(layout, next(iter(md))))
        return columns, meta
    declared = {f.name for f in layout.scalars}
    for row, md in enumerate(rows):
        md = md or {}
        for f in layout.scalars:
            value = md.get(f.name)
            if f.name == layout.partition_key and batch.namespace:
                if value is not None and value != batch.namespace:  # replaced, it was lost without a word
                    _add_reason(
                        reasons,
                        row,
                        f"metadata {f.name!r} is {value!r} but the row's namespace is {batch.namespace!r} "
                        f"(collection {layout.collection} stores the namespace in its partition key field "
                        f"{f.name!r})",
                    )
                value = batch.namespace
            if value is None:
                if f.required:
                    _add_reason(
                        reasons, row, f"no value for field {f.name!r} of collection {layout.collection}"
                    )
                continue
            problem = _scalar_problem(f, value)
            if problem:
                _add_reason(reasons, row, problem)
            else:
                columns[f.name][row] = value
        rest = {k: v for k, v in md.items() if k not in declared}
        if layout.dynamic:
            meta.append(_json(rest) if rest else b"{}")
            problem = _json_problem(DYNAMIC_FIELD, meta[-1])
            if problem:
                _add_reason(reasons, row, problem)
        elif rest:
            _add_reason(reasons, row, _no_field(layout, next(iter(rest))))
    return columns, meta


def _no_field(layout: Layout, name: str) -> str:
    return f"metadata key {name!r}: collection {layout.collection} has no such field and its dynamic field is off"


def _sparse_rows(batch: RowBatch, layout: Layout, reasons: dict[int, str]) -> list[bytes]:
    """Each row's ``(uint32 index, float32 value)`` little-endian pairs; an empty row where there is none."""
    if batch.sparse is None:
        return [b""] * len(batch) if layout.sparse else []
    if layout.sparse is None:
        for row, entry in enumerate(batch.sparse):
            if entry is not None:
                _add_reason(
                    reasons,
                    row,
                    f"row has a sparse vector but collection {layout.collection} has no sparse field",
                )
        return []
    pair = np.dtype([("index", "<u4"), ("value", "<f4")])
    out: list[bytes] = []
    for entry in batch.sparse:
        if entry is None or not len(entry[0]):
            out.append(b"")
            continue
        indices, values = entry
        pairs = np.empty(len(indices), dtype=pair)
        pairs["index"], pairs["value"] = indices, values
        out.append(pairs.tobytes())  # indices arrive sorted ascending (rows.py checks)
    return out


def _refusals(batch: RowBatch, reasons: dict[int, str]) -> tuple[list[BatchFailure], list[int]]:
    """A failure per reason, and the rows kept (in order)."""
    by_reason: dict[str, list[int]] = {}
    for row, reason in sorted(reasons.items()):
        by_reason.setdefault(reason, []).append(row)
    refused = [batch.failure(rows, reason, error_type="Invalid") for reason, rows in by_reason.items()]
    return refused, [i for i in range(len(batch)) if i not in reasons]


def delete_keys(batch: RowBatch, layout: Layout) -> tuple[list[Any], list[int] | None, list[BatchFailure]]:
    """The batch's keys as the collection has them, the rows they are (``None``: every row), and a
    failure for each row whose id the collection cannot have (text for an INT64 key)."""
    reasons: dict[int, str] = {}
    keys = _key_values(batch, layout, reasons, upsert=False)
    if not reasons:
        return keys, None, []
    refused, kept = _refusals(batch, reasons)
    return [keys[i] for i in kept], kept, refused


def keys_expr(layout: Layout, keys: list[Any]) -> str:
    """``key in [...]`` of ``keys`` (all text or all integers: ``_key_values``), each the literal
    ``expr_literal`` writes; integers as one JSON array, with no dump a key."""
    if layout.key_int64 and set(map(type, keys)) <= {int}:
        return f"{layout.key} in {orjson.dumps(keys).decode()}"
    return f"{layout.key} in [{','.join(map(expr_literal, keys))}]"


def encode_delete_rows(
    batch: RowBatch, layout: Layout, *, partition: str | None = None, present: set[Any] | None = None
) -> Encoded:
    """``DeleteRequest`` of the batch's keys: ``key in [...]``, in ``partition``, or with a partition key
    field ``and field == namespace`` (an id another namespace wrote stays). A key the collection cannot
    have is refused with its reason. ``present``: the keys known to be there, the only ones named (the
    others are gone already); none: ``absent``, nothing to send."""
    keys, sent_rows, refused = delete_keys(batch, layout)
    rows = len(keys)
    if present is not None:
        keys = [k for k in keys if k in present]
    if not keys:
        return Encoded(body=b"", sent=0, sent_rows=[], refused=refused, absent=bool(rows))
    expr = keys_expr(layout, keys)
    if layout.partition_key is not None and batch.namespace is not None:
        expr += f" and {layout.partition_key} == {expr_literal(batch.namespace)}"
    body = encode_delete(layout.collection, expr, partition=partition)
    return Encoded(body=body, sent=rows, sent_rows=sent_rows, refused=refused)


def _dense_matrices(batch: RowBatch, layout: Layout) -> list[tuple[str, np.ndarray]]:
    """Each FloatVector field the upsert fills and its ``(n, dim)`` float32 matrix: ``vector`` with the
    batch's one vector, or each name's field with its named vector (option ``vector_columns``)."""
    if not layout.named:
        if batch.vectors is None:
            raise ConfigError(f"milvus collection {layout.collection} needs a dense vector in every row")
        return [(layout.vector, batch.vectors)]
    out = []
    for name, dim in layout.named:
        matrix = batch.named_vectors.get(name)
        # the client's checks give every upsert row every name, of the dimension the collection fixes
        if matrix is None or (dim is not None and matrix.shape[1] != dim):
            got = "none" if matrix is None else f"{matrix.shape[1]} dimensions"
            raise ConfigError(
                f"option vector_columns: name {name!r}: field {name!r} of milvus collection "
                f"{layout.collection} takes {dim} dimensions; the batch has {got}"
            )
        out.append((name, matrix))
    return out


def _float_vector(name: str, matrix: np.ndarray) -> list[Any]:
    """``FieldData`` of FloatVector field ``name``: ``VectorField{dim 1, float_vector 2: FloatArray{data
    1}}``, the packed floats copied once, from the matrix's buffer, when the request is joined."""
    raw = memoryview(np.ascontiguousarray(matrix, dtype="<f4")).cast("B")  # type: ignore[arg-type]
    payload = [pw.varint_field(1, matrix.shape[1]), *_message(2, [b"\x0a", pw.varint(len(raw)), raw])]
    return _field_data(FLOAT_VECTOR, name, 4, payload)


def encode_upsert(batch: RowBatch, layout: Layout, *, partition: str | None = None) -> Encoded:
    """``UpsertRequest{collection_name 3, partition_name 4, fields_data 5, num_rows 7}`` for the rows it can hold."""
    reasons: dict[int, str] = {}
    keys = _key_values(batch, layout, reasons)
    columns, meta = _split_metadata(batch, layout, reasons)
    sparse = _sparse_rows(batch, layout, reasons)
    matrices = _dense_matrices(batch, layout)
    refused: list[BatchFailure] = []
    sent_rows: list[int] | None = None
    if reasons:
        refused, keep = _refusals(batch, reasons)
        if not keep:
            return Encoded(body=b"", sent=0, sent_rows=[], refused=refused)
        keys = [keys[i] for i in keep]
        columns = {name: [col[i] for i in keep] for name, col in columns.items()}
        meta = [meta[i] for i in keep] if meta else meta
        sparse = [sparse[i] for i in keep] if sparse else sparse
        matrices = [(name, matrix[keep]) for name, matrix in matrices]
        sent_rows = keep
    n = len(keys)
    parts: list[Any] = [pw.string_field(3, layout.collection)]
    if partition:
        parts.append(pw.string_field(4, partition))
    if layout.key_int64:
        key_payload = _message(3, [pw.len_field(1, b"".join(pw.varint(k) for k in keys))])
        parts += _field_data(INT64, layout.key, 3, key_payload)
    else:
        parts += _field_data(VARCHAR, layout.key, 3, _message(6, _strings(keys)))
    for name, matrix in matrices:
        parts += _float_vector(name, matrix)
    if layout.sparse:
        # as pymilvus's row upsert: contents only; the server reads each row's pairs (no dim fields)
        parts += _field_data(SPARSE_FLOAT_VECTOR, layout.sparse, 4, _message(6, _blobs(sparse)))
    for f in layout.scalars:
        column = columns[f.name]
        valid = b"" if f.required else bytes(v is not None for v in column)
        values = [v for v in column if v is not None]
        parts += _field_data(f.dtype, f.name, 3, _field_payload(f, values), valid=valid)
    if layout.dynamic:
        parts += _field_data(JSON, DYNAMIC_FIELD, 3, _message(9, _blobs(meta)), dynamic=True)
    parts.append(pw.varint_field(7, n))
    return Encoded(body=b"".join(parts), sent=n, sent_rows=sent_rows, refused=refused)
