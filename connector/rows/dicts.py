"""Dict input: rows as mappings (``{"id", "values", "sparse_values"?, "metadata"?, "namespace"?}``).

``DictReader`` is the one reader of a row given as a mapping, for the client's dicts and the Beam
sink's elements alike: it applies the column options (``id_column`` or ``id_from``,
``vector_column``, ``sparse_column``, ``namespace_column``, ``metadata_columns``, with a
``metadata`` dict or JSON object merged in) and turns the vector into float32 at once, never into
Python floats. It refuses only what cannot become a row at all; every other check is
``checks.assemble``'s, on whole chunks.

With options ``vector_columns``/``multi_vector_columns`` a mapping's vectors are named: each is read
under its column's key (a multi-vector as a sequence of vectors, a 2-d array, or JSON text read as
Arrow's reader reads it), each vector through the same float32 conversion as the single one, and the row
is a ``NamedRow``. A row that cannot be read under some names is refused naming each of them
(``checks.NameFaults``), its row kept so that the checks add what is wrong under its other names.

With ``op_key`` (option ``op_column``) each mapping says what it is for (``ops``). A delete is read
as its id and namespace alone, its metadata a ``DeleteMark``: that is how ``Columns`` carry a row's op
(metadata is what every step between a reader and the checks keeps, the embedding stage's too), and
``prepare_columns`` takes it out again. A row's own metadata is data, whatever keys it has.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Self

import numpy as np
import orjson

from ..errors import ConfigError
from .checks import NameFaults, assemble
from .floats import excerpt, float32_vector, json_multi_vector, vector_problem
from .ops import CODES, DELETE, DeleteMark, bad_op, op_of
from .text import not_utf8_reason
from .types import (
    Columns,
    ColumnSpec,
    DenseColumn,
    DimensionState,
    MultiColumn,
    Prepared,
    RowRules,
    derive_id,
    flatten,
    offsets_of,
)

__all__ = [
    "DictReader",
    "NamedRow",
    "Refused",
    "Row",
    "check_input_columns",
    "columns_of",
    "prepare_columns",
    "prepare_dicts",
    "read_dicts",
]

Sparse = tuple[np.ndarray, np.ndarray]  # (int64 indices, float32 values); checked by assemble
# one row's multi-vector: (its vectors' floats, each vector's length, which vectors are null); checked by assemble
MultiRow = tuple[np.ndarray, np.ndarray, np.ndarray]


class Row(NamedTuple):
    """One mapping, read."""

    id: Any  # str or int (None: refused later, with the reason)
    vector: np.ndarray | None  # 1-d float32
    sparse: Sparse | None
    metadata: dict[str, Any]
    namespace: Any


class NamedRow(NamedTuple):
    """One mapping with named vectors (options ``vector_columns``, ``multi_vector_columns``), read."""

    id: Any
    vector: None  # no unnamed vector: every vector is named
    sparse: Sparse | None
    metadata: dict[str, Any]
    namespace: Any
    vectors: dict[str, np.ndarray | None]  # name -> 1-d float32
    multi_vectors: dict[str, MultiRow | None]


class Refused(NamedTuple):
    """A mapping that cannot become a row, and why; one read but under some vector names holds its row
    (those names' vectors ``None``) and the names (``NameFaults``), so the checks name its other faults."""

    id: Any
    reason: str
    row: NamedRow | None = None
    names: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class DictReader:
    """Reads mappings with a write's column options; small and picklable (the Beam sink ships it)."""

    id_column: str = "id"
    id_from: tuple[str, ...] = ()
    vector_column: str = "values"
    sparse_key: str = "sparse_values"
    namespace_key: str = "namespace"
    metadata_columns: tuple[str, ...] | None = None
    namespace: str | None = None  # for rows that name none
    op_key: str | None = None  # the row's op (``ops``); None: every row upserts
    vector_columns: tuple[tuple[str, str], ...] = ()  # (name, key); with these, vector_column is not read
    multi_vector_columns: tuple[tuple[str, str], ...] = ()
    used: frozenset[str] = field(init=False)  # keys that are not metadata ("metadata" is merged)
    # what read_record reads on every row, worked out once: the id's key (None: derived, id_from), the
    # unnamed vector's key (None: every vector is named), and whether metadata is every other key
    _id_key: str | None = field(init=False, repr=False, compare=False)
    _vector_key: str | None = field(init=False, repr=False, compare=False)
    _rest_is_metadata: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        named = bool(self.vector_columns or self.multi_vector_columns)
        if named:
            vectors = {key for _, key in self.vector_columns + self.multi_vector_columns}
        else:
            vectors = {self.vector_column}
        used = {*vectors, self.sparse_key, self.namespace_key, "metadata"}
        if not self.id_from:
            used.add(self.id_column)  # id_from columns stay metadata
        if self.op_key is not None:
            used.add(self.op_key)
        set_ = object.__setattr__
        set_(self, "used", frozenset(used))
        set_(self, "_id_key", None if self.id_from else self.id_column)
        set_(self, "_vector_key", None if named else self.vector_column)
        set_(self, "_rest_is_metadata", self.metadata_columns is None)

    @classmethod
    def from_spec(cls, spec: ColumnSpec, namespace: str | None = None, **fields: Any) -> Self:
        """The reader of ``spec``'s columns; ``fields`` set a subclass's own or replace these (the Beam
        sink's reader: its op key's default, its ``Chunk``s' content key)."""
        return cls(
            **{
                "id_column": spec.id_column,
                "id_from": spec.id_from,
                "vector_column": spec.vector_column,
                "sparse_key": spec.sparse_column or "sparse_values",
                "namespace_key": spec.namespace_column or "namespace",
                "metadata_columns": spec.metadata_read,
                "namespace": namespace,
                "op_key": spec.op_column,
                "vector_columns": spec.vector_columns,
                "multi_vector_columns": spec.multi_vector_columns,
                **fields,
            }
        )

    def read_id(self, record: Mapping[str, Any]) -> Any:
        """The row's id: text or an integer (a UUID or 16 bytes of one as text, a numpy integer as an
        int), ``None`` if it has none; a bool as a bool, which the checks refuse; any other value as it is,
        which ``read_record`` refuses."""
        get = record.get
        return _id_of(derive_id([get(c) for c in self.id_from]) if self.id_from else get(self.id_column))

    def read_record(self, record: Mapping[str, Any]) -> Row | Refused:
        """The row of one mapping: its vector, sparse vector, metadata and namespace (with named vectors,
        options ``vector_columns``/``multi_vector_columns``, everything but those: see ``read_named``).

        Every row of a write takes this path, so what the usual row needs is read inline: the id's key,
        the float32 vector as it is, and no metadata when every key is one the row's columns use.
        """
        get = record.get
        # a null namespace is a missing one: the write's, so a row lands where its like does whatever the
        # rows beside it ("" is a namespace: the database's default)
        namespace = get(self.namespace_key)
        if namespace is None:
            namespace = self.namespace
        id_key = self._id_key
        row_id = get(id_key) if id_key is not None else self.read_id(record)
        kind = type(row_id)
        if kind is not str and kind is not int and row_id is not None:
            row_id = _id_of(row_id)
            if not (row_id is None or type(row_id) is str or type(row_id) is int or type(row_id) is bool):
                return Refused(row_id, f"id {row_id!r} is neither a string nor an integer")
        if isinstance(namespace, bytes) and not _utf8(namespace):
            # a letter's namespace whose text was not UTF-8 (kept as its bytes): as Arrow's reader refused it
            return Refused(row_id, not_utf8_reason(self.namespace_key))
        if self.op_key is not None:
            named = get(self.op_key)
            if named is not None:
                op = op_of(named)
                if op is None:
                    return Refused(row_id, bad_op(named, self.op_key))
                if op == DELETE:  # an id is all a delete needs: the rest is not read, so cannot fail it
                    return _new_row(Row, (row_id, None, None, DeleteMark(), namespace))
        vector_key = self._vector_key
        vector = None if vector_key is None else get(vector_key)
        if vector is not None and not (
            type(vector) is np.ndarray and vector.dtype is _FLOAT32 and vector.ndim == 1
        ):  # what float32_vector returns as it is, tested here without the call
            converted = _dense(vector)
            if converted is None and not _blank(vector):
                problem = vector_problem(vector)
                if isinstance(vector, str):  # a text names its column, as Arrow's reader and named vectors do
                    problem = f"column {vector_key!r}: {problem}"
                return Refused(row_id, problem)
            vector = converted
        sparse = get(self.sparse_key)
        if sparse is not None:
            sparse = _sparse(sparse)
            if sparse is None:
                return Refused(row_id, "sparse indices must be integers and values numbers")
        if self._rest_is_metadata and get("metadata") is None and record.keys() <= self.used:
            metadata: dict[str, Any] | None = {}  # id and vector only: the usual case
        else:
            metadata = self._metadata(record)
            if metadata is None:
                return Refused(row_id, "metadata is not a JSON object")
        return _new_row(Row, (row_id, vector, sparse, metadata, namespace))

    def read_named(self, record: Mapping[str, Any]) -> Row | NamedRow | Refused:
        """The row of one mapping with named vectors: a ``NamedRow`` (a delete: the ``Row`` of its id)."""
        row = self.read_record(record)
        if isinstance(row, Refused) or type(row.metadata) is DeleteMark:
            return row
        get = record.get
        row_id = row.id
        faults: list[tuple[str, str]] = []  # every name's: the row fails once, naming them all
        vectors: dict[str, np.ndarray | None] = {}
        for name, key in self.vector_columns:
            value = get(key)
            vector = None if value is None else _dense(value)
            if vector is None and value is not None and not _blank(value):
                faults.append(
                    (name, named_reason(f"vector {name!r} (column {key!r})", vector_problem(value)))
                )
            vectors[name] = vector
        multi: dict[str, MultiRow | None] = {}
        for name, key in self.multi_vector_columns:
            value = get(key)
            read = None if value is None or _blank(value) else _multi(value)
            if isinstance(read, str):
                faults.append((name, f"multi-vector {name!r} (column {key!r}){read}"))
                read = None
            multi[name] = read
        named = NamedRow(row_id, None, row.sparse, row.metadata, row.namespace, vectors, multi)
        if faults:  # plain text: a Beam element's letter holds it as it is
            reason = NameFaults.joined(faults)
            return Refused(row_id, str(reason), named, reason.names)
        return named

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


def _id_of(row_id: Any) -> Any:
    """``read_id``'s rule for an id as given."""
    if row_id is None or type(row_id) is str or type(row_id) is int:
        return row_id
    if isinstance(row_id, str):  # numpy's str_, an enum's value: their text, as a plain str
        return str.__str__(row_id)
    if isinstance(row_id, bool | np.bool_):  # refused by the id checks: never the text "True"
        return bool(row_id)
    if isinstance(row_id, uuid.UUID):
        return str(row_id)
    if isinstance(row_id, bytes) and len(row_id) == 16:
        return str(uuid.UUID(bytes=row_id))
    if isinstance(row_id, int | np.integer):
        return int(row_id)
    return row_id


_FLOAT32 = np.dtype(np.float32)
_new_row = tuple.__new__  # Row(...) without NamedTuple's keyword handling: a third of the cost
_dense = float32_vector  # native where the speedups are; the same float32 bits (``floats``)
_NOT_VECTORS = " is not a sequence of vectors of numbers"


def _utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _blank(value: Any) -> bool:
    """Blank text: no vector, as Arrow's reader takes a blank text cell (a CSV's empty field)."""
    return isinstance(value, str) and not value.strip()


def named_reason(vector: str, problem: str) -> str:
    """``vector_problem``'s reason about a named vector: ``vector`` (its name, its column) for "vector"."""
    return vector + problem.removeprefix("vector")


def _multi(value: Any) -> MultiRow | str:
    """A multi-vector (a sequence of vectors, a 2-d array, or JSON text of a list of lists of numbers, read
    strictly as Arrow's reader reads a text column of them: ``json_multi_vector``) as its floats and each
    vector's length; a null vector inside is marked, not refused here. What it cannot read, the reason
    why, to follow the multi-vector's name (a vector inside named by its index)."""
    if isinstance(value, str):
        read = json_multi_vector(value)
        if read is None:  # Arrow's reason (``arrow._json_multi_vectors``), so a row fails alike in either
            return f" text is not a JSON list of lists of numbers: {excerpt(value)}"
        floats, sizes = read
        return floats, np.asarray(sizes, dtype=np.int64), np.zeros(len(sizes), dtype=bool)
    if isinstance(value, np.ndarray) and value.ndim == 2:
        if value.dtype.kind not in "fiu":  # bools, text, objects: never read as numbers
            return _NOT_VECTORS
        try:
            with np.errstate(over="ignore"):
                block = np.ascontiguousarray(value, dtype=np.float32)
        except (TypeError, ValueError):
            return _NOT_VECTORS
        k, dim = block.shape
        return block.reshape(-1), np.full(k, dim, dtype=np.int64), np.zeros(k, dtype=bool)
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence | np.ndarray):
        return _NOT_VECTORS
    vectors: list[np.ndarray] = []
    nulls = np.zeros(len(value), dtype=bool)
    for j, item in enumerate(value):
        if item is None:
            nulls[j] = True
            continue
        if isinstance(item, str | bytes):  # a vector's text inside one: Arrow has no list of texts either
            return _NOT_VECTORS
        vector = _dense(item)
        if vector is None:
            return named_reason(f": vector {j}", vector_problem(item))
        vectors.append(vector)
    lengths = np.zeros(len(value), dtype=np.int64)
    lengths[~nulls] = [v.size for v in vectors]
    flat = np.concatenate(vectors) if vectors else np.zeros(0, dtype=np.float32)
    return flat, lengths, nulls


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
        given, numbers = _sparse_part(indices, "iuf"), _sparse_part(values, "fiuO")
        if given is None or numbers is None:
            return None
        if given.dtype.kind == "f" and not np.array_equal(given, np.trunc(given)):
            return None  # 1.5 is no index: never truncated to 1
        return np.asarray(given, dtype=np.int64), np.asarray(numbers, dtype=np.float32)
    except (TypeError, ValueError, OverflowError):  # an object among the values (a null is NaN: checked)
        return None


