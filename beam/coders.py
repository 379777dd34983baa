"""Beam coders for ``Row`` and ``VectorBatch``: msgpack headers, vectors as raw float32 bytes.

Beam's default coder pickles what it does not know, and a vector held as a Python list costs
about 3× its float32 bytes; these coders write every vector buffer as it is in memory and
decode it back with ``np.frombuffer`` (no copy). They are registered for their types when
``vectordb.beam`` is imported, and matter wherever a runner does not fuse the steps: rows
buffered in ``GroupIntoBatches`` state, batches shuffled between workers. A user's Arrow batch
travels as Arrow IPC. A ``NamedRow`` (named vectors) travels in ``RowCoder`` with each name's vector
and each multi-vector's floats, lengths and null marks as raw buffers; a batch of them is the client's
``Columns``, which travel pickled (protocol 5: their numpy buffers as raw bytes).

Ids, namespaces and metadata come back exactly as they went in (type, value, time zone, order): what
the sink writes, or why it fails a row, must not depend on whether the runner encoded the row. They
travel as msgpack while they are plain (text, ints within 64 bits, floats, bools, None, and for a row
lists and dicts of them), which msgpack gives back as they are; anything else (a datetime, which msgpack
re-zoned to UTC; a numpy value, a float32 widened or a datetime64 turned into an int; a tuple; a
Decimal; an int beyond 64 bits or text with a lone surrogate, which msgpack cannot write, so one such
row stopped the pipeline) makes the row's ids, namespace and metadata travel pickled (protocol 5)
instead, and the sink's checks see what the user sent. A batch's travel pickled unless every one is a
scalar: over many rows a walk into lists and dicts costs more than pickle. The check of the types is
what a plain row pays for this, done in C where it can be (a call per value would cost more than the
value's encoding). A delete's metadata is a ``DeleteMark``, which msgpack would write as a plain ``{}`` (an upsert with no vector): the wire says
which rows are deletes and decoding puts the marks back.

Dead letters (the sink's ``failed`` and ``refused`` outputs) and ``vectordb-beam``'s parsed JSON Lines records
are typed ``EXACT``: ``Any`` to Beam's type checks, carried by ``ExactCoder``, pickled. Beam's coders for
``dict[str, Any]`` and ``Any`` write text as strict UTF-8, so a row holding a lone surrogate, which the sink
fails alone, stopped the pipeline.
"""

from __future__ import annotations

import pickle
from itertools import chain
from typing import Any

import msgspec
import numpy as np
from apache_beam.coders import Coder, registry
from apache_beam.typehints.typehints import AnyTypeConstraint

from vectordb.connector.rows.ops import DeleteMark

from .batch import VectorBatch
from .elements import NamedRow, Row

__all__ = ["EXACT", "ExactCoder", "RowCoder", "VectorBatchCoder", "register"]


# Buffers are memoryviews both ways: encoded from numpy without a copy, decoded as views of the input.


class _WireSparse(msgspec.Struct, array_like=True):
    indices: memoryview  # int64
    values: memoryview  # float32


class _WireMulti(msgspec.Struct, array_like=True):
    flat: memoryview  # float32
    lengths: memoryview  # int64, one per vector
    nulls: memoryview  # bool, one per vector


class _WireRow(msgspec.Struct, array_like=True):
    id: Any  # Any, as metadata and namespace: the sink, not the coder, says what it refuses
    vector: memoryview | None
    sparse: _WireSparse | None
    metadata: Any
    namespace: Any
    named: dict[str, memoryview | None] | None = None  # a NamedRow's vectors
    multi: dict[str, _WireMulti | None] | None = None  # a NamedRow's multi-vectors
    delete: bool = False  # its metadata is a DeleteMark
    exact: bytes | None = None  # (id, metadata, namespace) pickled, when they are not plain


class _WireBatch(msgspec.Struct, array_like=True):
    ids: Any = []
    flat: memoryview = memoryview(b"")
    offsets: memoryview = memoryview(b"")
    nulls: memoryview | None = None
    sparse: list[_WireSparse | None] | None = None
    metadata: Any = None
    namespace: Any = None
    namespaces: Any = None
    arrow: bytes | None = None  # Arrow IPC stream of a user's batch
    columns: bytes | None = None  # rows with named vectors: (the client's Columns, namespace), pickled
    deletes: list[int] | None = None  # positions of the rows whose metadata is a DeleteMark
    exact: bytes | None = None  # (ids, metadata, namespace, namespaces) pickled, when they are not plain
    records: bytes | None = None  # the batch's elements as read (``VectorBatch.records``), pickled


