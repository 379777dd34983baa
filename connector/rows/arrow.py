"""Arrow input: record batches read column by column, vectors viewed in place where they are float32.

Ids are text or integers; a binary column holds UUIDs (16 bytes a value: ``fixed_size_binary(16)``, or
``binary`` as Spark hands it over), which become their canonical text; a binary id of another length is
refused with its row. A column of an extension type is read as its storage (``_storage``): a
``uuid`` id column as the 16-byte binary it holds, an ``arrow.json`` vector column as its text.

With option ``op_column``, that string column says what each row is for (``ops``): a delete row's
vector, sparse vector and metadata are not read, and an input of deletes alone needs no vector column.

A dense vector column may also be text, each row's vector a JSON list of numbers (how CSV files, and
JSON files that quote their vectors, hold them): parsed here, row by row, so a text that is not one
fails its row with that reason, naming the column (a null or blank text is no vector).

With options ``vector_columns`` and ``multi_vector_columns`` each named column is read as the single
vector column is (``DenseColumn``); a multi-vector column (``list<list<float>>``, ``large_list``, fixed-size
lists of lists, any mix) becomes a ``MultiColumn`` whose ``flat`` is the innermost values buffer itself
where it is float32 without nulls: offsets are read from the list arrays, never a Python list of values.
A multi-vector column of text holds a JSON list of lists of numbers a row, read as a dense vector's text
is: strictly, a row whose text is not one failing with that reason and an excerpt, naming the column.

A row with a text in Spark's ``_corrupt_record`` column (a line its reader could not parse) fails, saying
so, whatever option ``metadata_columns`` names; that column is never metadata.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError
from .checks import NameFaults, assemble
from .floats import excerpt, json_multi_vector, json_vector
from .ops import CODES, DELETE, arrow_ops
from .text import checked_text, is_text
from .types import (
    BAD_JSON,
    Columns,
    ColumnSpec,
    DenseColumn,
    DimensionState,
    MultiColumn,
    Prepared,
    RowRules,
    as_mapping,
    derive_id,
    offsets_of,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "arrow_batches",
    "arrow_ids",
    "corrupt_records",
    "is_arrow",
    "prepare_arrow",
    "vector_column_floats",
]

# Spark's column for a JSON or CSV line its reader could not parse (its option columnNameOfCorruptRecord)
CORRUPT_RECORD = "_corrupt_record"


def is_arrow(obj: Any) -> bool:
    """A pyarrow ``Table`` or ``RecordBatch``, known without importing pyarrow."""
    return type(obj).__module__.startswith("pyarrow") and type(obj).__name__ in ("Table", "RecordBatch")


def arrow_batches(obj: Any) -> Iterator[Any]:
    """The record batches of a ``Table`` or ``RecordBatch``."""
    if type(obj).__name__ == "RecordBatch":
        yield obj
    else:
        yield from obj.to_batches()


def prepare_arrow(
    batch: pa.RecordBatch | pa.Table,
    spec: ColumnSpec,
    rules: RowRules,
    dim: DimensionState,
    namespace: str | None = None,
    positions: np.ndarray | None = None,
) -> Prepared:
    """Check and convert one Arrow batch (``positions``: its rows' offsets in the write's input); raises
    ``ConfigError`` for a missing or mistyped column."""
    import pyarrow as pa

    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else _empty_batch(batch.schema)
    names = batch.schema.names
    _require_columns(names, spec)
    n = batch.num_rows
    ids, refused = _arrow_ids(batch, spec, rules)
    ops = None
    deletes = np.zeros(n, dtype=bool)
    if spec.op_column:
        op_texts, not_utf8 = checked_text(_storage(batch.column(spec.op_column)), spec.op_column)
        ops, bad_ops = arrow_ops(op_texts, spec.op_column)
        refused = {**bad_ops, **not_utf8, **refused}
        deletes = ops == CODES[DELETE]
    if not spec.named and spec.vector_column in names:
        flat, offsets, nulls, bad_vectors = vector_column_floats(
            batch.column(spec.vector_column), spec.vector_column, n, deletes
        )
        refused = {**_upserts_only(bad_vectors, deletes), **refused}
    else:  # deletes only need no vectors (option op_column): an upsert among them fails as "null vector"
        flat, offsets, nulls = np.zeros(0, np.float32), np.zeros(n + 1, np.int64), np.ones(n, bool)
    named = {}
    faults: dict[int, list[tuple[str, str]]] = {}  # row -> (name, reason) of each name it failed under
    for name, column in spec.vector_columns:
        if column in names:
            *dense, bad_vectors = vector_column_floats(
                batch.column(column),
                column,
                n,
                deletes,
                "vector_columns",
                f"vector {name!r} (column {column!r})",
            )
            named[name] = DenseColumn(*dense)
            for row, reason in _upserts_only(bad_vectors, deletes).items():
                faults.setdefault(row, []).append((name, reason))
    multi = {}
    for name, column in spec.multi_vector_columns:
        if column in names:
            multi[name], bad_vectors = _arrow_multi_vectors(
                batch.column(column), column, n, f"multi-vector {name!r} (column {column!r})"
            )
            for row, reason in _upserts_only(bad_vectors, deletes).items():
                faults.setdefault(row, []).append((name, reason))
    if faults:  # one reason a row, every name's in the columns' order; the checks add the rest's
        refused = {**{row: NameFaults.joined(found) for row, found in faults.items()}, **refused}
    sparse = _arrow_sparse(batch, spec.sparse_column) if spec.sparse_column else None
    meta_cols = _metadata_columns(names, spec)
    metadata = None
    if meta_cols:
        metadata, bad_metadata = _arrow_metadata(batch, meta_cols)
        refused = {**_upserts_only(bad_metadata, deletes), **refused}
    if CORRUPT_RECORD in names:  # the cause, whatever else such a row lacks (an id, a vector)
        refused = {**refused, **corrupt_records(batch.column(CORRUPT_RECORD))}
    namespaces = None
    if spec.namespace_column:
        namespaces, bad_namespaces = _arrow_namespaces(batch, spec.namespace_column)
        refused = {**bad_namespaces, **refused}
    cols = Columns(
        n,
        ids,
        flat,
        offsets,
        nulls,
        sparse,
        metadata,
        namespaces,
        named,
        multi,
        vector_column=spec.vector_column,
        sparse_column=spec.sparse_column,
        named_columns=dict(spec.vector_columns + spec.multi_vector_columns),
    )
    return assemble(cols, rules, dim, namespace, refused, positions, ops)


def arrow_ids(batch: pa.RecordBatch, spec: ColumnSpec) -> list[str | None]:
    """Each row's id as reports name it (text; ``None`` where it has none, or where the id columns are
    missing or of a type no id can have: the rows' reader says so, by name)."""
    needed = spec.id_from or (spec.id_column,)
    if any(c not in batch.schema.names for c in needed):
        return [None] * batch.num_rows
    try:
        ids, _ = _arrow_ids(batch, spec, RowRules())
    except ConfigError:
        return [None] * batch.num_rows
    return [None if i is None else str(i) for i in ids]


