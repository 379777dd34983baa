"""Beam elements → rows: one small tuple per element, whatever the element's type.

Elements may be dicts (vectors as lists or numpy arrays), ``beam.Row``s and other named
tuples, or ``apache_beam.ml.rag`` ``Chunk``/``EmbeddableItem``s; ``pyarrow`` batches bypass
this module (the client reads them as they are). Each is seen as a mapping and read by the
client's own ``DictReader`` (the same column options, the same ids as the client and Spark
derive); a ``Row`` is ``(id, vector, sparse, metadata, namespace)``, the vector a 1-d float32
array, so a row is encoded as one buffer (``RowCoder``), never as a list of Python floats. With
options ``vector_columns``/``multi_vector_columns`` an element is read into a ``NamedRow``: each
name's vector a float32 array, each multi-vector its floats and its vectors' lengths. Checks
that need the whole batch (dimension, duplicates, NaN, sparse order, metadata size) stay in the
client; an element that cannot become a row at all becomes a dead letter here.

An element says what it is for in its ``op`` key or field (option ``op_column`` names another; the
spellings are ``vectordb.connector.rows.ops``'): none, or null, is an upsert; a delete is read as its
id and namespace alone, so its vector and metadata may be anything; an op that names neither is a
dead letter. A ``Chunk``'s only keys are its metadata's, which are data: it says its op only in the
metadata key that option ``op_column`` names, and without the option every ``Chunk`` upserts, its
metadata stored whatever its keys (``{"op": "delete"}`` included). A ``pyarrow`` batch element says
it in its ``op_column`` column, as Spark's rows do.

A ``Chunk``'s id and vectors are its own (``id``, ``embedding``), never its metadata's: a metadata key
named like the id, vector or sparse key (``id``, ``values``, ``sparse_values``) is stored under its name,
and a key the stored metadata needs for the Chunk itself (``content_key`` when it has text, ``id_column``
with ``id_from``, where its id goes) fails the row, naming the key: either value would be lost.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from vectordb.connector.client import column_spec
from vectordb.connector.dead_letters import letter_with_row
from vectordb.connector.options import BackendOptions
from vectordb.connector.rows.dicts import DictReader, NamedRow, Refused, Row, Sparse
from vectordb.connector.rows.ops import DEFAULT_OP_KEY, DeleteMark

__all__ = [
    "ELEMENT_REPR_CHARS",
    "ElementReader",
    "NamedRow",
    "Refusal",
    "Row",
    "Sparse",
    "jsonable",
    "refused_line",
]

ELEMENT_REPR_CHARS = 1000  # of an element the sink does not take, kept in its dead letter
NAMELESS_EMBEDDING = (
    "a Chunk's dense embedding has no name: options vector_columns/multi_vector_columns are set, so every "
    "vector is named; give it in the Chunk's metadata under a column vector_columns names"
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """An element that cannot become a row: its dead letter, ready to emit."""

    dead_letter: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ElementReader(DictReader):
    """The client's ``DictReader``, for any element type the sink takes; travels in the DoFn."""

    content_key: str | None = "content"  # where a Chunk's text goes in the metadata
    item_op_key: str | None = None  # a Chunk's op: only the metadata key option op_column names
    _items: ElementReader = field(init=False, repr=False, compare=False)  # reads Chunks: op item_op_key
    _slots: frozenset[str] = field(init=False, repr=False, compare=False)  # a Chunk's own: _read_slots

    def __post_init__(self) -> None:
        DictReader.__post_init__(self)  # (a slotted dataclass: no zero-argument super)
        same = self.item_op_key == self.op_key
        object.__setattr__(self, "_items", self if same else replace(self, op_key=self.item_op_key))
        object.__setattr__(self, "_slots", _read_slots(self))

    @classmethod
    def from_options(cls, options: BackendOptions, content_key: str | None = "content") -> ElementReader:
        """The reader of the options' elements: the client's columns (``client.column_spec``), so a
        backend's input column (Chroma's document_column) is read whatever metadata_columns lists."""
        return cls.from_spec(
            column_spec(options),
            options.namespace,
            op_key=options.op_column or DEFAULT_OP_KEY,
            content_key=content_key,
            item_op_key=options.op_column,
        )

    def read(self, element: Any) -> Row | NamedRow | Refusal:
        """The row of one element; an element of a type the sink does not take is refused, its letter
        holding its ``repr`` (at most ``ELEMENT_REPR_CHARS``) as ``element``."""
        if type(element) is dict:
            return self.read_mapping(element)
        if type(element) is Refusal:  # refused before the sink (a line that is not JSON): its letter
            return element
        try:
            record = as_mapping(element, self)
        except TypeError as exc:
            return refusal({"element": _shortened(repr(element))}, None, str(exc))
        if record is element or hasattr(element, "_asdict"):
            return self.read_mapping(record)
        clash = item_clash(element, self)
        if clash is not None:
            return self._items.refuse(record, getattr(element, "id", None), clash)
        if self._vector_key is None and getattr(element.embedding, "dense_embedding", None) is not None:
            # every vector is named: stored under no name, the embedding would be lost or, worse, kept
            # as a metadata field; a delete needs no vector, so its op decides first
            row = self._items.read_mapping(record)
            if type(row) is Row and type(row.metadata) is DeleteMark:
                return row
            # its letter holds the embedding under the vector column, as any Chunk's: moved under a name
            # it can be written again (a metadata key of that name keeps its place)
            letter = {self.vector_column: element.embedding.dense_embedding, **record}
            return self._items.refuse(letter, getattr(element, "id", None), NAMELESS_EMBEDDING)
        return self._items.read_mapping(record)  # a Chunk: its metadata's "op" is data

    def read_mapping(self, record: Mapping[str, Any]) -> Row | NamedRow | Refusal:
        named = self.vector_columns or self.multi_vector_columns
        row = self.read_named(record) if named else self.read_record(record)
        if isinstance(row, Refused):
            return self.refuse(record, row.id, row.reason)
        return row

    def refuse(self, record: Mapping[str, Any], row_id: Any, reason: str) -> Refusal:
        """The element's dead letter, its id column named as the reader reads it."""
        return refusal(record, row_id, reason, None if self.id_from else self.id_column)