def _sparse_part(items: Any, kinds: str) -> np.ndarray | None:
    """A sparse vector's indices or values as an array whose dtype is of ``kinds``, else ``None``: a bool
    or a text is no number, as dense vectors refuse them (``np.asarray`` reads True as 1, "3" as 3, and
    [True, 0.5] as floats)."""
    if isinstance(items, list | tuple) and any(
        issubclass(t, bool | np.bool_ | str | bytes) for t in set(map(type, items))
    ):
        return None
    array = np.asarray(items).reshape(-1)
    return array if array.dtype.kind in kinds else None


def columns_of(rows: Sequence[Row | NamedRow | Refused], namespace: str | None = None) -> Columns:
    """Rows read one by one, as columns: one copy of every vector into one float32 buffer."""
    if any(type(row) is NamedRow for row in rows):
        return _named_columns_of(rows, namespace)  # type: ignore[arg-type]
    n = len(rows)
    ids: list[Any] = [None] * n
    vectors: list[np.ndarray | None] = [None] * n
    sparse: list[Sparse | None] = [None] * n
    metadata: list[dict[str, Any] | None] = [{}] * n
    namespaces: list[Any] = [namespace] * n
    any_sparse = mixed_namespaces = False
    for i, row in enumerate(rows):
        ids[i] = row[0]
        if type(row) is not Row:
            continue
        _, vector, row_sparse, row_metadata, row_namespace = row
        vectors[i] = vector
        if row_sparse is not None:
            sparse[i] = row_sparse
            any_sparse = True
        metadata[i] = row_metadata
        if row_namespace != namespace:
            namespaces[i] = row_namespace
            mixed_namespaces = True
    flat, offsets, nulls = flatten(vectors)
    return Columns(
        n,
        ids,
        flat,
        offsets,
        nulls,
        sparse if any_sparse else None,
        metadata,
        namespaces if mixed_namespaces else None,
        own_namespaces=True,
    )