def _upserts_only(refused: dict[int, str], deletes: np.ndarray) -> dict[int, str]:
    """``refused`` without the delete rows: a delete needs an id and nothing else, so what its vector
    and metadata cells hold (read column-wise with the upserts') cannot fail it, as for dict rows."""
    if not refused or not deletes.any():
        return refused
    return {i: reason for i, reason in refused.items() if not deletes[i]}


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    return pa.RecordBatch.from_pylist([], schema=schema)


def _require_columns(names: Sequence[str], spec: ColumnSpec) -> None:
    # with op_column the input may hold deletes only: ids and ops, no vectors
    needed = (
        []
        if spec.op_column
        else [("vector_columns", c) for _, c in spec.vector_columns]
        + [("multi_vector_columns", c) for _, c in spec.multi_vector_columns]
        if spec.named
        else [("vector_column", spec.vector_column)]
    )
    needed += [("id_from", c) for c in spec.id_from] if spec.id_from else [("id_column", spec.id_column)]
    needed += [
        (opt, c)
        for opt, c in (
            ("sparse_column", spec.sparse_column),
            ("namespace_column", spec.namespace_column),
            ("op_column", spec.op_column),
        )
        if c
    ]
    # a backend's input column (Chroma's document_column) even with op_column: which rows upsert is not
    # known here, and skipped, a misspelt name stored no document and said nothing; checked before
    # metadata_columns, which the user never listed it in
    needed += spec.input_columns
    needed += [("metadata_columns", c) for c in spec.metadata_columns or ()]
    for option, column in needed:
        if column not in names:
            hint = ""
            if spec.op_column and (option, column) in spec.input_columns:
                hint = f"; an input of deletes only reads no {option}: leave the option out"
            raise ConfigError(
                f"option {option}: no column {column!r} in the input (columns: {', '.join(names)}){hint}"
            )
    if len(set(names)) != len(names):  # which of them is the row's? (Arrow itself cannot say by name)
        twice = sorted({name for name in names if names.count(name) > 1})
        raise ConfigError(
            f"input: {len(twice)} column name(s) appear more than once: {', '.join(map(repr, twice))}; "
            "rename or drop the copies"
        )


