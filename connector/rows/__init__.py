"""Input → ``RowBatch``: ids, one contiguous float32 matrix, sparse vectors, metadata.

Every input form (Arrow tables and record batches, dicts, ``VectorRecord``s) goes through
``prepare_arrow`` or ``prepare_dicts``; both end in ``checks.assemble``, the one place
where rows are checked. A row the database could never store (missing/duplicate/long id, null or
wrong-size vector, NaN/Inf, bad sparse indices, oversize metadata) becomes a
``BatchFailure`` with the reason and is not sent; the others continue.

Vectors never become Python floats: an Arrow ``list<float>`` column's values buffer is
viewed as an (n, dim) matrix; other float types are converted once per batch. Several vectors a row
(options ``vector_columns``, ``multi_vector_columns``) are read and checked per name the same way and
reach ``RowBatch.named_vectors`` and ``RowBatch.multi_vectors`` (``MultiVectors``: a multi-vector column's
values buffer and row offsets).

Each row keeps its position in the write's input (``chunks``: the one reading of every input kind
into chunks), on ``RowBatch.positions`` and on every ``BatchFailure``.

Each row is an upsert or a delete (``ops``, option ``op_column``); a batch holds rows of one op, and
the batches of a chunk go out in an order that keeps the same id's rows in input order.

Modules: ``types`` (the shapes and rules), ``ops`` (what each row is for), ``chunks`` (input → chunks
with positions), ``arrow`` and ``dicts`` (the two readers), ``checks``.
"""

from __future__ import annotations

from .arrow import arrow_batches, is_arrow, prepare_arrow
from .checks import metadata_json_len
from .chunks import Chunk, input_chunks, reported_ids
from .dicts import prepare_columns, prepare_dicts
from .ops import DEFAULT_OP_KEY, DELETE, UPSERT, Op
from .types import (
    ID_NAMESPACE,
    Columns,
    ColumnSpec,
    DimensionState,
    InstantText,
    MultiVectors,
    Prepared,
    RowBatch,
    RowRules,
    derive_id,
    flatten,
    offsets_of,
)

__all__ = [
    "DEFAULT_OP_KEY",
    "DELETE",
    "ID_NAMESPACE",
    "UPSERT",
    "Chunk",
    "ColumnSpec",
    "Columns",
    "DimensionState",
    "InstantText",
    "MultiVectors",
    "Op",
    "Prepared",
    "RowBatch",
    "RowRules",
    "arrow_batches",
    "derive_id",
    "flatten",
    "input_chunks",
    "is_arrow",
    "metadata_json_len",
    "offsets_of",
    "prepare_arrow",
    "prepare_columns",
    "prepare_dicts",
    "reported_ids",
]