def _named_columns_of(rows: Sequence[NamedRow | Refused], namespace: str | None) -> Columns:
    """``columns_of`` for ``NamedRow``s: each name's vectors into one float32 buffer of its own."""
    n = len(rows)
    named_rows = [row if type(row) is NamedRow else None for row in rows]
    plain = columns_of(
        [row if r is None else Row(*r[:5]) for r, row in zip(named_rows, rows, strict=True)], namespace
    )
    first = next(r for r in named_rows if r is not None)
    for name in first.vectors:
        plain.named[name] = DenseColumn(
            *flatten([None if r is None else r.vectors[name] for r in named_rows])
        )
    for name in first.multi_vectors:
        plain.multi[name] = _multi_column(
            [None if r is None else r.multi_vectors[name] for r in named_rows], n
        )
    return plain


def _multi_column(values: Sequence[MultiRow | None], n: int) -> MultiColumn:
    """Rows' multi-vectors as one ``MultiColumn`` (one copy of every float)."""
    present = [v for v in values if v is not None]
    counts = np.fromiter((0 if v is None else len(v[1]) for v in values), dtype=np.int64, count=n)
    nulls = np.fromiter((v is None for v in values), dtype=bool, count=n)
    if present:
        flat = np.concatenate([v[0] for v in present])
        lengths = np.concatenate([v[1] for v in present])
        inner_nulls = np.concatenate([v[2] for v in present])
    else:
        flat, lengths, inner_nulls = np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, bool)
    return MultiColumn(flat, offsets_of(lengths)[:-1], lengths, inner_nulls, offsets_of(counts), nulls)