def _arrow_ids(batch: pa.RecordBatch, spec: ColumnSpec, rules: RowRules) -> tuple[list[Any], dict[int, str]]:
    """Each row's id, and the rows whose id cannot be one (with why)."""
    import pyarrow as pa
    import pyarrow.types as pt

    refused: dict[int, str] = {}
    if spec.id_from:
        columns = []
        for name in spec.id_from:
            column, not_utf8 = checked_text(batch.column(name), name)
            columns.append(column.to_pylist())
            refused = {**not_utf8, **refused}
        return [derive_id(values) for values in zip(*columns, strict=True)], refused
    column, refused = checked_text(_storage(batch.column(spec.id_column)), spec.id_column)
    typ = column.type
    if pt.is_integer(typ) and rules.numeric_ids:
        return column.to_pylist(), {}
    if pt.is_integer(typ) or pt.is_string(typ) or pt.is_large_string(typ):
        return column.cast(pa.string()).to_pylist(), refused
    if (
        pt.is_binary(typ)
        or pt.is_large_binary(typ)
        or (pt.is_fixed_size_binary(typ) and typ.byte_width == 16)
    ):
        return _uuid_ids(column.to_pylist())
    raise ConfigError(
        f"option id_column: column {spec.id_column!r} has type {typ}; expected a string or integer "
        "(or binary 16-byte UUIDs)"
    )


def _storage(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``column`` as one array of what its values are stored as: an extension type is tested by its
    storage's type (a ``uuid`` column is ``fixed_size_binary(16)``; tested by its own, the write was
    refused, naming a type no reader knows), but for ``bool8``, whose int8 storage would make its
    booleans ids: it is read as the booleans it holds."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if isinstance(column, pa.ExtensionArray):
        is_bool8 = column.type.extension_name == "arrow.bool8"
        column = column.storage.cast(pa.bool_()) if is_bool8 else column.storage
    return column


def _uuid_ids(values: list[bytes | None]) -> tuple[list[str | None], dict[int, str]]:
    """16-byte values as UUID text; any other length is refused (its id: the bytes in hex)."""
    ids: list[str | None] = []
    refused: dict[int, str] = {}
    for i, value in enumerate(values):
        if value is None or len(value) == 16:
            ids.append(None if value is None else str(uuid.UUID(bytes=value)))
        else:
            refused[i] = f"id is {len(value)} bytes; a binary id must be a 16-byte UUID"
            ids.append(value.hex())
    return ids, refused


