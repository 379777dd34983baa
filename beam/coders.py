"""Beam coders for ``Row`` and ``VectorBatch``: msgpack headers, vectors as raw float32 bytes.

Beam's default coder pickles what it does not know, and a vector held as a Python list costs
about 3× its float32 bytes; these coders write every vector buffer as it is in memory and
decode it back with ``np.frombuffer`` (no copy). They are registered for their types when
``vectordb.beam`` is imported, and matter wherever a runner does not fuse the steps: rows
buffered in ``GroupIntoBatches`` state, batches shuffled between workers. A user's Arrow batch
travels as Arrow IPC. A ``NamedRow`` (named vectors) travels in ``RowCoder`` with each name's vector
and each multi-vector's floats, lengths and null marks as raw buffers; a batch of them is the client's
``Columns``, which travel pickled (protocol 5: their numpy buffers as raw bytes). Metadata values msgpack cannot hold are written as numpy lists/numbers
or, failing that, as ``str(value)``, which is what the JSON sent to the database holds anyway. A
delete's metadata is a ``DeleteMark``, which msgpack would write as a plain ``{}`` (an upsert with no
vector): the wire says which rows are deletes and decoding puts the marks back.
"""

from __future__ import annotations

import pickle
from typing import Any

import msgspec
import numpy as np
from apache_beam.coders import Coder, registry

from vectordb.connector.rows.ops import DeleteMark

from .batch import VectorBatch
from .elements import NamedRow, Row

__all__ = ["RowCoder", "VectorBatchCoder", "register"]


# Buffers are memoryviews both ways: encoded from numpy without a copy, decoded as views of the input.


class _WireSparse(msgspec.Struct, array_like=True):
    indices: memoryview  # int64
    values: memoryview  # float32


class _WireMulti(msgspec.Struct, array_like=True):
    flat: memoryview  # float32
    lengths: memoryview  # int64, one per vector
    nulls: memoryview  # bool, one per vector


class _WireRow(msgspec.Struct, array_like=True):
    id: Any
    vector: memoryview | None
    sparse: _WireSparse | None
    metadata: dict[str, Any]
    namespace: str | None
    named: dict[str, memoryview | None] | None = None  # a NamedRow's vectors
    multi: dict[str, _WireMulti | None] | None = None  # a NamedRow's multi-vectors
    delete: bool = False  # its metadata is a DeleteMark


class _WireBatch(msgspec.Struct, array_like=True):
    ids: list[Any] = []
    flat: memoryview = memoryview(b"")
    offsets: memoryview = memoryview(b"")
    nulls: memoryview | None = None
    sparse: list[_WireSparse | None] | None = None
    metadata: list[dict[str, Any]] | None = None
    namespace: str | None = None
    namespaces: list[str | None] | None = None
    arrow: bytes | None = None  # Arrow IPC stream of a user's batch
    columns: bytes | None = None  # rows with named vectors: the client's Columns, pickled
    deletes: list[int] | None = None  # positions of the rows whose metadata is a DeleteMark


