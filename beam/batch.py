"""``VectorBatch``: the unit the sink sends, one contiguous float32 buffer plus ids and metadata.

A batch is made from canonical rows (``assemble``) as soon as Beam has grouped them, or wraps a
``pyarrow.RecordBatch`` element as it is (``VectorBatch.of_arrow``). ``for_client`` hands the
client the user's Arrow batch, or the canonical rows as the client's ``Columns`` (the flat buffer
as it is), which the client checks as it checks any input. ``dead_letters`` gives the failed rows of
a batch's write, whole, for the sink's ``failed`` output: the core's dead letters, as JSON-ready dicts.
A batch holds its elements as they came (``records``: each one as the sink's reader read it, a dict's
own self), and its letters are built from them, as the core builds them for a list of dicts: a
letter is the element (its own keys, its floats as given, a null as null) and the reason, so a
fixed letter goes back through the sink (after ``rows_from_letters``) as the element it was. The rows alone would give other keys (``values``,
``vectors``, ``metadata``) and floats widened from float32.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from vectordb.connector.dead_letters import dead_letters
from vectordb.connector.report import BatchFailure, WriteReport
from vectordb.connector.rows import Columns, ColumnSpec, flatten
from vectordb.connector.rows.dicts import columns_of
from vectordb.connector.rows.text import readable_pylist

from .elements import NamedRow, Row, Sparse, jsonable

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
    # set: rows with named vectors (``NamedRow``), already the client's ``Columns`` (each name's
    # vectors one float32 buffer, ``rows.dicts.columns_of``)
    columns: Columns | None = None
    # each row's element as the reader read it, in row order, or pickled (bytes: as it travelled
    # through the runner's batching): what its dead letter holds (None: the letters are built from
    # the rows, in the client's dict form); coders.VectorBatchCoder carries them
    records: list[Mapping[str, Any] | bytes] | None = None

    def __len__(self) -> int:
        if self.columns is not None:
            return self.columns.n
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
        if self.columns is not None:
            return dataclasses.replace(self.columns)  # the client may give it other ids; this one stays
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
            own_namespaces=True,
        )

    def dead_letters(
        self, report: WriteReport | Iterable[BatchFailure], spec: ColumnSpec
    ) -> list[dict[str, Any]]:
        """One dict per failed row of this batch's write (``report``, written with the client's column
        options ``spec``): the reason (``id``, ``error``, ``error_type``, ``retryable``, ``attempts``)
        and the row: a user's Arrow row with its own columns, an element as it came (``records``);
        numpy values as Python ones, ready for ``json.dumps``."""
        rows: Any = self.for_client()
        if self.records is not None:
            rows = [pickle.loads(r) if type(r) is bytes else r for r in self.records]  # the sink pickled them
        letters = dead_letters(rows, report, spec, self.namespace)
        # text that is not UTF-8 stays its bytes
        found = letters if isinstance(letters, list) else readable_pylist(letters)
        return [jsonable(letter) for letter in found]


_NO_FLOATS = np.zeros(0, dtype=np.float32)
_NO_OFFSETS = np.zeros(1, dtype=np.int64)


def assemble(
    rows: Sequence[Row],
    records: list[Mapping[str, Any] | bytes] | None = None,
    named_columns: Mapping[str, str] | None = None,
) -> VectorBatch:
    """One batch from canonical rows: a single copy of every vector into one float32 buffer; ``records``,
    the rows' elements as read, are kept for the dead letters; ``named_columns`` (each vector name's input
    column) lets the client's checks name the column of a bad named vector."""
    n = len(rows)
    if not n:
        return VectorBatch(ids=[], flat=_NO_FLOATS, offsets=_NO_OFFSETS)
    if any(type(row) is NamedRow for row in rows):
        return _named(rows, records, named_columns)
    ids, vectors, sparse, metadata, namespaces = (list(column) for column in zip(*rows, strict=True))
    flat, offsets, nulls = _joined(vectors)
    shared = _shared_namespace(namespaces)
    return VectorBatch(
        ids=ids,
        flat=flat,
        offsets=offsets,
        nulls=nulls if nulls is not None and nulls.any() else None,
        sparse=sparse if sparse.count(None) != n else None,  # (indices, values) tuples never equal None
        metadata=metadata if any(metadata) else None,
        namespace=shared,
        namespaces=None if shared is not None or namespaces.count(None) == n else namespaces,
        records=records,
    )


def _named(
    rows: Sequence[Row | NamedRow],
    records: list[Mapping[str, Any] | bytes] | None,
    named_columns: Mapping[str, str] | None,
) -> VectorBatch:
    """A batch of rows with named vectors (a delete among them is a plain ``Row``): as the client's
    ``Columns``, every name's vectors copied once into a buffer of its own."""
    namespace = _shared_namespace([row[4] for row in rows])
    columns = columns_of(rows, namespace)
    columns.named_columns = dict(named_columns or {})  # the client reads Columns as they are
    return VectorBatch(
        ids=columns.ids,
        flat=_NO_FLOATS,
        offsets=_NO_OFFSETS,
        namespace=namespace,
        columns=columns,
        records=records,
    )


def _shared_namespace(namespaces: list[str | None]) -> str | None:
    """The namespace every row has, or ``None`` (none, or they differ: then each row says its own)."""
    first = namespaces[0]
    return first if namespaces.count(first) == len(namespaces) else None  # == is identity or text


def _joined(vectors: list[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``flatten`` of rows' vectors; rows of one length, each one contiguous buffer (as read), are joined
    as bytes: one C loop of copies instead of numpy's per-array work, about a third less CPU a row."""
    lengths = [-1 if v is None else v.size for v in vectors]
    dim = lengths[0]
    if dim <= 0 or lengths.count(dim) != len(lengths):
        return flatten(vectors)
    try:
        joined = b"".join(vectors)  # type: ignore[arg-type]  # float32 buffers; a strided one raises
    except (TypeError, BufferError):
        return flatten(vectors)
    flat = np.frombuffer(joined, dtype=np.float32)
    return flat, np.arange(0, dim * (len(vectors) + 1), dim, dtype=np.int64)[: len(vectors) + 1], None