def vector_column_floats(
    column: pa.Array | pa.ChunkedArray,
    name: str,
    n: int,
    deletes: np.ndarray,
    option: str = "vector_column",
    vector: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
    """(flat float32 values, int64 offsets, null mask) of a dense vector column, lists or JSON text, and the
    rows refused for what they hold (a text that is no JSON list of numbers, a list with a null element);
    ``deletes``: the rows whose text is not parsed (read as no vector); ``vector``: how reasons name a
    named vector (default: "column 'values': vector")."""

    column = _storage(column)
    if is_text(column.type):
        column, not_utf8 = checked_text(column, name)
        texts = column.to_pylist()
        for i in np.flatnonzero(deletes):
            texts[i] = None
        flat, offsets, nulls, refused = _json_vectors(texts, vector or f"column {name!r}: vector")
        return flat, offsets, nulls, {**refused, **not_utf8}
    flat, offsets, nulls = _arrow_vectors(column, name, n, option)
    return flat, offsets, nulls, _null_elements(column, vector or f"column {name!r}: vector", offsets)


def _json_vectors(
    texts: list[str | None], named: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
    """``vector_column_floats`` of text: each row's JSON list of numbers, read once (orjson), then float32;
    ``named``: how reasons name the vector, as ``_null_elements``'s do (a named vector by its name and
    column)."""
    n = len(texts)
    nulls = np.zeros(n, dtype=bool)
    lengths = np.zeros(n, dtype=np.int64)
    vectors: list[np.ndarray] = []
    refused: dict[int, str] = {}
    for i, text in enumerate(texts):
        vector = None if text is None or not text.strip() else json_vector(text)
        if vector is None:
            nulls[i] = True
            if text is not None and text.strip():
                refused[i] = f"{named} text is not a JSON list of numbers: {excerpt(text)}"
            continue
        vectors.append(vector)
        lengths[i] = len(vector)
    flat = np.concatenate(vectors) if vectors else np.zeros(0, dtype=np.float32)
    return flat, offsets_of(lengths), nulls, refused


def _arrow_vectors(
    column: pa.Array | pa.ChunkedArray, name: str, n: int, option: str = "vector_column"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat float32 values, int64 offsets, null mask) of a list column; zero-copy for list<float>."""
    import pyarrow as pa
    import pyarrow.types as pt

    column = _storage(column)
    typ = column.type
    if pt.is_null(typ):  # no row has a vector (deletes, or rows the embedding stage fills)
        return np.zeros(0, np.float32), np.zeros(n + 1, np.int64), np.ones(n, bool)
    if not (pt.is_list(typ) or pt.is_large_list(typ) or pt.is_fixed_size_list(typ)):
        raise ConfigError(f"option {option}: column {name!r} has type {typ}; expected a list of floats")
    value_type = typ.value_type
    if not (pt.is_floating(value_type) or pt.is_integer(value_type)):
        raise ConfigError(f"option {option}: column {name!r} holds {value_type}; expected floats")
    nulls = (
        np.zeros(n, dtype=bool) if column.null_count == 0 else column.is_null().to_numpy(zero_copy_only=False)
    )
    if pt.is_fixed_size_list(typ):
        size = typ.list_size
        lengths = np.where(nulls, 0, size)
        flat_arr = column.flatten()  # skips null slots, respects slicing
    else:
        lengths = np.nan_to_num(column.value_lengths().to_numpy(zero_copy_only=False)).astype(np.int64)
        flat_arr = column.flatten()
    offsets = offsets_of(lengths)
    if flat_arr.null_count:
        flat = flat_arr.to_numpy(zero_copy_only=False).astype(np.float32)  # nulls → NaN, refused below
    elif value_type == pa.float32():
        flat = flat_arr.to_numpy(zero_copy_only=True)
    else:
        flat = flat_arr.to_numpy(zero_copy_only=False).astype(np.float32)
    return flat, offsets, nulls


def _null_elements(column: pa.Array | pa.ChunkedArray, vector: str, offsets: np.ndarray) -> dict[int, str]:
    """The rows whose vector holds a null element, and which (``_arrow_vectors`` makes it NaN, which the
    checks would report as such); ``vector``: how the reason names it; ``offsets``: ``_arrow_vectors``'s.
    Column-wise, no walk over rows."""
    import pyarrow.types as pt

    column = _storage(column)
    if pt.is_null(column.type):
        return {}
    flat = column.flatten()  # skips null rows, as the offsets do
    if not flat.null_count:  # the usual case
        return {}
    at = np.flatnonzero(flat.is_null().to_numpy(zero_copy_only=False))
    rows = np.searchsorted(offsets, at, side="right") - 1
    rows, first = np.unique(rows, return_index=True)  # each row's first null
    return {
        int(row): f"{vector} has a null element at index {int(at[k] - offsets[row])}"
        for row, k in zip(rows, first, strict=True)
    }


def _is_list(typ: pa.DataType) -> bool:
    import pyarrow.types as pt

    return bool(pt.is_list(typ) or pt.is_large_list(typ) or pt.is_fixed_size_list(typ))


def _list_offsets(array: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(offsets, child) of a list array: row ``i`` is ``child[offsets[i]:offsets[i + 1]]`` (n + 1 int64,
    slicing applied; a null row may span values, which nothing reads); ``child``: the whole values array."""
    import pyarrow.types as pt

    if pt.is_fixed_size_list(array.type):
        size = array.type.list_size
        return (array.offset + np.arange(len(array) + 1, dtype=np.int64)) * size, array.values
    return np.asarray(array.offsets, dtype=np.int64), array.values


def _arrow_multi_vectors(
    column: pa.Array | pa.ChunkedArray, name: str, n: int, vector: str
) -> tuple[MultiColumn, dict[int, str]]:
    """A list-of-lists-of-floats column as a ``MultiColumn``: offsets from the two list levels, and the
    innermost values buffer as it is where it is float32 (else converted once); and the rows refused for a
    null element (``vector``: how the reason names the multi-vector), with its vector's index and its own."""
    import pyarrow as pa
    import pyarrow.types as pt

    column = _storage(column)
    typ = column.type
    if is_text(typ):  # JSON text (CSV; JSON with a wrongly nested row): each row's read strictly
        column, not_utf8 = checked_text(column, name)
        multi, bad_texts = _json_multi_vectors(column.to_pylist(), vector)
        return multi, {**bad_texts, **not_utf8}
    if pt.is_null(typ):  # no row has one (deletes only)
        none = np.zeros(0, np.int64)
        return MultiColumn(
            np.zeros(0, np.float32),
            none,
            none,
            np.zeros(0, bool),
            np.zeros(n + 1, np.int64),
            np.ones(n, bool),
        ), {}
    if not (_is_list(typ) and _is_list(typ.value_type)):
        raise ConfigError(
            f"option multi_vector_columns: column {name!r} has type {typ}; expected a list of lists of floats"
        )
    value_type = typ.value_type.value_type
    if not (pt.is_floating(value_type) or pt.is_integer(value_type)):
        raise ConfigError(f"option multi_vector_columns: column {name!r} holds {value_type}; expected floats")
    nulls = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else np.zeros(n, bool)
    outer, inner = _list_offsets(column)
    # only the inner vectors the rows refer to, and only the floats those refer to: a slice's
    # neighbours are not read
    inner = inner.slice(int(outer[0]), int(outer[-1] - outer[0]))
    outer = outer - outer[0]
    m = len(inner)
    inner_nulls = inner.is_null().to_numpy(zero_copy_only=False) if inner.null_count else np.zeros(m, bool)
    inner_offsets, values = _list_offsets(inner)
    values = values.slice(int(inner_offsets[0]), int(inner_offsets[-1] - inner_offsets[0]))
    starts = inner_offsets[:-1] - inner_offsets[0]
    lengths = np.where(inner_nulls, 0, np.diff(inner_offsets))
    refused: dict[int, str] = {}
    if values.null_count:
        flat = values.to_numpy(zero_copy_only=False).astype(np.float32)  # nulls → NaN, refused below
        refused = _null_inner_elements(values, starts, lengths, outer, nulls, vector)
    elif values.type == pa.float32():
        flat = values.to_numpy(zero_copy_only=True)
    else:
        flat = values.to_numpy(zero_copy_only=False).astype(np.float32)
    return MultiColumn(flat, starts, lengths, inner_nulls, outer, nulls), refused


def _json_multi_vectors(texts: list[str | None], vector: str) -> tuple[MultiColumn, dict[int, str]]:
    """``_arrow_multi_vectors`` of text: each row's JSON list of lists of numbers, read once (orjson), and
    the rows whose text is not one, with an excerpt of it (a null or blank text is no multi-vector).
    Spark's ``from_json`` read these before: it read the first JSON value and dropped what followed
    (a row stored cut short), and made a text it could not read null (its dead letter lost the text)."""
    n = len(texts)
    nulls = np.zeros(n, dtype=bool)
    counts = np.zeros(n, dtype=np.int64)
    blocks: list[np.ndarray] = []
    lengths: list[int] = []
    refused: dict[int, str] = {}
    for i, text in enumerate(texts):
        read = None if text is None or not text.strip() else json_multi_vector(text)
        if read is None:
            nulls[i] = True
            if text is not None and text.strip():
                refused[i] = f"{vector} text is not a JSON list of lists of numbers: {excerpt(text)}"
            continue
        blocks.append(read[0])
        lengths += read[1]
        counts[i] = len(read[1])
    flat = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)
    sizes = np.asarray(lengths, dtype=np.int64)
    multi = MultiColumn(
        flat, offsets_of(sizes)[:-1], sizes, np.zeros(len(sizes), bool), offsets_of(counts), nulls
    )
    return multi, refused


def _null_inner_elements(
    values: pa.Array,
    starts: np.ndarray,
    lengths: np.ndarray,
    outer: np.ndarray,
    row_nulls: np.ndarray,
    vector: str,
) -> dict[int, str]:
    """Each row whose multi-vector holds a null element: the first one, by its vector's index and its own.
    A null row's or null vector's span of ``values`` may hold anything (Arrow never reads it): its nulls
    are not the row's (``lengths``: 0 for a null vector; ``row_nulls``: the null rows), which the checks
    refuse as null or as holding a null vector."""
    at = np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))
    inner = np.searchsorted(starts, at, side="right") - 1  # the inner vector each null is in
    rows = np.searchsorted(outer, inner, side="right") - 1
    held = (at < starts[inner] + lengths[inner]) & ~row_nulls[rows]
    at, inner, rows = at[held], inner[held], rows[held]
    rows, first = np.unique(rows, return_index=True)
    return {
        int(row): f"{vector}: vector {int(inner[k] - outer[row])} has a null element at index "
        f"{int(at[k] - starts[inner[k]])}"
        for row, k in zip(rows, first, strict=True)
    }