def _enc_hook(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


_ENCODER = msgspec.msgpack.Encoder(enc_hook=_enc_hook)
_NO_FLOATS = np.zeros(0, dtype=np.float32)
_NO_OFFSETS = np.zeros(1, dtype=np.int64)
_ROW_DECODER = msgspec.msgpack.Decoder(_WireRow)
_BATCH_DECODER = msgspec.msgpack.Decoder(_WireBatch)


def _buffer(array: np.ndarray) -> memoryview:
    return np.ascontiguousarray(array).data.cast("B")


def _wire_sparse(sparse: tuple[np.ndarray, np.ndarray] | None) -> _WireSparse | None:
    if sparse is None:
        return None
    return _WireSparse(_buffer(sparse[0].astype(np.int64, copy=False)), _buffer(sparse[1]))


def _sparse_of(wire: _WireSparse | None) -> tuple[np.ndarray, np.ndarray] | None:
    if wire is None:
        return None
    return np.frombuffer(wire.indices, dtype=np.int64), np.frombuffer(wire.values, dtype=np.float32)


class RowCoder(Coder):
    """``Row`` ↔ bytes; the vector as raw float32."""

    def encode(self, value: Row | NamedRow) -> bytes:
        vector = None if value.vector is None else _buffer(value.vector)
        wire = _WireRow(value.id, vector, _wire_sparse(value.sparse), value.metadata, value.namespace)
        if type(value.metadata) is DeleteMark:
            wire.delete = True
        if type(value) is NamedRow:
            wire.named = {name: None if v is None else _buffer(v) for name, v in value.vectors.items()}
            wire.multi = {
                name: None if m is None else _WireMulti(_buffer(m[0]), _buffer(m[1]), _buffer(m[2]))
                for name, m in value.multi_vectors.items()
            }
        return _ENCODER.encode(wire)

    def decode(self, encoded: bytes) -> Row | NamedRow:
        wire = _ROW_DECODER.decode(encoded)
        vector = None if wire.vector is None else np.frombuffer(wire.vector, dtype=np.float32)
        sparse = _sparse_of(wire.sparse)
        metadata = DeleteMark() if wire.delete else wire.metadata
        if wire.named is None and wire.multi is None:
            return Row(wire.id, vector, sparse, metadata, wire.namespace)
        vectors = {
            name: None if v is None else np.frombuffer(v, dtype=np.float32)
            for name, v in (wire.named or {}).items()
        }
        multi = {
            name: None
            if m is None
            else (
                np.frombuffer(m.flat, dtype=np.float32),
                np.frombuffer(m.lengths, dtype=np.int64),
                np.frombuffer(m.nulls, dtype=bool),
            )
            for name, m in (wire.multi or {}).items()
        }
        return NamedRow(wire.id, None, sparse, metadata, wire.namespace, vectors, multi)

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
    """``VectorBatch`` ↔ bytes; the flat vector buffer as raw float32, a user's Arrow batch as Arrow IPC."""

    def encode(self, value: VectorBatch) -> bytes:
        if value.arrow is not None:
            return _ENCODER.encode(_WireBatch(arrow=_arrow_bytes(value.arrow)))
        if value.columns is not None:
            columns = pickle.dumps(value.columns, protocol=5)
            return _ENCODER.encode(_WireBatch(columns=columns, namespace=value.namespace))
        wire = _WireBatch(
            ids=value.ids,
            flat=_buffer(value.flat),
            offsets=_buffer(value.offsets),
            nulls=None if value.nulls is None else _buffer(value.nulls),
            sparse=None if value.sparse is None else [_wire_sparse(s) for s in value.sparse],
            metadata=value.metadata,
            namespace=value.namespace,
            namespaces=value.namespaces,
        )
        if value.metadata is not None:
            deletes = [i for i, m in enumerate(value.metadata) if type(m) is DeleteMark]
            wire.deletes = deletes or None
        return _ENCODER.encode(wire)

    def decode(self, encoded: bytes) -> VectorBatch:
        wire = _BATCH_DECODER.decode(encoded)
        if wire.arrow is not None:
            return VectorBatch.of_arrow(_arrow_batch(wire.arrow))
        if wire.columns is not None:
            columns = pickle.loads(wire.columns)  # written by encode above, in this pipeline
            return VectorBatch(
                ids=columns.ids,
                flat=_NO_FLOATS,
                offsets=_NO_OFFSETS,
                namespace=wire.namespace,
                columns=columns,
            )
        if wire.deletes is not None and wire.metadata is not None:
            for i in wire.deletes:
                wire.metadata[i] = DeleteMark()
        return VectorBatch(
            ids=wire.ids,
            flat=np.frombuffer(wire.flat, dtype=np.float32),
            offsets=np.frombuffer(wire.offsets, dtype=np.int64),
            nulls=None if wire.nulls is None else np.frombuffer(wire.nulls, dtype=bool),
            sparse=None if wire.sparse is None else [_sparse_of(s) for s in wire.sparse],
            metadata=wire.metadata,
            namespace=wire.namespace,
            namespaces=wire.namespaces,
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
    """Make Beam use these coders for PCollections typed ``Row`` / ``VectorBatch``."""
    registry.register_coder(Row, RowCoder)
    registry.register_coder(VectorBatch, VectorBatchCoder)