# upsert rows, none holding a backend input column, that make its name a misspelling rather than rows without
# one (a stream's first bundle may be one row that has no document)
INPUT_COLUMN_SAMPLE = 100


def check_input_columns(cols: Columns, spec: ColumnSpec, refused: Container[int] = ()) -> bool:
    """Whether each backend input column (Chroma's document_column) is held by an upsert row of ``cols``
    (not in ``refused``): the name is then right; a ``ConfigError`` naming the option when none of enough
    upsert rows holds one. A row may lack it (a row without a document), but no row holding it is a misspelt name, which
    stored no document and said nothing. Dicts and Beam elements have no schema to check, so their rows
    are: ``False`` when there were too few upsert rows to tell by (``INPUT_COLUMN_SAMPLE``)."""
    if not spec.input_columns:
        return True
    metadata, ops, delete = cols.metadata, cols.ops, CODES[DELETE]
    upserts: list[Mapping[str, Any]] = []
    for i in range(cols.n):
        md = None if metadata is None else metadata[i]
        if i in refused or type(md) is DeleteMark or (ops is not None and ops[i] == delete):
            continue
        upserts.append(md or {})
    for option, column in spec.input_columns:
        if any(column in md for md in upserts):
            continue
        if len(upserts) < INPUT_COLUMN_SAMPLE:  # a few rows without a document are rows without one
            return False
        raise ConfigError(
            f"option {option}: no row to upsert has a column {column!r} (none of {len(upserts)} read); "
            "check the name"
        )
    return True