def _arrow_sparse(batch: pa.RecordBatch, name: str) -> list[Any]:
    import pyarrow.types as pt

    column = _storage(batch.column(name))
    typ = column.type
    if not (pt.is_struct(typ) and {"indices", "values"} <= {f.name for f in typ}):
        raise ConfigError(
            f"option sparse_column: column {name!r} has type {typ}; expected struct<indices, values>"
        )
    return column.to_pylist()


def _arrow_namespaces(batch: pa.RecordBatch, name: str) -> tuple[list[Any], dict[int, str]]:
    """Each row's namespace, and the rows whose text is not UTF-8; a column that holds no text is a ``ConfigError`` naming the option, on
    Spark's driver as for a client's write (row by row it failed every row, and with on_error=report
    the job succeeded)."""
    import pyarrow.types as pt

    column = _storage(batch.column(name))
    typ = column.type.value_type if pt.is_dictionary(column.type) else column.type
    if not (is_text(typ) or pt.is_null(typ)):
        raise ConfigError(f"option namespace_column: column {name!r} has type {typ}; expected strings")
    column, refused = checked_text(column, name)
    return column.to_pylist(), refused


def _metadata_columns(names: Sequence[str], spec: ColumnSpec) -> list[str]:
    """The metadata columns: option ``metadata_columns``, else every column the spec does not use; never
    Spark's ``_corrupt_record``, whose rows fail (``corrupt_records``)."""
    read = spec.metadata_read
    if read is not None:
        return [c for c in read if c != CORRUPT_RECORD]
    used = spec.used()
    return [c for c in names if c not in used and c != CORRUPT_RECORD]


