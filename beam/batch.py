"""``VectorBatch``: the unit the sink sends, one contiguous float32 buffer plus ids and metadata.

A batch is made from canonical rows (``assemble``) as soon as Beam has grouped them, or wraps a
``pyarrow.RecordBatch`` element as it is (``VectorBatch.of_arrow``). ``for_client`` hands the
client the user's Arrow batch, or the canonical rows as the client's ``Columns`` (the flat buffer
as it is), which the client checks as it checks any input. ``dead_letters`` gives the failed rows of
a batch's write, whole, for the sink's ``failed`` output: the core's dead letters, as JSON-ready dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from vectordb.connector.dead_letters import dead_letters
from vectordb.connector.report import BatchFailure, WriteReport
from vectordb.connector.rows import Columns, ColumnSpec, flatten

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

    def dead_letters(
        self, report: WriteReport | Iterable[BatchFailure], spec: ColumnSpec
    ) -> list[dict[str, Any]]:
        """One dict per failed row of this batch's write (``report``, written with the client's column
        options ``spec``): the reason (``id``, ``error``, ``error_type``, ``retryable``, ``attempts``)
        and the row, a user's Arrow row with its own columns, canonical rows in the client's dict
        form; numpy values as Python ones, ready for ``json.dumps``."""
        letters = dead_letters(self.for_client(), report, spec, self.namespace)
        rows = letters if isinstance(letters, list) else letters.to_pylist()
        return [jsonable(letter) for letter in rows]


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
