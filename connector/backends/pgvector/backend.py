from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np

from ...errors import AuthError, ConfigError, Rejected, ServerError
from ...options import BackendOptions
from ...redaction import Secrets
from ...report import BatchFailure
from ...rows import DELETE, RowBatch, RowRules
from ...rows.types import id_sizes, text_ids
from ...transports.base import SqlTransport, Transport, WireReply, WireRequest
from ..base import Backend, BatchOutcome, RequestLimits
from .copy import encode_copy, json_bytes
from .options import MAX_DIMENSION, PgvectorOptions
from .table import (
    COLUMNS_SQL,
    KEYS_SQL,
    TYPES_SQL,
    Column,
    TableLayout,
    create_table_sql,
    default_layout,
    delete_ids_sql,
    delete_sql,
    learn_layout,
    no_namespace_column,
    truncate_sql,
)
from .target import MAX_IDENTIFIER_BYTES, PgTarget

__all__ = ["PgvectorBackend"]

# SQLSTATEs of a TRUNCATE that a DELETE may still do, and why (for the log line)
TRUNCATE_REFUSED = {
    "42501": "no TRUNCATE privilege",
    "0A000": "a foreign key references the table",
}


# halfvec's largest value; pgvector rounds a float4 to the nearest half, so up to 65520 (exclusive) a value
# becomes ±65504, as every value is rounded, and from there on infinity, which it refuses
HALFVEC_MAX = 65504.0
HALFVEC_OVERFLOW = np.float32(65520.0)