def corrupt_records(column: pa.Array | pa.ChunkedArray) -> dict[int, str]:
    """The rows whose line Spark's JSON (or CSV) reader could not parse: a text in its ``_corrupt_record``
    column, the whole line. Read whatever option ``metadata_columns`` names: Spark 4 parses what it can
    of such a line and reads the field at fault as null (a Latin-1 byte's), so the row was stored without
    that field, and its bytes were checked only where this column was read as metadata."""
    column, not_utf8 = checked_text(_storage(column), CORRUPT_RECORD)
    if not is_text(column.type):  # not Spark's (a null column: no such line)
        return {}
    lines = column.to_pylist()
    return {
        i: f"column {CORRUPT_RECORD!r}: text is not valid UTF-8; Spark could not parse the line"
        if i in not_utf8
        else f"column {CORRUPT_RECORD!r}: Spark could not parse the line: {excerpt(line)}"
        for i, line in enumerate(lines)
        if line is not None
    }


def _arrow_metadata(
    batch: pa.RecordBatch, columns: list[str]
) -> tuple[list[dict[str, Any] | None], dict[int, str]]:
    """Per-row dicts, and the rows refused on the way (with why); a column named ``metadata`` (struct,
    map or JSON string) is merged, not nested: first, so a top-level column's value wins over a key of
    its in any order, as for dict rows; a struct field with the name of another metadata column is a
    ``ConfigError`` (the schema shows it: one of the two would be dropped). Each column is read as
    ``_metadata_type`` says."""
    import pyarrow.types as pt

    n = batch.num_rows
    rows: list[dict[str, Any] | None] = [{} for _ in range(n)]
    refused: dict[int, str] = {}
    if "metadata" in columns:
        columns = ["metadata", *(c for c in columns if c != "metadata")]
        typ = batch.column("metadata").type
        twice = [field.name for field in typ if field.name in columns[1:]] if pt.is_struct(typ) else []
        if twice:
            raise ConfigError(
                f"metadata key {twice[0]!r} would come from column {twice[0]!r} and from field "
                f"{twice[0]!r} of column 'metadata'; rename one, or leave one out (option metadata_columns)"
            )
    for name in columns:
        values = _metadata_values(batch.column(name), name, refused)
        if name == "metadata":
            for i, value in enumerate(values):
                merged = as_mapping(value, False)
                row = rows[i]
                if merged is BAD_JSON:
                    rows[i] = None
                elif row is not None and merged:
                    row.update(merged)
            continue
        for i, value in enumerate(values):
            row = rows[i]
            if value is not None and row is not None:
                row[name] = value
    return rows, refused