def prepare_dicts(
    rows: Sequence[Mapping[str, Any]],
    spec: ColumnSpec,
    rules: RowRules,
    dim: DimensionState,
    namespace: str | None = None,
    positions: np.ndarray | None = None,
) -> Prepared:
    """Check and convert dicts ``{"id", "values", "sparse_values"?, "metadata"?, "namespace"?}``
    (``positions``: their offsets in the write's input)."""
    cols, refused = read_dicts(rows, spec, namespace)
    return prepare_columns(cols, rules, dim, namespace, refused, positions)


def read_dicts(
    rows: Sequence[Mapping[str, Any]], spec: ColumnSpec, namespace: str | None = None
) -> tuple[Columns, dict[int, str]]:
    """The columns of dict rows and the rows refused while reading them, and why: what a caller that
    checks the columns (``check_input_columns``) before ``prepare_columns`` reads."""
    reader = DictReader.from_spec(spec, namespace)
    read_row = reader.read_named if spec.named else reader.read_record
    read: list[Row | NamedRow | Refused] = [read_row(r) for r in rows]
    refused: dict[int, str] = {i: r.reason for i, r in enumerate(read) if type(r) is Refused}
    for i in refused:  # a row read but under some names: checked for the rest, with its reason's names
        row = read[i]
        if type(row) is Refused and row.row is not None:
            refused[i] = NameFaults(row.reason, row.names)
            read[i] = row.row
    cols = columns_of(read, namespace)
    cols.named_columns = dict(spec.vector_columns + spec.multi_vector_columns)
    return cols, refused


def prepare_columns(
    cols: Columns,
    rules: RowRules,
    dim: DimensionState,
    namespace: str | None = None,
    refused: Mapping[int, str] | None = None,
    positions: np.ndarray | None = None,
) -> Prepared:
    """Check column-major rows; ids are normalised for the database (integers as strings unless it
    takes numbers). ``refused``: rows already refused, and why; ``positions``: the rows' offsets in
    the write's input. Rows whose metadata is a ``DeleteMark`` are deletes, unless the rows carry
    their ``ops`` themselves (``Client.delete``'s)."""
    if set(map(type, cols.ids)) - {str}:  # one pass in C, not a Python test per id
        cols.ids = [_dict_id(i, rules) for i in cols.ids]
    ops = cols.ops
    if ops is None and cols.metadata is not None:
        ops, metadata = _marked_deletes(cols.metadata)
        if ops is not None:  # a new Columns: the caller's (read again for dead letters) keeps its marks
            cols = dataclasses.replace(cols, metadata=metadata)
    return assemble(cols, rules, dim, namespace, dict(refused or {}), positions, ops)


def _marked_deletes(
    metadata: list[dict[str, Any] | None],
) -> tuple[np.ndarray | None, list[dict[str, Any] | None]]:
    """Each row's op code (``None``: no row is a delete) and the metadata with the deletes' marks taken
    out (a new list: a delete's metadata is ``None``, since it is not read)."""
    marked = [i for i, md in enumerate(metadata) if type(md) is DeleteMark]
    if not marked:
        return None, metadata
    ops = np.zeros(len(metadata), dtype=np.int8)
    ops[marked] = CODES[DELETE]
    kept = list(metadata)
    for i in marked:
        kept[i] = None
    return ops, kept


def _dict_id(value: Any, rules: RowRules) -> Any:
    if value is None or isinstance(value, str | bool):  # a bool: refused by the id checks
        return value
    if isinstance(value, int):
        return value if rules.numeric_ids else str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value  # refused in _assemble: ids must be strings or integers