class PgvectorBackend(Backend[PgvectorOptions]):
    name: ClassVar[str] = "postgresql"
    named_vectors = "yes"  # a vector (or halfvec) column per name
    multi_vectors = "no"
    vectors_refused: ClassVar[Mapping[str, str]] = {
        "multi_vector_columns": (
            "pgvector has no multi-vector type: a vector[] column holds a list of vectors, but no operator or "
            "index compares them by late interaction (MaxSim); write them to qdrant or weaviate"
        )
    }
    options_type: ClassVar[type[BackendOptions]] = PgvectorOptions

    # No per-statement row limit in PostgreSQL; a request is bounded to keep memory and
    # transaction length sane, and kept under one jsonb value's size so every row that fits
    # a request fits jsonb. Ids stay under a btree entry's ~2.7 kB even at 4 bytes per character.
    limits = RequestLimits(
        max_rows=100_000, max_bytes=256_000_000, default_rows=1000, default_bytes=16_000_000
    )
    # which spellings are one id follows the id column's type (``_use_layout``); until the catalog is read,
    # every spelling any id type reads as one is one key ("any"): a bigint reads "07" as 7, a uuid a UUID
    # in braces, citext "Doc" as "doc", char(n) "ab " as "ab"
    rules = RowRules(
        max_id_length=512,
        max_metadata_bytes=None,
        allow_sparse_only=True,
        numeric_ids=True,
        integer_text=True,
        uuid_ids=True,
        id_fold="any",
    )

    def __init__(self, options: PgvectorOptions) -> None:
        super().__init__(options)
        self.target = PgTarget.parse(options.uri, options.collection, options.tls)
        # named vectors (option vector_columns): each name is a column of that name
        self._names = tuple(options.vector_columns or {})
        stated = options.vector_dimensions or {}
        named = {name: stated.get(name) for name in self._names} if self._names else None
        self._use_layout(default_layout(self.target.table, options, options.dimension, named))

    def _use_layout(self, layout: TableLayout) -> None:
        """The table's layout, and what follows from it: the statements, whether a row's key holds its
        namespace (else one id in two namespaces is one row, and its rows go in input order), and which
        spellings of an id are one row (the id column's type: ``table.id_fold_of``)."""
        self.layout = layout
        self._statements = self._compile()
        integers = layout.id_fold == "" and layout.id.cast_type in ("smallint", "integer", "bigint")
        # until the catalog is read, the key may hold no namespace (options suggest one), and one it holds
        # may be citext: one id in two namespaces is one row, and namespaces are keyed in any case
        self.rules = dataclasses.replace(
            type(self).rules,
            namespaced=layout.namespace_in_key and layout.namespace_fold not in ("any", "one"),
            namespace_case=layout.namespace_fold == "case",
            integer_text=layout.id_fold == "any" or integers,
            uuid_ids=False,  # a uuid column's spellings are its fold's
            id_fold=layout.id_fold,
            id_scale=layout.id_scale,
        )

    def describe(self) -> str:
        return self.target.label

    @property
    def secrets(self) -> Secrets:
        """``Secrets.of`` the options, and the passwords as ``PgTarget`` read them: a ``password=`` value
        holding a ``#``, or a password after a ``?password=…@`` reading, is not the one ``Secrets.of`` finds."""
        if self._secrets is None:
            self._secrets = Secrets.joined([Secrets.of(self.options), Secrets(*self.target.passwords)])
        return self._secrets

    def open_transport(self) -> Transport:
        from ...transports.postgres import PostgresTransport

        return PostgresTransport(
            self.target.conninfo,
            secrets=self.secrets,
            password=self.options.credential(),
            label=self.describe(),
            max_connections=self.options.max_concurrency,
        )

    def check_target(self, transport: Transport, dimension: int | None) -> None:
        """Learn the table's columns (creating it with ``create=true``); ``ConfigError`` if it doesn't fit."""
        if not isinstance(transport, SqlTransport):
            return  # a scripted transport: keep the layout create=true would make
        db = transport
        dimension = dimension or self.options.dimension
        timeout_s = self.options.timeout_s
        types, columns = self._catalog(db)
        regclass = self.target.table.sql
        if not columns:
            self._create(db, dimension, types)
            columns = self._query(db, COLUMNS_SQL, (regclass,), timeout_s=timeout_s)
        keys = [list(k) for (k,) in self._query(db, KEYS_SQL, (regclass,), timeout_s=timeout_s)]
        self._use_layout(learn_layout(self.target.table, columns, keys, types, self.options, dimension))

    def fixed_dimension(self) -> int | None:
        return self.layout.dimension

    def _catalog(self, db: SqlTransport) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
        """The vector types the database knows (pgvector installed if it is missing) and the table's
        columns (none: no table yet)."""
        timeout_s = self.options.timeout_s
        types = dict(self._query(db, TYPES_SQL, timeout_s=timeout_s))
        if "vector" not in types:
            types = self._install_pgvector(db)
        return types, self._query(db, COLUMNS_SQL, (self.target.table.sql,), timeout_s=timeout_s)

    def check_named_target(
        self, transport: Transport, dimensions: Mapping[str, int | None]
    ) -> dict[str, int]:
        """Named vectors (option ``vector_columns``): each name a vector or halfvec column of that name and
        dimension (``vector(768)``; a column without one takes any); with ``create=true`` a missing table
        gets a ``vector_type(N)`` column per name (no ANN index: build them after the load), made once every
        dimension is known."""
        if not isinstance(transport, SqlTransport):
            return {name: dim for name, dim in dimensions.items() if dim is not None}
        db = transport
        timeout_s = self.options.timeout_s
        types, columns = self._catalog(db)
        regclass = self.target.table.sql
        if not columns:
            if self.options.create and any(dim is None for dim in dimensions.values()):
                return {}  # nothing is made while a name's dimension is unknown
            self._create(db, None, types, named={name: dimensions[name] for name in self._names})
            columns = self._query(db, COLUMNS_SQL, (regclass,), timeout_s=timeout_s)
        keys = [list(k) for (k,) in self._query(db, KEYS_SQL, (regclass,), timeout_s=timeout_s)]
        named = {name: dimensions.get(name) for name in self._names}
        self._use_layout(learn_layout(self.target.table, columns, keys, types, self.options, None, named))
        return {column.name: column.dimension for column in self.layout.named if column.dimension is not None}

    def clear_target(self, transport: Transport, namespace: str | None) -> str:
        """Delete the rows of ``namespace`` (``None``: every row); the table, its indexes and grants stay.

        The whole table is emptied with TRUNCATE (immediate, leaves no dead rows to vacuum);
        where TRUNCATE is refused (no TRUNCATE privilege, or another table's foreign key
        references this one) it falls back to DELETE, which needs only the DELETE privilege. A
        namespace is a DELETE. ``check_target`` has learnt the layout first.
        """
        table = self.layout.table
        if not isinstance(transport, SqlTransport):
            raise ConfigError(f"{self.describe()}: clearing table {table} needs a PostgreSQL connection")
        db = transport
        if namespace is not None:
            deleted = self._delete(db, namespace)
            return f"namespace {namespace!r} of table {table} ({deleted} rows)"
        try:
            self._query(db, truncate_sql(table), timeout_s=self.options.timeout_s)
        except (AuthError, Rejected) as exc:
            if exc.status not in TRUNCATE_REFUSED:
                raise self._clear_error(exc) from None
            deleted = self._delete(db, None)
            return f"all rows of table {table} ({deleted} rows, by DELETE: {TRUNCATE_REFUSED[exc.status]})"
        except ServerError as exc:
            raise self._clear_error(exc) from None
        return f"all rows of table {table}"

    def _query(
        self, db: SqlTransport, sql: str, params: tuple[Any, ...] = (), *, timeout_s: float | None = None
    ) -> list[tuple[Any, ...]]:
        """One control-plane statement, retried under the backends' one rule (``Backend.retried``)."""
        return self.retried(
            lambda: db.query(sql, params, timeout_s=timeout_s or self.options.timeout_s), db.host
        )

    def _delete(self, db: SqlTransport, namespace: str | None) -> int:
        params = () if namespace is None else (namespace,)
        try:
            ((deleted,),) = self._query(
                db, delete_sql(self.layout, namespace), params, timeout_s=self.options.timeout_s
            )
        except ServerError as exc:
            raise self._clear_error(exc) from None
        return int(deleted)

    def _clear_error(self, exc: ServerError) -> ServerError:
        """The same kind of error, saying which table could not be cleared."""
        return type(exc)(f"cannot clear table {self.layout.table}: {exc}", status=exc.status)

    def _install_pgvector(self, db: SqlTransport) -> dict[str, str]:
        where = self.describe()
        if not self.options.create:
            raise ConfigError(
                f"{where}: the pgvector extension is not installed: CREATE EXTENSION vector (or set create=true)"
            )
        try:
            self._query(db, "CREATE EXTENSION IF NOT EXISTS vector", timeout_s=self.options.timeout_s)
        except ServerError as exc:
            if exc.retryable:  # a lock wait or a restart, not a missing privilege
                raise
            raise ConfigError(
                f"{where}: cannot install pgvector ({exc}): ask the owner to CREATE EXTENSION vector"
            ) from None
        return dict(self._query(db, TYPES_SQL, timeout_s=self.options.timeout_s))

    def _create(
        self,
        db: SqlTransport,
        dimension: int | None,
        types: Mapping[str, str],
        *,
        named: Mapping[str, int | None] | None = None,
    ) -> None:
        """Create the table: ``embedding`` of ``dimension``, or with named vectors a column per name of
        ``named`` (name -> dimension, each known) instead; its vector types spelt as ``types`` (the
        catalog's: schema-qualified where pgvector's schema is not on the search_path)."""
        table = self.target.table
        if not self.options.create:
            raise ConfigError(
                f"{self.describe()}: table {table} does not exist: create it, or set create=true "
                "(no ANN index is built during the load: build it afterwards)"
            )
        if self.options.sparse_column and self.options.sparse_dimension is None:
            raise ConfigError(
                f"option sparse_dimension is needed to create table {table} with a sparsevec(N) column"
            )
        if named:
            self._check_column_names(named)
        elif dimension is None:
            raise ConfigError(
                f"option dimension is needed to create table {table}: no dense vector to learn it from"
            )
        for name, dim in (named or {"": dimension}).items():
            if dim is not None and dim > MAX_DIMENSION:
                which = f"option vector_columns: name {name!r}: " if name else ""
                raise ConfigError(
                    f"{which}pgvector stores at most {MAX_DIMENSION} dimensions in {self.options.vector_type}; "
                    f"got {dim}"
                )
        try:
            self._query(
                db,
                create_table_sql(default_layout(table, self.options, dimension, named, types)),
                timeout_s=self.options.timeout_s,
            )
        except ServerError:
            # another task may have created it at the same moment (CREATE … IF NOT EXISTS races on pg_type)
            if not self._query(db, COLUMNS_SQL, (table.sql,), timeout_s=self.options.timeout_s):
                raise

    def _check_column_names(self, named: Mapping[str, int | None]) -> None:
        """Names a created table can have as columns beside its own (id, metadata, namespace, sparse)."""
        own = {"id", "metadata", "namespace", "sparse_embedding"}
        for name in named:
            if name in own or len(name.encode()) > MAX_IDENTIFIER_BYTES:
                why = (
                    "is a column of the table"
                    if name in own
                    else f"is longer than {MAX_IDENTIFIER_BYTES} bytes"
                )
                raise ConfigError(
                    f"option vector_columns: name {name!r} {why}: create=true makes a column of each name"
                )

    def _compile(self) -> tuple[str, str, str]:
        layout = self.layout
        return layout.setup_sql(), layout.copy_sql(), layout.upsert_sql()

    # -- sizes ----------------------------------------------------------------------------------

    def row_bytes(self, batch: RowBatch) -> np.ndarray:
        """Encoded size per row: exact for vectors, ids and JSON metadata."""
        n = len(batch)
        if batch.op == DELETE:  # ids in one text[] parameter
            return id_sizes(batch.ids, utf8=True) + 8
        dense = 4 if batch.vectors is None else 8 + 4 * batch.vectors.shape[1]
        if batch.named_vectors:
            dense = sum(8 + 4 * matrix.shape[1] for matrix in batch.named_vectors.values())
        namespace = 4 + len((batch.namespace or "").encode())
        # field count, vector, id size, metadata size + jsonb version byte, namespace
        sizes = np.full(n, 2 + dense + 4 + 5 + namespace, dtype=np.int64)
        sizes += id_sizes(batch.ids, utf8=True)
        if batch.metadata is None:
            sizes += 2  # "{}"
        else:
            sizes += np.fromiter((len(json_bytes(m)) if m else 2 for m in batch.metadata), np.int64, n)
        if batch.sparse is not None:
            sizes += np.fromiter((4 if s is None else 16 + 8 * len(s[0]) for s in batch.sparse), np.int64, n)
        return sizes

    # -- encoding -------------------------------------------------------------------------------

    def request_for(self, batch: RowBatch) -> WireRequest:
        layout = self.layout
        if batch.op == DELETE:  # DELETE … WHERE id = ANY(…) in the rows' namespace, one transaction
            sql, with_namespace = delete_ids_sql(layout, batch.namespace)
            ids = array_literal(text_ids(batch.ids))  # ids with a NUL failed in refuse_deletes
            params = (ids, batch.namespace or "") if with_namespace else (ids,)
            return _statement_request(f"DELETE {layout.table}", sql, params)
        setup, copy, apply = self._statements
        body = encode_copy(batch, layout)
        return _copy_request(f"COPY {layout.table}", body, setup, copy, apply)

    def refuse(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """Rows the table has no column for fail alone, naming the column to add; the others go (a table
        of the user's own may lack the namespace, sparsevec or jsonb column the rows carry)."""
        layout = self.layout
        if batch.op == DELETE:
            return batch, []
        if batch.namespace is not None and layout.namespace is None:
            reason = no_namespace_column(layout.table, batch.namespace)
            return None, [batch.failure(range(len(batch)), reason, error_type="Invalid")]
        reasons: dict[int, str] = self._beyond_halfvec(batch)
        if batch.sparse is not None and layout.sparse is None:
            why = f"the row has a sparse vector but table {layout.table} has no sparsevec column (option sparse_column)"
            _join(reasons, (i for i, s in enumerate(batch.sparse) if s is not None), why)
        if batch.metadata is not None and layout.metadata is None:
            why = f"the row has metadata but table {layout.table} has no jsonb column: add metadata jsonb"
            _join(reasons, (i for i, m in enumerate(batch.metadata) if m), why)
        return batch.without(reasons)

    def _beyond_halfvec(self, batch: RowBatch) -> dict[int, str]:
        """Rows with a value a halfvec column cannot hold, each with every such vector's reason: pgvector
        refuses the whole COPY for one ("22003: "1e+06" is out of range for type halfvec"), and isolating
        the row costs requests and loses which vector it was. Two reductions a matrix when all is well."""
        layout = self.layout
        # (column, its rows' matrix, the input column it came from, the vector's name)
        matrices: list[tuple[Column, np.ndarray | None, str | None, str | None]]
        if layout.vector is not None:
            source = None if self.options.text_column else self.options.vector_column
            matrices = [(layout.vector, batch.vectors, source, None)]
        else:
            given = self.options.vector_columns or {}
            matrices = [(c, batch.named_vectors.get(c.name), given.get(c.name), c.name) for c in layout.named]
        found: dict[int, list[str]] = {}
        for column, matrix, source, name in matrices:
            if not column.half or matrix is None or not matrix.size:
                continue
            if matrix.min() > -HALFVEC_OVERFLOW and matrix.max() < HALFVEC_OVERFLOW:  # the usual batch
                continue
            over = np.abs(matrix) >= HALFVEC_OVERFLOW
            for row in np.flatnonzero(over.any(axis=1)):
                at = int(np.argmax(over[row]))
                found.setdefault(int(row), []).append(
                    _halfvec_reason(name, source, float(matrix[row, at]), at)
                )
        return {row: "; ".join(why) for row, why in found.items()}

    def refuse_deletes(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """Deletes in a namespace of a table without a namespace column fail alone, as its upserts do: a
        delete never widens to every namespace, and ``delete_ids_sql``'s refusal stopped the whole write
        for the rows of one (a dict row's or Beam element's own namespace). So do ids with a NUL
        (``_nul_ids``), which would fail the statement whole."""
        if batch.namespace is not None and self.layout.namespace is None:
            reason = no_namespace_column(self.layout.table, batch.namespace)
            return None, [batch.failure(range(len(batch)), reason, error_type="Invalid")]
        return batch.without(_nul_ids(batch))

    def outcome_of(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        # the transaction committed: every row of the batch is in the table (or, deleted, not in it)
        return BatchOutcome(written=len(batch))


def _join(reasons: dict[int, str], rows: Iterable[int], why: str) -> None:
    """``why`` for each of ``rows``, after a reason it already has: a row the table cannot hold for several
    reasons names each, not one a write."""
    for i in rows:
        reasons[i] = f"{reasons[i]}; {why}" if i in reasons else why


def _halfvec_reason(name: str | None, column: str | None, value: float, at: int) -> str:
    """Why a row's vector (``name``: a named one; ``column``: its input column, when known) is refused; the
    value as float32's shortest text, as the row holds it."""
    why = f"has {np.float32(value)!s} at index {at}, outside halfvec's range (±{HALFVEC_MAX:g})"
    if name is not None:
        return f"vector {name!r}{'' if column is None else f' (column {column!r})'} {why}"
    return f"vector {why}" if column is None else f"column {column!r}: vector {why}"


def _nul_ids(batch: RowBatch) -> dict[int, str]:
    """The delete rows whose id PostgreSQL text cannot hold (a NUL), with the reason: one such id in the
    statement fails it whole, the batch's other deletes with it."""
    if "\x00" not in "".join(i for i in batch.ids if isinstance(i, str)):  # the usual case, one pass
        return {}
    return {
        i: f"id {row_id!r}: PostgreSQL text cannot hold NUL (\\x00)"
        for i, row_id in enumerate(batch.ids)
        if isinstance(row_id, str) and "\x00" in row_id
    }


def array_literal(ids: list[str]) -> str:
    """``ids`` as one PostgreSQL array literal, ``{"a","b"}``, which the statement casts to the id column's
    array type: psycopg adapts a list of 1,000 strings one element at a time (about 650 µs of CPU a
    request), one string in one piece. Inside the quotes only ``\\`` and ``"`` need a backslash."""
    if not ids:
        return "{}"
    text = '","'.join(ids)
    if "\\" in text or text.count('"') != 2 * (len(ids) - 1):
        text = '","'.join(i.replace("\\", "\\\\").replace('"', '\\"') for i in ids)
    return '{"' + text + '"}'


def _statement_request(method: str, sql: str, params: tuple[Any, ...]) -> WireRequest:
    from ...transports.postgres import StatementRequest

    carried = params[0].encode()  # what the ids parameter holds, for the byte counts
    return StatementRequest(method, carried, sql=sql, params=params)


def _copy_request(method: str, body: bytes, setup: str, copy: str, apply: str) -> WireRequest:
    from ...transports.postgres import CopyRequest

    return CopyRequest(method, body, setup=setup, copy=copy, apply=apply)