# what msgpack gives back as it is; ints only within 64 bits, but beyond them the encoder raises
_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_MAPPINGS: frozenset[type] = frozenset((dict, DeleteMark))  # a DeleteMark is empty, its mark travels aside
# what encoding a plain value can still raise: an int beyond 64 bits, text with a lone surrogate
_UNENCODABLE = (OverflowError, UnicodeEncodeError)


def _refuse(value: Any) -> Any:
    # no value msgpack does not know (numpy, a user's class) is ever turned into another (the old hook
    # wrote str(value) or .tolist()): the rows are checked first, so this raising is a bug to see
    raise TypeError(f"{type(value).__name__} in values checked as plain")


_ENCODER = msgspec.msgpack.Encoder(enc_hook=_refuse)
_FLOAT32 = np.dtype(np.float32)
_NO_FLOATS = np.zeros(0, dtype=np.float32)
_NO_OFFSETS = np.zeros(1, dtype=np.int64)
_ROW_DECODER = msgspec.msgpack.Decoder(_WireRow)
_BATCH_DECODER = msgspec.msgpack.Decoder(_WireBatch)
_new_row = tuple.__new__  # a Row without NamedTuple's keyword handling, as the reader builds them


def _buffer(array: np.ndarray) -> memoryview:
    return np.ascontiguousarray(array).data  # msgpack writes its bytes whatever the item type


def _wire_sparse(sparse: tuple[np.ndarray, np.ndarray]) -> _WireSparse:
    return _WireSparse(_buffer(sparse[0].astype(np.int64, copy=False)), _buffer(sparse[1]))


def _sparse_of(wire: _WireSparse) -> tuple[np.ndarray, np.ndarray]:
    return np.frombuffer(wire.indices, dtype=np.int64), np.frombuffer(wire.values, dtype=_FLOAT32)


def _plain(value: Any) -> bool:
    """Whether msgpack gives ``value`` back as it is: scalars of ``_SCALARS``, lists and dicts of them.

    A datetime would come back re-zoned to UTC, a date or a Decimal as text, a tuple as a list, a numpy
    value not at all. Types are looked at in C first: a call per value costs more than its encoding.
    """
    kind = type(value)
    if kind is list:
        return _SCALARS.issuperset(map(type, value)) or all(map(_plain, value))
    if kind is dict:
        return _plain_dict(value)
    return kind in _SCALARS


def _plain_dict(value: dict[Any, Any]) -> bool:
    """``_plain`` of a dict (its keys are scalars or not plain: a list or a dict is no key)."""
    values = value.values()
    plain_values = _SCALARS.issuperset(map(type, values)) or all(map(_plain, values))
    return plain_values and _SCALARS.issuperset(map(type, value))


def _flat_batch(
    ids: list[Any], metadata: list[Any] | None, namespace: Any, namespaces: list[Any] | None
) -> bool:
    """Whether a batch's ids, namespaces and metadata keys and values are all scalars of ``_SCALARS``
    (a ``DeleteMark`` is empty: its mark travels as the batch's deletes); looked at in C, every row's
    metadata in one pass. Anything else is pickled: cheaper than a walk row by row."""
    if type(namespace) not in _SCALARS or not _SCALARS.issuperset(map(type, ids)):
        return False
    if namespaces is not None and not _SCALARS.issuperset(map(type, namespaces)):
        return False
    if metadata is None:
        return True
    return (
        _MAPPINGS.issuperset(map(type, metadata))
        and _SCALARS.issuperset(map(type, chain.from_iterable(map(dict.values, metadata))))
        and _SCALARS.issuperset(map(type, chain.from_iterable(metadata)))  # keys
    )


