"""Spark ML ``VectorUDT`` columns as the list columns the connector reads: Spark's business, not the core's."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from vectordb.connector.rows import offsets_of

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["dense_ml_columns", "dense_ml_vectors"]


def dense_ml_columns(batches: Iterable[pa.RecordBatch], options: Any) -> Iterator[pa.RecordBatch]:
    """``dense_ml_vectors`` over every column of a write's dense vectors: ``vector_column``, and each
    name's of option ``vector_columns`` (a named vector may be a ``VectorUDT`` column as the one is)."""
    columns = [options.vector_column, *(options.vector_columns or {}).values()]
    for column in dict.fromkeys(columns):
        batches = dense_ml_vectors(batches, column)
    return iter(batches)


def dense_ml_vectors(batches: Iterable[pa.RecordBatch], column: str) -> Iterator[pa.RecordBatch]:
    """The batches, with a Spark ML vector column holding sparse vectors made dense (``list<double>``).

    ``VectorUDT`` arrives as ``struct<type: int8, size: int32, indices: list<int32>, values:
    list<double>>``, type 1 dense (all values), type 0 sparse (``size``, non-zero entries). A column
    of dense rows only becomes its ``values`` list, as it is (no copy). Either way the column is
    ``list<double>``, the ML values' own type: a dead letter holds its row's values as they were, and
    every batch's letters have one schema (one of ``list<float>`` beside ``list<double>`` cannot be
    read back as one folder).
    """
    import pyarrow as pa

    for batch in batches:
        index = batch.schema.get_field_index(column)
        typ = batch.schema.field(index).type if index >= 0 else None
        if typ is None or not pa.types.is_struct(typ) or typ.get_field_index("type") < 0:
            yield batch
            continue
        struct = batch.column(index)
        fields = dict(zip(typ.names, struct.flatten(), strict=True))  # flatten() honours slicing
        kinds = fields["type"].fill_null(1).to_numpy(zero_copy_only=False)
        if not (kinds == 0).any():
            yield batch.set_column(index, column, fields["values"])  # flatten() kept the rows' nulls
            continue
        nulls = struct.is_null().to_numpy(zero_copy_only=False)
        yield batch.set_column(index, column, _densify(fields, kinds == 0, nulls))


def _densify(fields: dict[str, Any], sparse: np.ndarray, nulls: np.ndarray) -> pa.Array:
    """Scatter every row's entries into a fresh float64 buffer: dense rows in order, sparse by index."""
    import pyarrow as pa

    n = len(sparse)
    values = fields["values"]
    v_off = values.offsets.to_numpy().astype(np.int64)
    counts = np.diff(v_off)
    sizes = fields["size"].fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    lengths = np.where(nulls, 0, np.where(sparse, sizes, counts))
    offsets = offsets_of(lengths)
    parent = np.repeat(np.arange(n), counts)  # the row of each stored entry
    entries = values.values.slice(v_off[0], v_off[-1] - v_off[0]).to_numpy(zero_copy_only=False)
    where = np.arange(len(parent), dtype=np.int64) - (v_off[parent] - v_off[0])  # position in its row
    in_sparse = sparse[parent]
    if in_sparse.any():
        indices = fields["indices"]
        i_off = indices.offsets.to_numpy().astype(np.int64)
        stored = indices.values.slice(i_off[0], i_off[-1] - i_off[0]).to_numpy(zero_copy_only=False)
        where[in_sparse] = stored[(i_off[parent[in_sparse]] - i_off[0]) + where[in_sparse]]
    keep = ~nulls[parent]
    flat = np.zeros(int(offsets[-1]), dtype=np.float64)
    flat[offsets[parent[keep]] + where[keep]] = entries[keep]
    mask = pa.array(nulls) if nulls.any() else None
    typ = values.type  # the ML values' own list type, element nullability included
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(flat), type=typ, mask=mask)
