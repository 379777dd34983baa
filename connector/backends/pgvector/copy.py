"""The binary COPY stream of a batch, built from the numpy matrix in one vectorised step."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...rows import RowBatch
from ...rows.checks import metadata_json
from .table import TableLayout

__all__ = ["encode_copy", "json_bytes"]

JSONB_MAX_BYTES = (1 << 28) - 1  # one jsonb value
SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)  # binary COPY header: flags 0, no extension
TRAILER = struct.pack(">h", -1)
NULL = struct.pack(">i", -1)
_I32 = struct.Struct(">i").pack
_SPARSE_HEAD = struct.Struct(">iiii").pack  # field size, dim, nnz, unused
_EMPTY_JSONB = _I32(3) + b"\x01{}"  # jsonb binary: version 1, then the JSON text


def json_bytes(metadata: dict[str, Any]) -> bytes:
    """The row's metadata as JSON text, as every database's (``metadata_json``): the rows' checks refuse
    what it cannot write (integers beyond 64 bits, keys that are no text), so it never raises here."""
    return metadata_json(metadata)


def encode_copy(batch: RowBatch, layout: TableLayout) -> bytes:
    """The binary COPY stream of ``batch`` in ``layout.stage_columns()`` order.

    The vector fields have a fixed size, so the row's field count and every vector field (the one
    vector, or each name's in ``layout.named`` order) are built for every row at once as a packed
    numpy record; the rest is joined per row.
    """
    n = len(batch)
    nfields = len(layout.stage_columns())
    heads = _dense_fields(_matrices(batch, layout), nfields, n)
    width = len(heads) // n if n else 0
    ids = [_text_field(str(i)) for i in batch.ids]
    metadata: list[bytes] | None = None
    if layout.metadata is not None:
        md = batch.metadata
        metadata = [_EMPTY_JSONB] * n if md is None else [_jsonb_field(m) if m else _EMPTY_JSONB for m in md]
    namespace = b""
    if layout.namespace is not None:
        namespace = NULL if batch.namespace is None else _text_field(batch.namespace)
    sparse: list[bytes] | None = None
    if layout.sparse is not None:
        dim = layout.sparse_dimension or 0
        sparse = [NULL] * n if batch.sparse is None else [_sparse_field(s, dim) for s in batch.sparse]
    parts: list[Any] = [SIGNATURE]
    append = parts.append
    for i in range(n):
        append(heads[i * width : (i + 1) * width])
        append(ids[i])
        if metadata is not None:
            append(metadata[i])
        if namespace:
            append(namespace)
        if sparse is not None:
            append(sparse[i])
    append(TRAILER)
    return b"".join(parts)


def _matrices(batch: RowBatch, layout: TableLayout) -> list[np.ndarray] | None:
    """The ``(n, dim)`` float32 matrix of each vector column, in COPY order (``None``: rows with only a
    sparse vector)."""
    if not layout.named:
        return None if batch.vectors is None else [batch.vectors]
    out = []
    for column in layout.named:
        matrix = batch.named_vectors.get(column.name)
        # the client's checks give every upsert row every name, of the dimension the table fixes
        if matrix is None or (column.dimension is not None and matrix.shape[1] != column.dimension):
            got = "none" if matrix is None else f"{matrix.shape[1]} dimensions"
            raise ConfigError(
                f"option vector_columns: name {column.name!r}: table {layout.table} column {column.name!r} is "
                f"{column.sql_type}; the batch has {got}"
            )
        out.append(matrix)
    return out


def _dense_fields(matrices: list[np.ndarray] | None, nfields: int, n: int) -> memoryview:
    """Per row: int16 field count, then each vector field (int32 size, int16 dim, int16 unused, >f4 values)."""
    if matrices is None:  # rows with only a sparse vector
        return memoryview((struct.pack(">h", nfields) + NULL) * n)
    fields: list[tuple[Any, ...]] = [("fields", ">i2")]
    for k, matrix in enumerate(matrices):
        dim = matrix.shape[1]
        fields += [
            (f"size{k}", ">i4"),
            (f"dim{k}", ">i2"),
            (f"unused{k}", ">i2"),
            (f"values{k}", ">f4", (dim,)),
        ]
    out = np.empty(n, dtype=np.dtype(fields))
    out["fields"] = nfields
    for k, matrix in enumerate(matrices):
        dim = matrix.shape[1]
        out[f"size{k}"] = 4 + 4 * dim
        out[f"dim{k}"] = dim
        out[f"unused{k}"] = 0
        out[f"values{k}"] = matrix  # one pass: float32 to big-endian
    return memoryview(out.view(np.uint8).reshape(-1).data)


def _text_field(text: str) -> bytes:
    raw = text.encode()
    return _I32(len(raw)) + raw


def _jsonb_field(metadata: dict[str, Any]) -> bytes:
    raw = json_bytes(metadata)
    return _I32(len(raw) + 1) + b"\x01" + raw


def _sparse_field(value: tuple[np.ndarray, np.ndarray] | None, dim: int) -> bytes:
    """sparsevec binary: int32 dim, int32 nnz, int32 unused, int32 indices (0-based), float32 values.
    Entries whose float32 value is 0 are left out: pgvector's binary input refuses them ("cannot contain
    zero values") where its text input drops them, and a sparse vector stores no zeros either way."""
    if value is None:
        return NULL
    indices, values = value
    floats = np.asarray(values, dtype=">f4")
    nonzero = floats != 0
    if not nonzero.all():
        indices, floats = np.asarray(indices)[nonzero], floats[nonzero]
    nnz = len(floats)
    return (
        _SPARSE_HEAD(12 + 8 * nnz, dim, nnz, 0)
        + np.asarray(indices, dtype=">i4").tobytes()
        + floats.tobytes()
    )
