"""Beam elements → canonical rows: one small tuple per element, whatever the element's type.

Elements may be dicts (vectors as lists or numpy arrays), ``beam.Row``s and other named
tuples, or ``apache_beam.ml.rag`` ``Chunk``/``EmbeddableItem``s; ``pyarrow`` batches bypass
this module (the client reads them as they are). The column options are applied here, as the
client applies them to dicts: ``id_column`` or ``id_from`` (a deterministic
UUIDv5, the same as the client and Spark derive), ``vector_column``, ``sparse_column`` (default
key ``sparse_values``), ``namespace_column`` (default key ``namespace``, else option
``namespace``), ``metadata_columns`` (default: every other key, with a ``metadata`` dict or JSON
object merged in).

A ``Row`` is ``(id, vector, sparse, metadata, namespace)``: the vector a 1-d float32 array, so a
row is encoded as one buffer (``RowCoder``), never as a list of Python floats. Checks that need the whole
batch (dimension, duplicates, NaN, sparse order, metadata size) stay in the client; this module
refuses only what cannot become a row at all (a vector or sparse vector that is not numbers, an
id that is neither a string nor an integer, metadata that is not a JSON object).
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import orjson

from vectordb.connector.options import BackendOptions
from vectordb.connector.rows import derive_id

__all__ = ["ElementReader", "Refusal", "Row", "jsonable"]

Sparse = tuple[np.ndarray, np.ndarray]  # (int64 indices, float32 values); validated by the client


class Row(NamedTuple):
    """One element, read: what the sink sends for it."""

    id: Any  # str or int; None or other types are refused by the client with the reason
    vector: np.ndarray | None  # 1-d float32
    sparse: Sparse | None
    metadata: dict[str, Any]
    namespace: str | None


@dataclass(frozen=True, slots=True)
class Refusal:
    """An element that cannot become a row: its dead letter, ready to emit."""

    dead_letter: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ElementReader:
    """Reads elements with the job's column options; small and picklable (it travels in the DoFn)."""

    id_column: str = "id"
    id_from: tuple[str, ...] = ()
    vector_column: str = "values"
    sparse_key: str = "sparse_values"
    namespace_key: str = "namespace"
    metadata_columns: tuple[str, ...] | None = None
    namespace: str | None = None  # the job's namespace, for rows that name none
    content_key: str | None = "content"  # where a Chunk's text goes in the metadata
    used: frozenset[str] = field(init=False)  # keys that are not metadata ("metadata" is merged)

    def __post_init__(self) -> None:
        used = {self.vector_column, self.sparse_key, self.namespace_key, "metadata"}
        if not self.id_from:
            used.add(self.id_column)  # id_from columns stay metadata, as the client keeps them
        object.__setattr__(self, "used", frozenset(used))

    @classmethod
    def from_options(cls, options: BackendOptions, content_key: str | None = "content") -> ElementReader:
        return cls(
            id_column=options.id_column,
            id_from=tuple(options.id_from or ()),
            vector_column=options.vector_column,
            sparse_key=options.sparse_column or "sparse_values",
            namespace_key=options.namespace_column or "namespace",
            metadata_columns=None if options.metadata_columns is None else tuple(options.metadata_columns),
            namespace=options.namespace,
            content_key=content_key,
        )

    def read(self, element: Any) -> Row | Refusal:
        """The row of one element; ``TypeError`` for an element type the sink does not take."""
        return self.read_mapping(element if type(element) is dict else as_mapping(element, self))

    def read_mapping(self, record: Mapping[str, Any]) -> Row | Refusal:
        get = record.get
        row_id = derive_id([get(c) for c in self.id_from]) if self.id_from else get(self.id_column)
        if not (row_id is None or type(row_id) is str or type(row_id) is int):
            if isinstance(row_id, uuid.UUID | bool):
                row_id = str(row_id)
            elif isinstance(row_id, int | np.integer):
                row_id = int(row_id)
            else:
                return self.refuse(record, row_id, f"id {row_id!r} is neither a string nor an integer")
        vector = get(self.vector_column)
        if vector is not None:
            vector = _dense(vector)
            if vector is None:
                return self.refuse(record, row_id, "vector is not a sequence of numbers")
        sparse = get(self.sparse_key)
        if sparse is not None:
            sparse = _sparse(sparse)
            if sparse is None:
                return self.refuse(record, row_id, "sparse indices must be integers and values numbers")
        metadata = self._metadata(record)
        if metadata is None:
            return self.refuse(record, row_id, "metadata is not a JSON object")
        return _new_row(Row, (row_id, vector, sparse, metadata, get(self.namespace_key, self.namespace)))

    def _metadata(self, record: Mapping[str, Any]) -> dict[str, Any] | None:
        if self.metadata_columns is None and record.get("metadata") is None:  # the usual cases
            used = self.used
            if record.keys() <= used:  # id and vector only
                return {}
            return {k: v for k, v in record.items() if v is not None and k not in used}
        base = record.get("metadata")
        out: dict[str, Any] = {}
        if base is not None:
            if isinstance(base, str | bytes):
                try:
                    base = orjson.loads(base)
                except orjson.JSONDecodeError:
                    return None
            if not isinstance(base, Mapping):
                return None
            out.update(base)
        if self.metadata_columns is None:
            used = self.used
            out.update((k, v) for k, v in record.items() if v is not None and k not in used)
        else:
            out.update((k, record[k]) for k in self.metadata_columns if record.get(k) is not None)
        return out

    def refuse(self, record: Mapping[str, Any], row_id: Any, reason: str) -> Refusal:
        letter = {k: jsonable(v) for k, v in record.items()}
        letter.update(
            id=None if row_id is None else str(row_id),
            error=reason,
            error_type="Invalid",
            retryable=False,
            attempts=0,
        )
        return Refusal(letter)


