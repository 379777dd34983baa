"""Input → ``RowBatch``: ids, one contiguous float32 matrix, sparse vectors, metadata.

Every input form (Arrow tables and record batches, dicts, ``VectorRecord``s) goes through
``prepare_arrow`` or ``prepare_dicts``; both end in ``_assemble``, the one place where rows
are checked. A row the database could never store (missing/duplicate/long id, null or
wrong-size vector, NaN/Inf, bad sparse indices, oversize metadata) becomes a
``BatchFailure`` with the reason and is not sent; the others continue.

Vectors never become Python floats: an Arrow ``list<float>`` column's values buffer is
viewed as an (n, dim) matrix; other float types are converted once per batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from .errors import ConfigError
from .report import BatchFailure

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ColumnSpec",
    "Columns",
    "Prepared",
    "RowBatch",
    "RowRules",
    "derive_id",
    "metadata_json_len",
    "prepare_arrow",
    "prepare_columns",
    "prepare_dicts",
]

# Fixed namespace for ids derived with ``id_from``: the same values give the same id on every
# run, machine and retry, so a retried task upserts instead of duplicating.
ID_NAMESPACE = uuid.UUID("6f1c2a8e-3b7d-5c4e-9a0f-2d8b7e6c5a41")
MAX_SPARSE_INDEX = 2**32 - 1


@dataclass(frozen=True, slots=True)
class RowRules:
    """What a backend can store; rows outside these rules fail before sending."""

    max_id_length: int = 512
    max_metadata_bytes: int | None = None  # JSON bytes per row
    allow_sparse_only: bool = True  # a row may have a sparse vector and no dense one
    numeric_ids: bool = False  # ids may stay integers (Milvus INT64 keys)


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """Which input columns hold what; built from the options."""

    id_column: str = "id"
    id_from: tuple[str, ...] = ()
    vector_column: str = "values"
    sparse_column: str | None = None
    metadata_columns: tuple[str, ...] | None = None  # None: every column not used above
    namespace_column: str | None = None

    def used(self) -> set[str]:
        cols = (
            {self.vector_column} if self.id_from else {self.id_column, self.vector_column}
        )  # id_from columns stay metadata
        cols.update(c for c in (self.sparse_column, self.namespace_column) if c)
        return cols


@dataclass(slots=True)
class RowBatch:
    """Rows ready to encode: parallel arrays, all of length ``len(ids)``."""

    ids: list[Any]  # str, or int where the backend keeps numeric ids
    vectors: np.ndarray | None  # (n, dim) float32, C-contiguous
    sparse: list[tuple[np.ndarray, np.ndarray] | None] | None = None  # (uint32 indices, float32 values)
    metadata: list[dict[str, Any]] | None = None
    namespace: str | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dimension(self) -> int | None:
        return None if self.vectors is None else int(self.vectors.shape[1])

    def slice(self, start: int, stop: int) -> RowBatch:
        """Rows ``start:stop``; vectors stay a view of the same buffer."""
        return RowBatch(
            ids=self.ids[start:stop],
            vectors=None if self.vectors is None else self.vectors[start:stop],
            sparse=None if self.sparse is None else self.sparse[start:stop],
            metadata=None if self.metadata is None else self.metadata[start:stop],
            namespace=self.namespace,
        )

    def str_ids(self) -> tuple[str, ...]:
        return tuple(str(i) for i in self.ids)


@dataclass(slots=True)
class Prepared:
    """The sendable rows of one input chunk (one ``RowBatch`` per namespace) and the refused ones."""

    batches: list[RowBatch] = field(default_factory=list)
    failures: list[BatchFailure] = field(default_factory=list)

    @property
    def refused(self) -> int:
        return sum(len(f.ids) for f in self.failures)


@dataclass(slots=True)
class Columns:
    """Column-major rows: what Arrow and dict input become, and what the Beam sink hands the client
    directly (its batches are already one float32 buffer), so it skips a round trip through Arrow."""

    n: int
    ids: list[Any]  # str or int (int ids become strings unless the database takes numbers)
    flat: np.ndarray  # every row's dense values, concatenated, float32
    offsets: np.ndarray  # int64, n + 1: row i is flat[offsets[i]:offsets[i + 1]]
    null_vector: np.ndarray  # bool, n
    sparse: list[Any] | None  # per row: None or a mapping {"indices", "values"}
    metadata: list[dict[str, Any] | None] | None  # None for a row: not a JSON object (refused)
    namespaces: list[Any] | None


class DimensionState:
    """The dimension of this write: option ``dimension``, else the target's, else the rows' agreed one.

    Never one row's: the agreed length is the most common among the first input chunk's vectors
    (the smaller on a tie). ``resolve``, set by the client, checks it against the target and
    returns the dimension the write must have (the target's, where one exists).
    """

    __slots__ = ("resolve", "value")

    def __init__(self, value: int | None = None, resolve: Callable[[int], int] | None = None) -> None:
        self.value = value
        self.resolve = resolve

    def learn(self, lengths: np.ndarray) -> None:
        """Agree on a dimension from the lengths of one chunk's present vectors, once."""
        if self.value is not None or not lengths.size:
            return
        values, counts = np.unique(lengths, return_counts=True)
        agreed = int(values[int(np.argmax(counts))])
        self.value = self.resolve(agreed) if self.resolve is not None else agreed


# --------------------------------------------------------------------------------------------------
# Arrow input


def prepare_arrow(
    batch: pa.RecordBatch | pa.Table,
    spec: ColumnSpec,
    rules: RowRules,
    dim: DimensionState,
    namespace: str | None = None,
) -> Prepared:
    """Check and convert one Arrow batch; raises ``ConfigError`` for a missing or mistyped column."""
    import pyarrow as pa

    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else _empty_batch(batch.schema)
    names = batch.schema.names
    _require_columns(names, spec)
    n = batch.num_rows
    ids = _arrow_ids(batch, spec, rules)
    flat, offsets, nulls = _arrow_vectors(batch.column(spec.vector_column), spec.vector_column, n)
    sparse = _arrow_sparse(batch, spec.sparse_column) if spec.sparse_column else None
    meta_cols = _metadata_columns(names, spec)
    metadata = _arrow_metadata(batch, meta_cols) if meta_cols else None
    namespaces = batch.column(spec.namespace_column).to_pylist() if spec.namespace_column else None
    cols = Columns(n, ids, flat, offsets, nulls, sparse, metadata, namespaces)
    return _assemble(cols, rules, dim, namespace)


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    return pa.RecordBatch.from_pylist([], schema=schema)


def _require_columns(names: Sequence[str], spec: ColumnSpec) -> None:
    needed = [("vector_column", spec.vector_column)]
    needed += [("id_from", c) for c in spec.id_from] if spec.id_from else [("id_column", spec.id_column)]
    needed += [
        (opt, c)
        for opt, c in (("sparse_column", spec.sparse_column), ("namespace_column", spec.namespace_column))
        if c
    ]
    needed += [("metadata_columns", c) for c in spec.metadata_columns or ()]
    for option, column in needed:
        if column not in names:
            raise ConfigError(
                f"option {option}: no column {column!r} in the input (columns: {', '.join(names)})"
            )


def _arrow_ids(batch: pa.RecordBatch, spec: ColumnSpec, rules: RowRules) -> list[Any]:
    import pyarrow as pa
    import pyarrow.types as pt

    if spec.id_from:
        rows = zip(*(batch.column(c).to_pylist() for c in spec.id_from), strict=True)
        return [derive_id(values) for values in rows]
    column = batch.column(spec.id_column)
    if pt.is_integer(column.type) and rules.numeric_ids:
        return column.to_pylist()
    if pt.is_integer(column.type) or pt.is_string(column.type) or pt.is_large_string(column.type):
        return column.cast(pa.string()).to_pylist()
    if pt.is_fixed_size_binary(column.type) and column.type.byte_width == 16:
        return [None if b is None else str(uuid.UUID(bytes=b)) for b in column.to_pylist()]
    raise ConfigError(
        f"option id_column: column {spec.id_column!r} has type {column.type}; expected a string or integer"
    )


def derive_id(values: Sequence[Any]) -> str:
    """A UUIDv5 of the row's ``id_from`` values: deterministic, so a retried task upserts the same id."""
    return str(uuid.uuid5(ID_NAMESPACE, orjson.dumps(list(values), default=str).decode()))


def _arrow_vectors(
    column: pa.Array | pa.ChunkedArray, name: str, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat float32 values, int64 offsets, null mask) of a list column; zero-copy for list<float>."""
    import pyarrow as pa
    import pyarrow.types as pt

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if isinstance(column, pa.ExtensionArray):
        column = column.storage
    typ = column.type
    if pt.is_struct(typ) and {"type", "values"} <= {f.name for f in typ}:  # Spark ML VectorUDT (dense)
        column = column.field("values")
        typ = column.type
    if not (pt.is_list(typ) or pt.is_large_list(typ) or pt.is_fixed_size_list(typ)):
        raise ConfigError(f"option vector_column: column {name!r} has type {typ}; expected a list of floats")
    value_type = typ.value_type
    if not (pt.is_floating(value_type) or pt.is_integer(value_type)):
        raise ConfigError(f"option vector_column: column {name!r} holds {value_type}; expected floats")
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
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if flat_arr.null_count:
        flat = flat_arr.to_numpy(zero_copy_only=False).astype(np.float32)  # nulls → NaN, refused below
    elif value_type == pa.float32():
        flat = flat_arr.to_numpy(zero_copy_only=True)
    else:
        flat = flat_arr.to_numpy(zero_copy_only=False).astype(np.float32)
    return flat, offsets, nulls


def _arrow_sparse(batch: pa.RecordBatch, name: str) -> list[Any]:
    import pyarrow.types as pt

    column = batch.column(name)
    typ = column.type
    if not (pt.is_struct(typ) and {"indices", "values"} <= {f.name for f in typ}):
        raise ConfigError(
            f"option sparse_column: column {name!r} has type {typ}; expected struct<indices, values>"
        )
    return column.to_pylist()


def _metadata_columns(names: Sequence[str], spec: ColumnSpec) -> list[str]:
    if spec.metadata_columns is not None:
        return list(spec.metadata_columns)
    used = spec.used()
    return [c for c in names if c not in used]


def _arrow_metadata(batch: pa.RecordBatch, columns: list[str]) -> list[dict[str, Any] | None]:
    """Per-row dicts; a column named ``metadata`` (struct, map or JSON string) is merged, not nested."""
    import pyarrow.types as pt

    n = batch.num_rows
    rows: list[dict[str, Any] | None] = [{} for _ in range(n)]
    for name in columns:
        column = batch.column(name)
        values = column.to_pylist()
        if name == "metadata":
            for i, value in enumerate(values):
                merged = _as_mapping(value, pt.is_map(column.type))
                row = rows[i]
                if merged is _BAD_JSON:
                    rows[i] = None
                elif row is not None and merged:
                    row.update(merged)
            continue
        for i, value in enumerate(values):
            row = rows[i]
            if value is not None and row is not None:
                row[name] = value
    return rows


_BAD_JSON: dict[str, Any] = {}


def _as_mapping(value: Any, is_map: bool) -> dict[str, Any] | None:
    if value is None:
        return None
    if is_map:
        return dict(value)
    if isinstance(value, str | bytes):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return _BAD_JSON
        return parsed if isinstance(parsed, dict) else _BAD_JSON
    return value if isinstance(value, dict) else _BAD_JSON


# --------------------------------------------------------------------------------------------------
# dict input


def prepare_dicts(
    rows: Sequence[Mapping[str, Any]],
    spec: ColumnSpec,
    rules: RowRules,
    dim: DimensionState,
    namespace: str | None = None,
) -> Prepared:
    """Check and convert dicts ``{"id", "values", "sparse_values"?, "metadata"?, "namespace"?}``."""
    n = len(rows)
    id_key, vec_key = spec.id_column, spec.vector_column
    sparse_key = spec.sparse_column or "sparse_values"
    ns_key = spec.namespace_column or "namespace"
    if spec.id_from:
        ids = [derive_id([r.get(c) for c in spec.id_from]) for r in rows]
    else:
        ids = [_dict_id(r.get(id_key), rules) for r in rows]
    lengths = np.zeros(n, dtype=np.int64)
    nulls = np.zeros(n, dtype=bool)
    parts: list[np.ndarray] = []
    bad_type: set[int] = set()
    for i, r in enumerate(rows):
        v = r.get(vec_key)
        if v is None:
            nulls[i] = True
            continue
        try:
            arr = np.asarray(v, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError):
            nulls[i] = True
            bad_type.add(i)
            continue
        lengths[i] = arr.size
        parts.append(arr)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    has_sparse = any(sparse_key in r for r in rows)
    sparse = [_dict_sparse(r.get(sparse_key)) for r in rows] if has_sparse else None
    used = {vec_key, sparse_key, ns_key} if spec.id_from else {id_key, vec_key, sparse_key, ns_key}
    metadata = [_dict_metadata(r, spec, used) for r in rows]
    has_ns = spec.namespace_column is not None or any(ns_key in r for r in rows)
    namespaces = [r.get(ns_key, namespace) for r in rows] if has_ns else None
    cols = Columns(n, ids, flat, offsets, nulls, sparse, metadata, namespaces)
    return _assemble(cols, rules, dim, namespace, bad_type)


def prepare_columns(
    cols: Columns, rules: RowRules, dim: DimensionState, namespace: str | None = None
) -> Prepared:
    """Check column-major rows; ids are normalised as dict ids are."""
    if not all(type(i) is str for i in cols.ids):
        cols.ids = [_dict_id(i, rules) for i in cols.ids]
    return _assemble(cols, rules, dim, namespace)


def _dict_id(value: Any, rules: RowRules) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return value if rules.numeric_ids else str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value  # refused in _assemble: ids must be strings or integers


def _dict_sparse(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value
    indices, values = getattr(value, "indices", None), getattr(value, "values", None)
    return {"indices": indices, "values": values}


def _dict_metadata(row: Mapping[str, Any], spec: ColumnSpec, used: set[str]) -> dict[str, Any] | None:
    base = row.get("metadata")
    out: dict[str, Any] = {}
    if base is not None:
        merged = _as_mapping(base, False)
        if merged is _BAD_JSON:
            return None
        out.update(merged or {})
    names = spec.metadata_columns if spec.metadata_columns is not None else [k for k in row if k not in used]
    for key in names:
        if key != "metadata" and row.get(key) is not None:
            out[key] = row[key]
    return out


# --------------------------------------------------------------------------------------------------
# the one place rows are checked


def _assemble(
    cols: Columns,
    rules: RowRules,
    dim: DimensionState,
    namespace: str | None,
    bad_vector_type: set[int] = frozenset(),  # type: ignore[assignment]
) -> Prepared:
    n = cols.n
    reasons: dict[int, str] = {}
    lengths = np.diff(cols.offsets)

    def refuse(rows: Iterable[int], reason: str) -> None:
        for i in rows:
            reasons.setdefault(int(i), reason)

    # ids are keys per namespace: the same id in two namespaces is two rows
    keys = cols.ids
    if (
        cols.namespaces is not None
    ):  # a namespace that is not a string is refused below; repr keeps it hashable
        keys = [
            (ns if ns is None or type(ns) is str else repr(ns), i)
            for ns, i in zip(cols.namespaces, cols.ids, strict=True)
        ]
    generations = None
    if not _ids_all_fine(cols.ids, keys, rules):  # the per-row walk only when something is wrong
        generations = _check_ids(cols.ids, keys, rules, refuse, reasons)

    # dense vectors
    has_sparse = None if cols.sparse is None else np.array([s is not None for s in cols.sparse], dtype=bool)
    refuse(sorted(bad_vector_type), "vector is not a sequence of numbers")
    missing = cols.null_vector | (lengths == 0)
    if has_sparse is not None and rules.allow_sparse_only:
        missing_ok = missing & has_sparse
    else:
        missing_ok = np.zeros(n, dtype=bool)
    refuse(np.flatnonzero(missing & ~missing_ok), "null vector")
    present = ~missing
    if dim.value is None and present.any():
        dim.learn(lengths[present])
    dense_ok = present.copy()
    if dim.value is not None:
        wrong = present & (lengths != dim.value)
        for row in np.flatnonzero(wrong):
            refuse([int(row)], f"vector has {int(lengths[row])} dimensions; expected {dim.value}")
        dense_ok &= ~wrong
    finite = _finite_rows(cols.flat, cols.offsets, dense_ok)
    refuse(np.flatnonzero(dense_ok & ~finite), "vector contains NaN or infinity")

    # sparse vectors
    sparse_rows: list[tuple[np.ndarray, np.ndarray] | None] | None = None
    if cols.sparse is not None:
        sparse_rows = []
        for i, value in enumerate(cols.sparse):
            parsed, problem = _check_sparse(value)
            if problem:
                refuse([i], problem)
            sparse_rows.append(parsed)

    # metadata
    if cols.metadata is not None:
        for i, md in enumerate(cols.metadata):
            if md is None:
                refuse([i], "metadata is not a JSON object")
            elif md:
                # every encoder writes metadata as JSON or from JSON types: what orjson refuses, no database takes
                try:
                    size = metadata_json_len(md)
                except TypeError as exc:
                    refuse([i], f"metadata cannot be written as JSON: {exc}")
                    continue
                if rules.max_metadata_bytes is not None and size > rules.max_metadata_bytes:
                    refuse([i], f"metadata is {size} bytes as JSON; the limit is {rules.max_metadata_bytes}")

    # namespaces
    ns_values: list[Any] = [namespace] * n if cols.namespaces is None else cols.namespaces
    for i, ns in enumerate(ns_values):
        if ns is not None and not isinstance(ns, str):
            refuse([i], f"namespace {ns!r} is not a string")

    return _group(
        cols,
        reasons,
        dense_ok & ~np.isin(np.arange(n), list(reasons)),
        sparse_rows,
        ns_values,
        dim,
        generations,
    )


def _ids_all_fine(ids: list[Any], keys: list[Any], rules: RowRules) -> bool:
    """True when every id is a non-empty string (or int) within the length limit and every key (the id,
    or (namespace, id)) is unique: the usual case."""
    if not ids:
        return True
    try:
        if len(set(keys)) != len(keys):
            return False
    except TypeError:  # an unhashable id: the walk refuses it
        return False
    if all(type(i) is str for i in ids):
        return min(map(len, ids)) > 0 and max(map(len, ids)) <= rules.max_id_length
    return all(type(i) is int for i in ids)


def _check_ids(
    ids: list[Any],
    keys: list[Any],
    rules: RowRules,
    refuse: Callable[[Iterable[int], str], None],
    reasons: dict[int, str],
) -> np.ndarray | None:
    """The per-row walk: missing, empty, too long and wrongly typed ids are refused.

    Returns each row's generation, or ``None`` when every key is unique: the number of earlier
    rows with the same key (the id, or (namespace, id)). A repeated id is not refused: rows go
    to the database in generations, each after the one before, so the last occurrence wins.
    """
    seen: dict[Any, int] = {}
    generations = np.zeros(len(ids), dtype=np.int64)
    for i, key in enumerate(ids):
        if key is None:
            refuse([i], "missing id")
        elif isinstance(key, str):
            if not key:
                refuse([i], "empty id")
            elif len(key) > rules.max_id_length:
                refuse([i], f"id is {len(key)} characters long; the limit is {rules.max_id_length}")
        elif not isinstance(key, int):
            refuse([i], f"id {key!r} is neither a string nor an integer")
        if i not in reasons:
            generations[i] = seen.get(keys[i], 0)
            seen[keys[i]] = int(generations[i]) + 1
    return generations if generations.any() else None


def metadata_json_len(metadata: dict[str, Any] | None) -> int:
    """Bytes of a row's metadata as JSON (0 when empty): the limit check here, and backends' size estimates."""
    return len(orjson.dumps(metadata, default=str, option=orjson.OPT_SERIALIZE_NUMPY)) if metadata else 0


def _finite_rows(flat: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per row: all values finite (rows not in ``rows`` count as finite)."""
    n = len(rows)
    if n and flat.size and flat.size % n == 0 and (np.diff(offsets) == flat.size // n).all():
        # one pass, no n×dim temporary: a row with NaN or inf has a non-finite sum; a non-finite sum
        # can also be an overflow of large finite values, so those few rows are checked exactly
        matrix = flat.reshape(n, -1)
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.isfinite(matrix.sum(axis=1))
        for row in np.flatnonzero(~out):
            out[row] = bool(np.isfinite(matrix[row]).all())
        return out | ~rows
    bad = ~np.isfinite(flat)
    if not bad.any():
        return np.ones(len(rows), dtype=bool)
    row_of = np.searchsorted(offsets, np.flatnonzero(bad), side="right") - 1
    out = np.ones(len(rows), dtype=bool)
    out[row_of] = False
    return out


def _check_sparse(value: Any) -> tuple[tuple[np.ndarray, np.ndarray] | None, str | None]:
    if value is None:
        return None, None
    indices, values = (
        (value.get("indices"), value.get("values")) if isinstance(value, Mapping) else (None, None)
    )
    if indices is None or values is None:
        return None, "sparse vector needs both indices and values"
    try:
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        val = np.asarray(values, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        return None, "sparse indices must be integers and values numbers"
    if idx.size != val.size:
        return None, f"sparse vector has {idx.size} indices but {val.size} values"
    if idx.size and idx.min() < 0:
        return None, "sparse index is negative"
    if idx.size and idx.max() > MAX_SPARSE_INDEX:
        return None, "sparse index is 2^32 or more"
    if idx.size > 1 and not (np.diff(idx) > 0).all():
        dup = (np.diff(idx) == 0).any()
        return None, "sparse indices are duplicated" if dup else "sparse indices are not sorted ascending"
    if not np.isfinite(val).all():
        return None, "sparse vector contains NaN or infinity"
    return (idx.astype(np.uint32), val), None


def _group(
    cols: Columns,
    reasons: dict[int, str],
    dense_ok: np.ndarray,
    sparse_rows: list[tuple[np.ndarray, np.ndarray] | None] | None,
    ns_values: list[Any],
    dim: DimensionState,
    generations: np.ndarray | None = None,
) -> Prepared:
    """Failures for refused rows; one RowBatch per namespace (and generation of a repeated id) for the rest."""
    out = Prepared()
    by_reason: dict[str, list[int]] = {}
    for i, reason in sorted(reasons.items()):
        by_reason.setdefault(reason, []).append(i)
    for reason, rows in by_reason.items():
        ids = tuple(None if cols.ids[i] is None else str(cols.ids[i]) for i in rows)
        out.failures.append(BatchFailure(ids=ids, error=reason, error_type="Invalid"))

    keep = np.ones(cols.n, dtype=bool)
    keep[list(reasons)] = False
    if not keep.any():
        return out
    matrix = _matrix(cols, dense_ok, dim.value)
    # one batch per (generation, namespace, has a dense vector): a batch's rows are all dense or all
    # sparse-only, and hold an id once; generations go out in order, so a repeated id's last row wins
    groups: dict[tuple[int, Any, bool], list[int]] = {}
    if len(set(ns_values)) == 1 and generations is None:  # the usual case: no walk over the rows
        for dense in (True, False):
            rows = np.flatnonzero(keep & (dense_ok == dense)).tolist()
            if rows:
                groups[(0, ns_values[0], dense)] = rows
    else:
        for row in np.flatnonzero(keep):
            generation = 0 if generations is None else int(generations[row])
            groups.setdefault((generation, ns_values[row], bool(dense_ok[row])), []).append(int(row))
    for (_, ns, dense), rows in sorted(groups.items(), key=lambda group: group[0][0]):
        every = len(rows) == cols.n
        vectors = None
        if dense and matrix is not None:
            vectors = matrix if every else matrix[np.asarray(rows)]
        out.batches.append(
            RowBatch(
                ids=cols.ids if every else [cols.ids[i] for i in rows],
                vectors=vectors,
                sparse=None
                if sparse_rows is None
                else (sparse_rows if every else [sparse_rows[i] for i in rows]),
                metadata=_kept_metadata(cols.metadata, rows, every),
                namespace=ns,
            )
        )
    return out


def _kept_metadata(
    metadata: list[dict[str, Any] | None] | None, rows: list[int], every: bool
) -> list[dict[str, Any]] | None:
    """Metadata of kept rows (rows whose metadata was unreadable were refused, so none is None here)."""
    if metadata is None:
        return None
    return [m or {} for m in metadata] if every else [metadata[i] or {} for i in rows]


def _matrix(cols: Columns, dense_ok: np.ndarray, dim: int | None) -> np.ndarray | None:
    """An (n, dim) float32 matrix over all n rows: a view when all rows are valid, else a gathered copy."""
    if dim is None or not dense_ok.any():
        return None
    if dense_ok.all() and cols.flat.size == cols.n * dim:
        return np.ascontiguousarray(cols.flat.reshape(cols.n, dim))
    matrix = np.zeros((cols.n, dim), dtype=np.float32)
    for i in np.flatnonzero(dense_ok):
        start = cols.offsets[i]
        matrix[i] = cols.flat[start : start + dim]
    return matrix