class RowCoder(Coder):
    """``Row`` ↔ bytes; the vector as raw float32, the rest exactly (msgpack, or pickle)."""

    def encode(self, value: Row | NamedRow) -> bytes:
        row_id, vector, sparse, metadata, namespace = value[:5]
        vector_buffer = None if vector is None else _buffer(vector)
        sparse_buffers = None if sparse is None else _wire_sparse(sparse)
        mark = type(metadata) is DeleteMark
        plain = (
            type(row_id) in _SCALARS
            and type(namespace) in _SCALARS
            and (mark or (type(metadata) is dict and _plain_dict(metadata)))
        )
        if plain and not mark and type(value) is Row:
            try:  # the usual row: _WireRow's first fields as a tuple, which costs less than the Struct
                return _ENCODER.encode((row_id, vector_buffer, sparse_buffers, metadata, namespace))
            except _UNENCODABLE:
                plain = False
        wire = _WireRow(row_id, vector_buffer, sparse_buffers, metadata, namespace, delete=mark)
        if type(value) is NamedRow:
            wire.named = {name: None if v is None else _buffer(v) for name, v in value.vectors.items()}
            wire.multi = {
                name: None if m is None else _WireMulti(_buffer(m[0]), _buffer(m[1]), _buffer(m[2]))
                for name, m in value.multi_vectors.items()
            }
        if plain:
            try:
                return _ENCODER.encode(wire)
            except _UNENCODABLE:
                pass
        wire.id = wire.metadata = wire.namespace = None
        wire.delete = False
        wire.exact = pickle.dumps((row_id, metadata, namespace), protocol=5)
        return _ENCODER.encode(wire)

    def decode(self, encoded: bytes) -> Row | NamedRow:
        wire = _ROW_DECODER.decode(encoded)
        vector = None if wire.vector is None else np.frombuffer(wire.vector, dtype=_FLOAT32)
        sparse = None if wire.sparse is None else _sparse_of(wire.sparse)
        if wire.exact is not None:
            row_id, metadata, namespace = pickle.loads(wire.exact)  # written by encode above
        else:
            row_id, namespace = wire.id, wire.namespace
            metadata = DeleteMark() if wire.delete else wire.metadata
        if wire.named is None and wire.multi is None:
            return _new_row(Row, (row_id, vector, sparse, metadata, namespace))
        vectors = {
            name: None if v is None else np.frombuffer(v, dtype=_FLOAT32)
            for name, v in (wire.named or {}).items()
        }
        multi = {
            name: None
            if m is None
            else (
                np.frombuffer(m.flat, dtype=_FLOAT32),
                np.frombuffer(m.lengths, dtype=np.int64),
                np.frombuffer(m.nulls, dtype=bool),
            )
            for name, m in (wire.multi or {}).items()
        }
        return NamedRow(row_id, None, sparse, metadata, namespace, vectors, multi)

    def estimate_size(self, value: Row) -> int:
        # runners sample sizes of many elements: guess, rather than encode the vector again
        return 64 + (0 if value.vector is None else value.vector.nbytes) + 32 * len(value.metadata)

    def is_deterministic(self) -> bool:
        return False  # metadata dicts keep insertion order

    def to_type_hint(self) -> type:
        return Row

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class VectorBatchCoder(Coder):
    """``VectorBatch`` ↔ bytes; the flat vector buffer as raw float32, a user's Arrow batch as Arrow IPC,
    ids, metadata and namespaces exactly (msgpack, or pickle)."""

    def encode(self, value: VectorBatch) -> bytes:
        # the elements as read, in every form: a batch's dead letters are built from them, and without
        # them a runner that encodes batches would give letters of another shape (the client's dicts)
        records = None if value.records is None else pickle.dumps(value.records, protocol=5)
        if value.arrow is not None:
            return _ENCODER.encode(_WireBatch(arrow=_arrow_bytes(value.arrow), records=records))
        if value.columns is not None:  # the namespace pickled beside: it may be any value too
            columns = pickle.dumps((value.columns, value.namespace), protocol=5)
            return _ENCODER.encode(_WireBatch(columns=columns, records=records))
        ids, metadata, namespace, namespaces = value.ids, value.metadata, value.namespace, value.namespaces
        wire = _WireBatch(
            flat=_buffer(value.flat),
            offsets=_buffer(value.offsets),
            nulls=None if value.nulls is None else _buffer(value.nulls),
            sparse=None
            if value.sparse is None
            else [None if s is None else _wire_sparse(s) for s in value.sparse],
            records=records,
        )
        if _flat_batch(ids, metadata, namespace, namespaces):
            wire.ids, wire.metadata, wire.namespace, wire.namespaces = ids, metadata, namespace, namespaces
            if metadata is not None and DeleteMark in {*map(type, metadata)}:  # no loop without deletes
                wire.deletes = [i for i, m in enumerate(metadata) if type(m) is DeleteMark]
            try:
                return _ENCODER.encode(wire)
            except _UNENCODABLE:
                wire.ids, wire.metadata, wire.namespace, wire.namespaces, wire.deletes = (
                    [],
                    None,
                    None,
                    None,
                    None,
                )
        wire.exact = pickle.dumps((ids, metadata, namespace, namespaces), protocol=5)
        return _ENCODER.encode(wire)

    def decode(self, encoded: bytes) -> VectorBatch:
        wire = _BATCH_DECODER.decode(encoded)
        batch = self._batch(wire)
        if wire.records is not None:
            batch.records = pickle.loads(wire.records)  # written by encode above
        return batch

    def _batch(self, wire: _WireBatch) -> VectorBatch:
        if wire.arrow is not None:
            return VectorBatch.of_arrow(_arrow_batch(wire.arrow))
        if wire.columns is not None:
            columns, namespace = pickle.loads(wire.columns)  # written by encode above, in this pipeline
            return VectorBatch(
                ids=columns.ids,
                flat=_NO_FLOATS,
                offsets=_NO_OFFSETS,
                namespace=namespace,
                columns=columns,
            )
        if wire.exact is not None:
            ids, metadata, namespace, namespaces = pickle.loads(wire.exact)  # written by encode above
        else:
            ids, metadata, namespace, namespaces = wire.ids, wire.metadata, wire.namespace, wire.namespaces
            for i in wire.deletes or ():
                metadata[i] = DeleteMark()
        return VectorBatch(
            ids=ids,
            flat=np.frombuffer(wire.flat, dtype=_FLOAT32),
            offsets=np.frombuffer(wire.offsets, dtype=np.int64),
            nulls=None if wire.nulls is None else np.frombuffer(wire.nulls, dtype=bool),
            sparse=None
            if wire.sparse is None
            else [None if s is None else _sparse_of(s) for s in wire.sparse],
            metadata=metadata,
            namespace=namespace,
            namespaces=namespaces,
        )

    def estimate_size(self, value: VectorBatch) -> int:
        if value.arrow is not None:
            return int(value.arrow.nbytes)
        if value.columns is not None:
            named = sum(c.flat.nbytes for c in value.columns.named.values())
            return int(named + sum(c.flat.nbytes for c in value.columns.multi.values())) + 32 * len(value)
        return int(value.flat.nbytes) + 32 * len(value.ids)

    def is_deterministic(self) -> bool:
        return False

    def to_type_hint(self) -> type:
        return VectorBatch

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class _Exact(AnyTypeConstraint):
    """``Any`` to Beam's type checks, the type ``ExactCoder`` is registered for."""


EXACT = _Exact()  # the type of dead letters, and of JSON Lines records as parsed


class ExactCoder(Coder):
    """A value ↔ bytes, pickled (protocol 5), given back as it went in: text with a lone surrogate, which
    UTF-8 cannot carry, an int beyond 64 bits, as ``RowCoder``'s fields that msgpack cannot carry."""

    def encode(self, value: Any) -> bytes:
        return pickle.dumps(value, protocol=5)

    def decode(self, encoded: bytes) -> Any:
        return pickle.loads(encoded)  # written by encode above, in this pipeline

    def is_deterministic(self) -> bool:
        return False

    def to_type_hint(self) -> Any:
        return EXACT

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


def _arrow_bytes(batch: Any) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _arrow_batch(data: bytes) -> Any:
    import pyarrow as pa

    with pa.ipc.open_stream(pa.py_buffer(data)) as reader:
        return reader.read_next_batch()


def register() -> None:
    """Make Beam use these coders for PCollections typed ``Row`` / ``VectorBatch`` / ``EXACT``."""
    registry.register_coder(Row, RowCoder)
    registry.register_coder(VectorBatch, VectorBatchCoder)
    registry.register_coder(_Exact, ExactCoder)