def as_mapping(element: Any, reader: ElementReader) -> Mapping[str, Any]:
    """A dict view of a dict, a named tuple (``beam.Row``) or an ``apache_beam.ml.rag`` item."""
    if isinstance(element, Mapping):
        return element
    if hasattr(element, "_asdict"):
        return element._asdict()
    embedding = getattr(element, "embedding", _MISSING)
    if embedding is not _MISSING and hasattr(element, "content"):
        return _item_mapping(element, embedding, reader)
    raise TypeError(
        f"WriteToVectorDB takes dicts, beam.Rows, apache_beam.ml.rag Chunks/EmbeddableItems or pyarrow "
        f"batches, not {type(element).__name__}"
    )


_MISSING = object()


def _item_mapping(item: Any, embedding: Any, reader: ElementReader) -> dict[str, Any]:
    """A ``Chunk``/``EmbeddableItem``: metadata keys at the top (so id_from/metadata_columns see them),
    its text under ``content_key``, then id and embeddings, which win over metadata keys of the same name."""
    record: dict[str, Any] = dict(item.metadata or {})
    text = getattr(item.content, "text", None)
    if reader.content_key and text is not None:
        record[reader.content_key] = text
    record[reader.id_column] = item.id
    if embedding is not None:
        record[reader.vector_column] = embedding.dense_embedding
        if embedding.sparse_embedding is not None:
            record[reader.sparse_key] = embedding.sparse_embedding
    return record


_new_row = tuple.__new__  # Row(...) without NamedTuple's keyword handling: a third of the cost
_FLOAT32 = np.dtype(np.float32)


def _dense(value: Any) -> np.ndarray | None:
    if type(value) is np.ndarray and value.dtype is _FLOAT32 and value.ndim == 1:
        return value
    if type(value) is list or type(value) is tuple:
        # struct packs a list of Python floats into float32 about 3x faster than numpy converts it
        try:
            return np.frombuffer(_packer(len(value)).pack(*value), dtype="<f4")
        except (struct.error, OverflowError, TypeError):
            pass  # nested, not numbers, or beyond float32: numpy decides below
    try:
        with np.errstate(over="ignore"):  # beyond float32 becomes inf, which the client refuses by name
            return np.asarray(value, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError):
        return None


@functools.lru_cache(maxsize=64)
def _packer(length: int) -> struct.Struct:
    return struct.Struct(f"<{length}f")


def _sparse(value: Any) -> Sparse | None:
    if isinstance(value, Mapping):
        indices, values = value.get("indices"), value.get("values")
    elif isinstance(value, tuple | list) and len(value) == 2:  # ml.rag: (indices, values)
        indices, values = value
    else:
        indices, values = getattr(value, "indices", None), getattr(value, "values", None)
    if indices is None or values is None:
        return None
    try:
        return (
            np.asarray(indices, dtype=np.int64).reshape(-1),
            np.asarray(values, dtype=np.float32).reshape(-1),
        )
    except (TypeError, ValueError, OverflowError):
        return None


def jsonable(value: Any) -> Any:
    """``value`` with numpy arrays and scalars as Python lists and numbers, for JSON dead letters."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value