def _metadata_values(column: pa.Array | pa.ChunkedArray, name: str, refused: dict[int, str]) -> list[Any]:
    """A metadata column's values, maps as dicts at any depth; a row whose map holds a key twice is
    refused (into ``refused``), its value ``None``; so is a row whose text is not UTF-8 (its value kept)."""
    import pyarrow.types as pt

    column, not_utf8 = checked_text(column, name)
    for i, reason in not_utf8.items():
        refused.setdefault(i, reason)
    target = _metadata_type(column.type, name)
    if target != column.type:
        column = column.cast(target)
    if not _has_map(target):
        return column.to_pylist()
    if pt.is_map(target) and not _has_map(target.item_type):
        # the usual map column: its pairs made dicts here, a third of the time pyarrow's dicts take
        values = column.to_pylist()
        for i, pairs in enumerate(values):
            if pairs is None:
                continue
            mapping = dict(pairs)
            values[i] = mapping
            if len(mapping) != len(pairs):
                seen: set[Any] = set()
                for key, _ in pairs:
                    if key in seen:
                        break
                    seen.add(key)
                refused.setdefault(i, _twice(name, repr(key)))
                values[i] = None
        return values
    try:  # maps inside structs, lists or maps
        return column.to_pylist(maps_as_pydicts="strict")
    except (KeyError, ValueError):  # a key twice in some map: find the rows, one at a time (only here)
        values = []
        for i in range(len(column)):
            try:
                values.append(column.slice(i, 1).to_pylist(maps_as_pydicts="strict")[0])
            except (KeyError, ValueError) as exc:
                refused.setdefault(i, _twice(name, _duplicate_key(exc)))
                values.append(None)
        return values


