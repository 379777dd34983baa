"""Spark ML ``VectorUDT`` columns as the list columns the connector reads: Spark's business, not the core's.

``VectorUDT`` arrives as ``struct<type: int8, size: int32, indices: list<int32>, values: list<double>>``,
type 1 dense (all values), type 0 sparse (``size``, non-zero entries). PySpark checks a vector it makes
(``SparseVector``), but nothing checks one read from a file with a user schema: a sparse row whose
index is out of its size, whose indices are not strictly increasing, or whose indices and values differ
in number is no vector. Such a row is refused here, alone, with a reason naming the column: its vector
becomes null and the task reports it failed (``task.py``); scattered anyway, its values would land in
another row's vector, or out of the buffer. A delete row's vector is not read (option ``op_column``):
a malformed one only becomes null.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from vectordb.connector.rows import DELETE, offsets_of
from vectordb.connector.rows.ops import CODES, arrow_ops

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["dense_ml_columns", "dense_ml_vector", "ml_columns"]

MAX_SIZE = 65_536  # option dimension's bound: no target takes a longer vector, and none is allocated


def ml_columns(
    batches: Iterable[pa.RecordBatch], options: Any
) -> Iterator[tuple[pa.RecordBatch, dict[int, str]]]:
    """Each batch with ``dense_ml_vector`` applied to every column of the write's dense vectors
    (``vector_column``, and each name's of option ``vector_columns``), and the upsert rows refused (row
    index → reason; a row refused under two columns has the first one's)."""
    stated = {options.vector_column: options.dimension}
    for name, column in (options.vector_columns or {}).items():
        stated[column] = (options.vector_dimensions or {}).get(name)
    for batch in batches:
        refused: dict[int, str] = {}
        for column, dimension in stated.items():
            batch, bad = dense_ml_vector(batch, column, dimension)
            refused = {**bad, **refused}
        if refused and options.op_column and options.op_column in batch.schema.names:
            codes, _ = arrow_ops(batch.column(options.op_column), options.op_column)
            refused = {i: why for i, why in refused.items() if codes[i] != CODES[DELETE]}
        yield batch, refused


def dense_ml_columns(batches: Iterable[pa.RecordBatch], options: Any) -> Iterator[pa.RecordBatch]:
    """The batches of ``ml_columns`` alone, for their schema (the driver's check of an empty batch); a
    batch with a row refused is an error here, as a write must report that row (``ml_columns``)."""
    for batch, refused in ml_columns(batches, options):
        if refused:
            raise ValueError(f"rows refused, which dense_ml_columns cannot report: {refused}")
        yield batch


def dense_ml_vector(
    batch: pa.RecordBatch, column: str, dimension: int | None = None
) -> tuple[pa.RecordBatch, dict[int, str]]:
    """The batch with a Spark ML vector column made ``list<double>``, and the rows whose vector is
    malformed (row index → reason, the column named): theirs is null. ``dimension``: the write's, when
    known: a sparse row of a larger size is refused before any buffer is made for it.

    A column of dense rows only becomes its ``values`` list, as it is (no copy). Either way the column is
    ``list<double>``, the ML values' own type: a dead letter holds its row's values as they were, and
    every batch's letters have one schema (one of ``list<float>`` beside ``list<double>`` cannot be
    read back as one folder). Any other column passes unchanged.
    """
    import pyarrow as pa

    index = batch.schema.get_field_index(column)
    typ = batch.schema.field(index).type if index >= 0 else None
    if typ is None or not pa.types.is_struct(typ) or typ.get_field_index("type") < 0:
        return batch, {}
    struct = batch.column(index)
    fields = dict(zip(typ.names, struct.flatten(), strict=True))  # flatten() honours slicing and nulls
    nulls = _is_null(struct)
    kinds = fields["type"].fill_null(-1).to_numpy(zero_copy_only=False)
    sparse = (kinds == 0) & ~nulls
    bad = _malformed(fields, kinds, sparse, nulls, min(dimension or MAX_SIZE, MAX_SIZE))
    if not sparse.any() and not bad:
        return batch.set_column(index, column, fields["values"]), {}  # flatten() kept the rows' nulls
    gone = nulls | _is_null(fields["values"])  # no vector: a null one, a dense one without values
    gone[list(bad)] = True
    dense = _densify(fields, sparse & ~gone, gone)
    return batch.set_column(index, column, dense), {i: f"column {column!r}: {why}" for i, why in bad.items()}


def _malformed(
    fields: dict[str, Any], kinds: np.ndarray, sparse: np.ndarray, nulls: np.ndarray, most: int
) -> dict[int, str]:
    """The rows that are no vector (row → why, the first of its faults), checked column-wise: a type
    neither 0 nor 1; a sparse row without indices or values, of a size outside 0..``most``, with as many
    indices as values not, or an index null, outside 0..size-1, or not above the one before it."""
    n = len(kinds)
    indices, values = fields["indices"], fields["values"]
    sizes = fields["size"].fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    i_off = indices.offsets.to_numpy().astype(np.int64)
    i_counts = np.diff(i_off)
    v_counts = np.diff(values.offsets.to_numpy().astype(np.int64))
    lacking = sparse & (_is_null(indices) | _is_null(values))
    bad: dict[int, str] = {}
    for rows, why in (
        (
            ~nulls & (kinds != 0) & (kinds != 1),
            lambda i: f"ML vector type {fields['type'][i].as_py()} is neither 0 (sparse) nor 1 (dense)",
        ),
        (lacking, lambda i: "sparse ML vector without indices or values"),
        (
            sparse & ((sizes < 0) | (sizes > most)),
            lambda i: f"sparse ML vector size {fields['size'][i].as_py()} is outside 0..{most}",
        ),
        (
            sparse & (i_counts != v_counts),
            lambda i: f"sparse ML vector has {i_counts[i]} indices but {v_counts[i]} values",
        ),
    ):
        for i in np.flatnonzero(rows).tolist():
            bad.setdefault(i, why(i))
    checked = sparse & ~lacking  # the stored indices below are these rows' own
    if not checked.any():
        return bad
    row = np.repeat(np.arange(n), i_counts)  # the row of each stored index
    entries = indices.values.slice(i_off[0], i_off[-1] - i_off[0])
    missing = _is_null(entries)
    at = entries.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    mine = checked[row]
    outside = mine & ~missing & ((at < 0) | (at >= sizes[row]))
    unordered = np.zeros(len(at), dtype=bool)
    unordered[1:] = mine[1:] & (row[1:] == row[:-1]) & (at[1:] <= at[:-1])
    for flags, why in (
        (mine & missing, lambda k: "sparse ML vector holds a null index"),
        (outside, lambda k: f"sparse ML vector index {at[k]} is outside 0..{sizes[row[k]] - 1}"),
        (unordered, lambda k: "sparse ML vector indices are not strictly increasing"),
    ):
        rows, first = np.unique(row[flags], return_index=True)  # each row's first such index
        for i, k in zip(rows.tolist(), np.flatnonzero(flags)[first].tolist(), strict=True):
            bad.setdefault(i, why(k))
    return bad


def _is_null(array: pa.Array) -> np.ndarray:
    return array.is_null().to_numpy(zero_copy_only=False)


def _densify(fields: dict[str, Any], sparse: np.ndarray, nulls: np.ndarray) -> pa.Array:
    """Scatter every row's entries into a fresh float64 buffer: dense rows in order, sparse by index
    (``sparse``: rows checked sound by ``_malformed``; ``nulls``: rows that become null)."""
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
