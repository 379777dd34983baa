"""``VectorBatch``: the unit the sink sends, one contiguous float32 buffer plus ids and metadata.

A batch is made from canonical rows (``assemble``) as soon as Beam has grouped them, or wraps a
``pyarrow.RecordBatch`` element as it is (``VectorBatch.of_arrow``). ``for_client`` hands the
client the user's Arrow batch, or the canonical rows as the client's ``Columns`` (the flat buffer
as it is), which the client checks as it checks any input. ``dead_letters`` turns a report's
failed ids back into the rows that carried them, for the sink's ``failed`` output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from vectordb.connector.options import BackendOptions
from vectordb.connector.report import BatchFailure
from vectordb.connector.rows import Columns, derive_id, flatten

from .elements import Row, Sparse, jsonable

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["VectorBatch", "assemble"]


@dataclass(slots=True)
class VectorBatch:
    """Rows ready for the client: parallel columns, or a user's Arrow batch (``arrow``) as it came."""

    ids: list[Any]
    flat: np.ndarray  # every dense vector, concatenated: float32, 1-d
    offsets: np.ndarray  # int64, len(ids) + 1: row i is flat[offsets[i]:offsets[i + 1]]
    nulls: np.ndarray | None = None  # bool per row: no dense vector (None: every row has one)
    sparse: list[Sparse | None] | None = None
    metadata: list[dict[str, Any]] | None = None  # None: no row has metadata
    namespace: str | None = None  # shared by every row ...
    namespaces: list[str | None] | None = None  # ... unless they differ
    arrow: pa.RecordBatch | None = None  # set: a user's Arrow batch, read with the user's options

    def __len__(self) -> int:
        return self.arrow.num_rows if self.arrow is not None else len(self.ids)

    def __repr__(self) -> str:
        if self.arrow is not None:
            return f"VectorBatch(arrow, {self.arrow.num_rows} rows)"
        return f"VectorBatch({len(self.ids)} rows, {self.flat.size} floats)"

    @classmethod
    def of_arrow(cls, batch: pa.RecordBatch) -> VectorBatch:
        return cls(ids=[], flat=_NO_FLOATS, offsets=_NO_OFFSETS, arrow=batch)

    # -- for the client ----------------------------------------------------------------------------

    def for_client(self) -> Columns | pa.RecordBatch:
        """What the client writes: a user's Arrow batch as it came, else the rows as ``Columns``
        (the flat buffer as it is: no Arrow to build here and read back in the client)."""
        if self.arrow is not None:
            return self.arrow
        n = len(self.ids)
        sparse = None
        if self.sparse is not None:
            sparse = [None if s is None else {"indices": s[0], "values": s[1]} for s in self.sparse]
        return Columns(
            n=n,
            ids=self.ids,
            flat=self.flat,
            offsets=self.offsets,
            null_vector=self.nulls if self.nulls is not None else np.zeros(n, dtype=bool),
            sparse=sparse,
            metadata=None if self.metadata is None else list(self.metadata),  # every row's a JSON object
            namespaces=self.namespaces,
        )

    def dead_letters(self, failures: Iterable[BatchFailure], options: BackendOptions) -> list[dict[str, Any]]:
        """One dict per failed row: the reason (id, error, error_type, retryable, attempts) and the row."""
        failures = list(failures)
        if not failures:
            return []
        if self.arrow is not None:
            return _arrow_dead_letters(self.arrow, failures, options)
        rows_of = _rows_by_id(self.ids)
        out = []
        for failure in failures:
            for failed_id in failure.ids:
                found = rows_of.get(failed_id)
                record = self._record(found.pop(0)) if found else {}
                out.append(_letter(record, failed_id, failure))
        return out

    def _record(self, i: int) -> dict[str, Any]:
        """Row ``i`` in the client's dict form (``id``, ``values``, ``sparse_values``, ``metadata``, ``namespace``)."""
        record: dict[str, Any] = {"id": self.ids[i]}
        if self.nulls is None or not self.nulls[i]:
            record["values"] = self.flat[self.offsets[i] : self.offsets[i + 1]].tolist()
        if self.sparse is not None and self.sparse[i] is not None:
            indices, values = self.sparse[i]  # type: ignore[misc]
            record["sparse_values"] = {"indices": indices.tolist(), "values": values.tolist()}
        if self.metadata is not None and self.metadata[i]:
            record["metadata"] = jsonable(self.metadata[i])
        namespace = self.namespaces[i] if self.namespaces is not None else self.namespace
        if namespace is not None:
            record["namespace"] = namespace
        return record


_NO_FLOATS = np.zeros(0, dtype=np.float32)
_NO_OFFSETS = np.zeros(1, dtype=np.int64)


def assemble(rows: Sequence[Row]) -> VectorBatch:
    """One batch from canonical rows: a single copy of every vector into one float32 buffer."""
    n = len(rows)
    ids = [r[0] for r in rows]
    flat, offsets, nulls = flatten([r[1] for r in rows])
    sparse = [r[2] for r in rows]
    metadata = [r[3] for r in rows]
    namespaces = [r[4] for r in rows]
    shared = namespaces[0] if n else None
    same_namespace = all(ns == shared for ns in namespaces)
    return VectorBatch(
        ids=ids,
        flat=flat,
        offsets=offsets,
        nulls=nulls if nulls.any() else None,
        sparse=sparse if any(s is not None for s in sparse) else None,
        metadata=metadata if any(metadata) else None,
        namespace=shared if same_namespace else None,
        namespaces=None if same_namespace else namespaces,
    )


# -- dead letters ------------------------------------------------------------------------------------


def _rows_by_id(ids: Sequence[Any]) -> dict[str | None, list[int]]:
    """Failed ids are strings (``None`` for a row without one); a repeated id maps to its rows in turn."""
    rows: dict[str | None, list[int]] = {}
    for i, row_id in enumerate(ids):
        rows.setdefault(None if row_id is None else str(row_id), []).append(i)
    return rows


def _letter(record: dict[str, Any], failed_id: str | None, failure: BatchFailure) -> dict[str, Any]:
    return {
        **record,
        "id": failed_id,
        "error": failure.error,
        "error_type": failure.error_type,
        "retryable": failure.retryable,
        "attempts": failure.attempts,
    }


def _arrow_dead_letters(
    batch: pa.RecordBatch, failures: Iterable[BatchFailure], options: BackendOptions
) -> list[dict[str, Any]]:
    if options.id_from:
        columns = [batch.column(c).to_pylist() for c in options.id_from]
        ids: list[Any] = [derive_id(values) for values in zip(*columns, strict=True)]
    elif options.id_column in batch.schema.names:
        ids = batch.column(options.id_column).to_pylist()
    else:
        ids = [None] * batch.num_rows
    rows_of = _rows_by_id(ids)
    out = []
    for failure in failures:
        for failed_id in failure.ids:
            found = rows_of.get(failed_id)
            record = jsonable(batch.slice(found.pop(0), 1).to_pylist()[0]) if found else {}
            out.append(_letter(record, failed_id, failure))
    return out