def refusal(record: Mapping[str, Any], row_id: Any, reason: str, id_column: str | None = None) -> Refusal:
    """The dead letter of an element, or of what never became one, in the core's form
    (``dead_letters.letter_with_row``)."""
    why = {
        "id": None if row_id is None else str(row_id),
        "error": reason,
        "error_type": "Invalid",
        "retryable": False,
        "attempts": 0,
    }
    return Refusal(letter_with_row(why, jsonable(record), id_column))


def refused_line(line: str, reason: str) -> Refusal:
    """The dead letter of an input line that is no element (not JSON), holding the line (at most
    ``ELEMENT_REPR_CHARS``): the sink counts it and hands it on with the others, so it fails alone."""
    return refusal({"line": _shortened(line)}, None, reason)


def _shortened(text: str) -> str:
    return text if len(text) <= ELEMENT_REPR_CHARS else text[:ELEMENT_REPR_CHARS] + "…"


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
    its text under ``content_key``, then id and embeddings. A metadata key named like the id, vector or
    sparse key goes under ``"metadata"`` instead, so it is stored under its own name and never read as
    the row's id or vectors (``item_clash`` refuses the keys that cannot be kept)."""
    metadata = item.metadata or {}
    slots = reader._slots
    if slots.isdisjoint(metadata):  # the usual case
        record: dict[str, Any] = dict(metadata)
    else:
        record = {k: v for k, v in metadata.items() if k not in slots}
        if "metadata" not in metadata and reader.metadata_columns is None:
            record["metadata"] = {k: v for k, v in metadata.items() if k in slots}
    text = getattr(item.content, "text", None)
    if reader.content_key and text is not None:
        record[reader.content_key] = text
    record[reader.id_column] = item.id
    if embedding is not None:
        if reader._vector_key is not None:  # with named vectors a Chunk's own is refused (read)
            record[reader.vector_column] = embedding.dense_embedding
        if embedding.sparse_embedding is not None:
            record[reader.sparse_key] = embedding.sparse_embedding
    return record


def _read_slots(reader: DictReader) -> frozenset[str]:
    """The keys the reader reads as a row's id, vector or sparse vector: a Chunk's own only."""
    slots = {reader.sparse_key}
    if reader._id_key is not None:
        slots.add(reader._id_key)
    if reader._vector_key is not None:
        slots.add(reader._vector_key)
    return frozenset(slots)


def item_clash(item: Any, reader: ElementReader) -> str | None:
    """Why a ``Chunk``'s metadata cannot be stored as it is, or ``None``: a key whose name the stored
    metadata gives to something else (the text under ``content_key``, the item's id with ``id_from``, a
    column ``metadata_columns`` selects), or a key named like the id, vector or sparse key beside a
    ``"metadata"`` key (which is merged, and would have to hold it). Either value would be lost."""
    metadata = item.metadata
    if not metadata:
        return None
    if reader.content_key in metadata and getattr(item.content, "text", None) is not None:
        return (
            f"metadata key {reader.content_key!r} is where the sink stores the Chunk's text (content_key): "
            "rename the key or pass another content_key"
        )
    if reader.id_from and reader.id_column in metadata:
        return (
            f"metadata key {reader.id_column!r} is where the sink stores the Chunk's id (id_column, with "
            "id_from): rename the key or set id_column to a name the metadata does not use"
        )
    if reader._slots.isdisjoint(metadata):  # the usual case
        return None
    kept = sorted(k for k in reader._slots if k in metadata)
    if "metadata" in metadata:
        return (
            f"metadata key {kept[0]!r} is named like the key the sink reads the Chunk's id or vectors "
            "from, and the metadata also has a key 'metadata', which the sink merges: rename one of them"
        )
    picked = [k for k in kept if reader.metadata_columns is not None and k in reader.metadata_columns]
    if picked:
        return (
            f"metadata key {picked[0]!r} is named like the key the sink reads the Chunk's id or vectors "
            "from, and metadata_columns stores that key's value: rename the key or set id_column, "
            "vector_column, sparse_column to names the metadata does not use"
        )
    return None


def jsonable(value: Any) -> Any:
    """``value`` ready for ``json.dumps``, for dead letters: numpy arrays and scalars as Python lists and
    numbers, dates and times in ISO 8601 (as the dead-letter files' ``orjson`` writes them), and other
    values JSON has no type for (``Decimal``, ``UUID``) as their text (as those files do). Bytes stay
    bytes: a binary id's 16 bytes are the row's, as every engine's letters keep them."""
    if isinstance(value, str | int | float | bool | bytes) or value is None:
        return value
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.time):  # a datetime is a date
        return value.isoformat()
    return str(value)