def _duplicate_key(exc: BaseException) -> str:
    """The key pyarrow's strict map conversion found twice: its ``KeyError`` ends "(duplicate key was
    'k')."; inside a struct it is the context of a ``ValueError``. Re-raises any other error."""
    error: BaseException | None = exc
    while error is not None and not (isinstance(error, KeyError) and "duplicate key was" in str(error)):
        error = error.__context__
    if error is None:
        raise exc
    return str(error.args[0]).rpartition("duplicate key was ")[2].rstrip(".)")


def _twice(name: str, key: str) -> str:
    return f"metadata {name!r} holds a map with the key {key} twice; a metadata object has a key once"


def _metadata_type(typ: pa.DataType, name: str) -> pa.DataType:
    """The type a metadata column is read as: ``typ``, with a zoned timestamp in UTC at any depth (Spark
    hands a timestamp over in its session's time zone: the same instant would be stored as other text
    under another, as ``derive_id`` knows too), and a map keyed by anything but text refused (a
    ``ConfigError`` naming the column: JSON object keys are text, and 1 and '1' would be one key)."""
    import pyarrow as pa
    import pyarrow.types as pt

    if pt.is_timestamp(typ) and typ.tz is not None:
        return pa.timestamp(typ.unit, "UTC")
    if pt.is_struct(typ):
        if _is_variant(typ):
            raise ConfigError(
                f"metadata column {name!r} is a VARIANT (in Arrow: struct<value: binary, metadata: "
                "binary>), which would be stored as bytes: write to_json() of it instead, or leave it "
                "out (option metadata_columns)"
            )
        return pa.struct([field.with_type(_metadata_type(field.type, name)) for field in typ])
    if pt.is_map(typ):
        if not (pt.is_string(typ.key_type) or pt.is_large_string(typ.key_type)):
            raise ConfigError(
                f"metadata column {name!r} has type {typ}: a map's keys must be text to be metadata keys; "
                f"cast them to string, or leave the column out (option metadata_columns)"
            )
        return pa.map_(typ.key_field, typ.item_field.with_type(_metadata_type(typ.item_type, name)))
    if pt.is_list(typ) or pt.is_large_list(typ) or pt.is_fixed_size_list(typ):
        field = typ.value_field.with_type(_metadata_type(typ.value_type, name))
        if pt.is_fixed_size_list(typ):
            return pa.list_(field, typ.list_size)
        return pa.large_list(field) if pt.is_large_list(typ) else pa.list_(field)
    return typ


def _is_variant(typ: pa.StructType) -> bool:
    """Spark's VARIANT as its Arrow writer passes it: a struct of the binaries ``value`` and ``metadata``
    (the latter tagged ``variant``)."""
    import pyarrow.types as pt

    fields = {field.name: field.type for field in typ}
    return fields.keys() == {"value", "metadata"} and all(pt.is_binary(t) for t in fields.values())


def _has_map(typ: pa.DataType) -> bool:
    import pyarrow.types as pt

    if pt.is_map(typ):
        return True
    return any(_has_map(typ.field(i).type) for i in range(typ.num_fields))
