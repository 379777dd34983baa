"""PostgreSQL + pgvector: ``postgresql://user@host:5432/db?table=items`` (also ``postgres://``).

The URI is any libpq URI (a unix socket is ``?host=/path``); the connector's own parameter
``table`` (or option ``collection``; ``schema.table`` allowed, names taken as written) is
removed before the rest reaches libpq. A password may sit in the URI or in option
``api_key``; it never appears in ``describe()``, reprs or errors.

One batch is one transaction (see transports/postgres.py): a binary ``COPY`` of the rows
into a session-local staging table, then ``INSERT … SELECT … ON CONFLICT (id) DO UPDATE``,
a true upsert that replaces the stored row's vector, metadata, namespace and sparse vector.
The COPY stream is built here from the numpy matrix in one vectorised step; pgvector's
binary ``vector`` is int16 dim, int16 unused, then big-endian float32 values. Rows go in
ordered by id, so concurrent batches lock rows in the same order; a deadlock or
serialization failure that still happens is retried. PostgreSQL applies or rejects a
batch whole, so the engine bisects rejections to the rows at fault, and the report quotes
PostgreSQL's reason (e.g. a NUL character, which text and jsonb refuse).

The table, learnt in ``check_target``: an ``id`` column with a unique key (alone, or with
``namespace``), the one ``vector``/``halfvec`` column (``embedding`` when there are
several), a ``jsonb`` ``metadata`` column, optionally ``namespace text`` and a
``sparsevec`` column for option ``sparse_column``. With ``create=true`` a missing table is
made as::

    CREATE TABLE items (id text PRIMARY KEY, embedding vector(768), metadata jsonb)
    -- with namespaces: namespace text NOT NULL DEFAULT '', PRIMARY KEY (namespace, id)
    -- with sparse_column: sparse_embedding sparsevec(sparse_dimension)

and no ANN index is built: an index slows every insert of a bulk load several-fold. Build
it after the load, e.g. ``CREATE INDEX ON items USING hnsw (embedding vector_cosine_ops)``.

Clearing (``Client.clear``, Spark's overwrite) keeps the table, its indexes and grants:
``TRUNCATE`` for the whole table (a ``DELETE`` where TRUNCATE is not allowed), ``DELETE …
WHERE namespace = …`` for one namespace.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import unquote, urlsplit

import msgspec
import numpy as np
import orjson

from ..errors import AuthError, ConfigError, DimensionMismatch, Rejected, ServerError
from ..options import BackendOptions
from ..rows import RowBatch, RowRules
from ..transports.base import SqlTransport, Transport, WireReply, WireRequest
from .base import Backend, BatchOutcome, RequestLimits

__all__ = ["PgvectorBackend", "PgvectorOptions", "TableLayout", "encode_copy", "learn_layout"]

MAX_DIMENSION = 16_000  # pgvector's vector and halfvec
JSONB_MAX_BYTES = (1 << 28) - 1  # one jsonb value
SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)  # binary COPY header: flags 0, no extension
TRAILER = struct.pack(">h", -1)
NULL = struct.pack(">i", -1)
_I32 = struct.Struct(">i").pack
_SPARSE_HEAD = struct.Struct(">iiii").pack  # field size, dim, nnz, unused
_EMPTY_JSONB = _I32(3) + b"\x01{}"  # jsonb binary: version 1, then the JSON text
_JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
# SQLSTATEs of a TRUNCATE that a DELETE may still do, and why (for the log line)
TRUNCATE_REFUSED = {
    "42501": "no TRUNCATE privilege",
    "0A000": "a foreign key references the table",
}


class PgvectorOptions(BackendOptions, kw_only=True, forbid_unknown_fields=True):
    id_type: Literal["text", "bigint"] = "text"  # create=true: the id column's type
    vector_type: Literal["vector", "halfvec"] = "vector"  # create=true: halfvec stores 2 bytes per value
    sparse_dimension: Annotated[int, msgspec.Meta(ge=1, le=1_000_000_000)] | None = None


# --------------------------------------------------------------------------------------------------
# names and the URI


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class TableName:
    schema: str | None
    name: str

    @classmethod
    def parse(cls, text: str) -> TableName:
        schema, dot, name = text.partition(".")
        if not dot:
            schema, name = "", schema
        if not name or (dot and not schema):
            raise ConfigError(f"option collection: {text!r} is not a table name (TABLE or SCHEMA.TABLE)")
        return cls(schema or None, name)

    @property
    def sql(self) -> str:
        return (
            f"{quote_ident(self.schema)}.{quote_ident(self.name)}" if self.schema else quote_ident(self.name)
        )

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name


@dataclass(frozen=True, slots=True)
class PgTarget:
    """A URI split into what libpq gets (``conninfo``) and what the connector keeps."""

    conninfo: str
    table: TableName
    label: str  # the URI with the password masked

    @classmethod
    def parse(cls, uri: str, collection: str | None) -> PgTarget:
        parts = urlsplit(uri)
        database, _, transport = parts.scheme.lower().partition("+")
        if database not in ("postgresql", "postgres") or transport not in ("", "psycopg"):
            raise ConfigError(
                f"option uri: pgvector URIs start postgresql:// or postgres://, not {parts.scheme}://"
            )
        kept: list[str] = []
        table: str | None = None
        for item in parts.query.split("&") if parts.query else ():
            key, _, value = item.partition("=")
            if unquote(key) == "table":
                table = unquote(value)
            else:
                kept.append(item)  # as written: libpq decodes its own parameters
        if table and collection and table != collection:
            raise ConfigError(
                f"option collection {collection!r} and the URI's table={table!r} disagree: give one"
            )
        table = table or collection
        if not table:
            raise ConfigError(
                "option uri: name the table: postgresql://host/db?table=items (or option collection)"
            )
        query = "&".join(kept)
        conninfo = f"postgresql://{parts.netloc}{parts.path}" + (f"?{query}" if query else "")
        return cls(conninfo=conninfo, table=TableName.parse(table), label=_masked(parts, query, table))


def _masked(parts: Any, query: str, table: str) -> str:
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
    items = [
        ("password=***" if item.partition("=")[0] == "password" else item)
        for item in query.split("&")
        if item
    ]
    items.append(f"table={table}")
    return f"{parts.scheme}://{netloc}{parts.path}?{'&'.join(items)}"


# --------------------------------------------------------------------------------------------------
# the table


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    sql_type: str  # format_type(): "vector(768)", "text", "bigint", "jsonb"

    @property
    def ident(self) -> str:
        return quote_ident(self.name)


@dataclass(frozen=True, slots=True)
class TableLayout:
    """The columns a write fills and the conflict key; ``stage_*`` are the staging table's types."""

    table: TableName
    id: Column
    vector: Column
    metadata: Column | None = None
    namespace: Column | None = None
    sparse: Column | None = None
    key: tuple[str, ...] = ("id",)
    dimension: int | None = None  # the vector column's, when it has one
    sparse_dimension: int | None = None
    stage_vector_type: str = "vector"
    stage_sparse_type: str = "sparsevec"

    @property
    def namespace_in_key(self) -> bool:
        return self.namespace is not None and self.namespace.name in self.key

    def stage_columns(self) -> list[tuple[str, str]]:
        """(name, type) in COPY order: the fixed-size vector first, so its field heads the row."""
        cols = [("v", self.stage_vector_type), ("id", "text")]
        if self.metadata is not None:
            cols.append(("m", "jsonb"))
        if self.namespace is not None:
            cols.append(("ns", "text"))
        if self.sparse is not None:
            cols.append(("sp", self.stage_sparse_type))
        return cols

    def stage_name(self) -> str:
        digest = hashlib.sha1(repr(self.stage_columns()).encode()).hexdigest()[:12]
        return f"vdb_stage_{digest}"

    def setup_sql(self) -> str:
        cols = ", ".join(f"{name} {typ}" for name, typ in self.stage_columns())
        return f"CREATE TEMP TABLE IF NOT EXISTS {self.stage_name()} ({cols}) ON COMMIT DELETE ROWS"

    def copy_sql(self) -> str:
        names = ", ".join(name for name, _ in self.stage_columns())
        return f"COPY pg_temp.{self.stage_name()} ({names}) FROM STDIN (FORMAT BINARY)"

    def upsert_sql(self) -> str:
        targets = [self.id, self.vector]
        values = [f"CAST(s.id AS {self.id.sql_type})", f"CAST(s.v AS {self.vector.sql_type})"]
        if self.metadata is not None:
            targets.append(self.metadata)
            values.append(f"CAST(s.m AS {self.metadata.sql_type})")
        if self.namespace is not None:
            targets.append(self.namespace)
            values.append("COALESCE(s.ns, '')" if self.namespace_in_key else "s.ns")
        if self.sparse is not None:
            targets.append(self.sparse)
            values.append(f"CAST(s.sp AS {self.sparse.sql_type})")
        updates = ", ".join(f"{c.ident} = EXCLUDED.{c.ident}" for c in targets if c.name not in self.key)
        # the same order in every batch: concurrent batches then take row locks without deadlocking
        order = "s.ns, s.id" if self.namespace is not None else "s.id"
        return (
            f"INSERT INTO {self.table.sql} ({', '.join(c.ident for c in targets)}) "
            f"SELECT {', '.join(values)} FROM pg_temp.{self.stage_name()} s ORDER BY {order} "
            f"ON CONFLICT ({', '.join(quote_ident(k) for k in self.key)}) DO UPDATE SET {updates}"
        )


def default_layout(table: TableName, options: PgvectorOptions, dimension: int | None) -> TableLayout:
    """The layout ``create=true`` makes, also used when no catalog can be read (scripted transports)."""
    namespaced = options.namespace is not None or options.namespace_column is not None
    vector_type = options.vector_type + (f"({dimension})" if dimension else "")
    sparse = None
    if options.sparse_column:
        dims = f"({options.sparse_dimension})" if options.sparse_dimension else ""
        sparse = Column("sparse_embedding", f"sparsevec{dims}")
    return TableLayout(
        table=table,
        id=Column("id", options.id_type),
        vector=Column("embedding", vector_type),
        metadata=Column("metadata", "jsonb"),
        namespace=Column("namespace", "text") if namespaced else None,
        sparse=sparse,
        key=("namespace", "id") if namespaced else ("id",),
        dimension=dimension,
        sparse_dimension=options.sparse_dimension,
    )


def create_table_sql(layout: TableLayout) -> str:
    cols = []
    if layout.namespace is not None:
        cols.append(f"{layout.namespace.ident} text NOT NULL DEFAULT ''")
    cols.append(f"{layout.id.ident} {layout.id.sql_type} NOT NULL")
    cols.append(f"{layout.vector.ident} {layout.vector.sql_type}")  # NULL for rows with only a sparse vector
    if layout.metadata is not None:
        cols.append(f"{layout.metadata.ident} jsonb")
    if layout.sparse is not None:
        cols.append(f"{layout.sparse.ident} {layout.sparse.sql_type}")
    cols.append(f"PRIMARY KEY ({', '.join(quote_ident(k) for k in layout.key)})")
    return f"CREATE TABLE IF NOT EXISTS {layout.table.sql} ({', '.join(cols)})"


def truncate_sql(table: TableName) -> str:
    """Empty the table. No RESTART IDENTITY: the table's sequences are configuration, kept like its indexes.

    TRUNCATE waits for an exclusive lock, and while it waits every new reader of the table
    queues behind it: the transport's lock timeout (``timeout_s``) bounds that stall.
    """
    return f"TRUNCATE TABLE {table.sql}"


def delete_sql(layout: TableLayout, namespace: str | None) -> str:
    """Delete the rows of ``namespace`` (every row for ``None``) and count them: one parameter, or none.

    ``""`` is also the rows written without a namespace: stored as ``''`` where the namespace is
    part of the key, as NULL otherwise.
    """
    where = ""
    if namespace is not None:
        if layout.namespace is None:  # never widen a namespace's delete to the whole table
            raise ConfigError(
                f"table {layout.table} has no namespace column, so no namespace {namespace!r} to clear: "
                "clear without a namespace empties the whole table"
            )
        ns = layout.namespace.ident
        where = f" WHERE {ns} = %s" + (f" OR {ns} IS NULL" if namespace == "" else "")
    return f"WITH gone AS (DELETE FROM {layout.table.sql}{where} RETURNING 1) SELECT count(*) FROM gone"


# (name, type name, format_type, typmod) per column, and the column lists of usable unique keys
COLUMNS_SQL = (
    "SELECT a.attname, t.typname, format_type(a.atttypid, a.atttypmod), a.atttypmod "
    "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
    "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
)
# ON CONFLICT needs a unique index that is neither partial, nor on expressions, nor deferrable
KEYS_SQL = (
    "SELECT array(SELECT a.attname::text FROM unnest(i.indkey) k "
    "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k) "
    "FROM pg_index i WHERE i.indrelid = to_regclass(%s) AND i.indisunique AND i.indimmediate "
    "AND i.indpred IS NULL AND i.indexprs IS NULL"
)
TYPES_SQL = (
    "SELECT t.typname, format_type(t.oid, NULL) FROM pg_type t "
    "JOIN pg_extension e ON e.extnamespace = t.typnamespace "
    "WHERE e.extname = 'vector' AND t.typname IN ('vector', 'halfvec', 'sparsevec')"
)


def learn_layout(
    table: TableName,
    columns: list[tuple[str, str, str, int]],
    keys: list[list[str]],
    types: dict[str, str],
    options: PgvectorOptions,
    dimension: int | None,
) -> TableLayout:
    """The layout of an existing table from its catalog rows; ``ConfigError`` says what does not fit."""
    by_name = {name: (typname, sql_type, typmod) for name, typname, sql_type, typmod in columns}
    listing = ", ".join(f"{name} {sql_type}" for name, _, sql_type, _ in columns)
    if "id" not in by_name:
        raise ConfigError(f"table {table} has no column id (columns: {listing})")
    vector_name = _pick(table, by_name, ("vector", "halfvec"), "embedding")
    if vector_name is None:
        raise ConfigError(f"table {table} has no vector or halfvec column (columns: {listing})")
    _, vector_sql, typmod = by_name[vector_name]
    table_dim = typmod if typmod > 0 else None
    if dimension is not None and table_dim is not None and dimension != table_dim:
        raise DimensionMismatch(
            f"dimension mismatch: table {table} column {vector_name} is {vector_sql}, "
            f"the data has {dimension} dimensions",
            target_dimension=table_dim,
        )
    metadata_name = _pick(table, by_name, ("jsonb", "json"), "metadata")
    namespace = Column("namespace", by_name["namespace"][1]) if "namespace" in by_name else None
    if namespace is None and (options.namespace is not None or options.namespace_column is not None):
        raise ConfigError(
            f"table {table} has no namespace column for option namespace/namespace_column: add namespace text"
        )
    sparse = None
    sparse_dim = None
    if options.sparse_column:
        sparse_name = _pick(table, by_name, ("sparsevec",), "sparse_embedding")
        if sparse_name is None:
            raise ConfigError(
                f"table {table} has no sparsevec column for option sparse_column (columns: {listing})"
            )
        _, sparse_sql, sparse_mod = by_name[sparse_name]
        sparse_dim = sparse_mod if sparse_mod > 0 else options.sparse_dimension
        if sparse_dim is None:
            raise ConfigError(
                f"table {table} column {sparse_name} is {sparse_sql}: set option sparse_dimension"
            )
        if options.sparse_dimension is not None and sparse_mod > 0 and sparse_mod != options.sparse_dimension:
            raise ConfigError(
                f"option sparse_dimension is {options.sparse_dimension} but {sparse_name} is {sparse_sql}"
            )
        sparse = Column(sparse_name, sparse_sql)
    key = _conflict_key(table, keys, namespace)
    return TableLayout(
        table=table,
        id=Column("id", by_name["id"][1]),
        vector=Column(vector_name, vector_sql),
        metadata=None if metadata_name is None else Column(metadata_name, by_name[metadata_name][1]),
        namespace=namespace,
        sparse=sparse,
        key=key,
        dimension=table_dim,
        sparse_dimension=sparse_dim,
        stage_vector_type=types.get("vector", "vector"),
        stage_sparse_type=types.get("sparsevec", "sparsevec"),
    )


def _pick(
    table: TableName, by_name: dict[str, tuple[str, str, int]], typnames: tuple[str, ...], preferred: str
) -> str | None:
    """The column called ``preferred`` if its type fits, else the only column of those types."""
    if preferred in by_name and by_name[preferred][0] in typnames:
        return preferred
    found = [name for name, (typname, _, _) in by_name.items() if typname in typnames]
    if len(found) > 1:
        raise ConfigError(
            f"table {table} has several {' or '.join(typnames)} columns ({', '.join(found)}): "
            f"the connector fills the one named {preferred}"
        )
    return found[0] if found else None


def _conflict_key(table: TableName, keys: list[list[str]], namespace: Column | None) -> tuple[str, ...]:
    sets = [set(k) for k in keys]
    if {"id"} in sets:
        return ("id",)
    if namespace is not None and {"id", "namespace"} in sets:
        return ("namespace", "id")
    raise ConfigError(
        f"table {table} has no primary key or unique index on (id) (or (namespace, id)): the upsert's "
        f"ON CONFLICT needs one, e.g. ALTER TABLE {table.sql} ADD PRIMARY KEY (id)"
    )


# --------------------------------------------------------------------------------------------------
# the backend


class PgvectorBackend(Backend[PgvectorOptions]):
    name: ClassVar[str] = "postgresql"
    options_type: ClassVar[type[BackendOptions]] = PgvectorOptions

    # No per-statement row limit in PostgreSQL; a request is bounded to keep memory and
    # transaction length sane, and kept under one jsonb value's size so every row that fits
    # a request fits jsonb. Ids stay under a btree entry's ~2.7 kB even at 4 bytes per character.
    limits = RequestLimits(
        max_rows=100_000, max_bytes=256_000_000, default_rows=1000, default_bytes=16_000_000
    )
    rules = RowRules(max_id_length=512, max_metadata_bytes=None, allow_sparse_only=True, numeric_ids=True)

    def __init__(self, options: PgvectorOptions) -> None:
        super().__init__(options)
        self.target = PgTarget.parse(options.uri, options.collection)
        self.layout = default_layout(self.target.table, options, options.dimension)
        self._statements = self._compile()

    def describe(self) -> str:
        return self.target.label

    def open_transport(self) -> Transport:
        from ..transports.postgres import PostgresTransport

        return PostgresTransport(
            self.target.conninfo,
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
        types = dict(self._query(db, TYPES_SQL, timeout_s=timeout_s))
        if "vector" not in types:
            types = self._install_pgvector(db)
        regclass = self.target.table.sql
        columns = self._query(db, COLUMNS_SQL, (regclass,), timeout_s=timeout_s)
        if not columns:
            self._create(db, dimension)
            columns = self._query(db, COLUMNS_SQL, (regclass,), timeout_s=timeout_s)
        keys = [list(k) for (k,) in self._query(db, KEYS_SQL, (regclass,), timeout_s=timeout_s)]
        self.layout = learn_layout(self.target.table, columns, keys, types, self.options, dimension)
        self._statements = self._compile()

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
        return self.retried(lambda: db.query(sql, params, timeout_s=timeout_s or self.options.timeout_s))

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

    def _create(self, db: SqlTransport, dimension: int | None) -> None:
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
        if dimension is None:
            raise ConfigError(
                f"option dimension is needed to create table {table}: no dense vector to learn it from"
            )
        if dimension > MAX_DIMENSION:
            raise ConfigError(
                f"pgvector stores at most {MAX_DIMENSION} dimensions in {self.options.vector_type}; got {dimension}"
            )
        try:
            self._query(
                db,
                create_table_sql(default_layout(table, self.options, dimension)),
                timeout_s=self.options.timeout_s,
            )
        except ServerError:
            # another task may have created it at the same moment (CREATE … IF NOT EXISTS races on pg_type)
            if not self._query(db, COLUMNS_SQL, (table.sql,), timeout_s=self.options.timeout_s):
                raise

    def _compile(self) -> tuple[str, str, str]:
        layout = self.layout
        return layout.setup_sql(), layout.copy_sql(), layout.upsert_sql()

    # -- sizes ----------------------------------------------------------------------------------

    def row_bytes(self, batch: RowBatch) -> np.ndarray:
        """Encoded size per row: exact for vectors, ids and JSON metadata."""
        n = len(batch)
        dense = 4 if batch.vectors is None else 8 + 4 * batch.vectors.shape[1]
        namespace = 4 + len((batch.namespace or "").encode())
        # field count, vector, id size, metadata size + jsonb version byte, namespace
        sizes = np.full(n, 2 + dense + 4 + 5 + namespace, dtype=np.int64)
        sizes += np.fromiter((len(str(i).encode()) for i in batch.ids), dtype=np.int64, count=n)
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
        if batch.namespace is not None and layout.namespace is None:
            raise ConfigError(
                f"rows carry namespace {batch.namespace!r} but table {layout.table} has no namespace column: "
                "add one (namespace text), or set option namespace/namespace_column with create=true"
            )
        if batch.sparse is not None and layout.sparse is None and any(s is not None for s in batch.sparse):
            raise ConfigError(
                f"rows carry sparse vectors but table {layout.table} has no sparsevec column (option sparse_column)"
            )
        if batch.metadata is not None and layout.metadata is None and any(batch.metadata):
            raise ConfigError(
                f"rows carry metadata but table {layout.table} has no jsonb column: add metadata jsonb"
            )
        setup, copy, apply = self._statements
        body = encode_copy(batch, layout)
        return _copy_request(f"COPY {layout.table}", body, setup, copy, apply)

    def outcome_of(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        # the transaction committed: every row of the batch is in the table
        return BatchOutcome(written=len(batch))


def _copy_request(method: str, body: bytes, setup: str, copy: str, apply: str) -> WireRequest:
    from ..transports.postgres import CopyRequest

    return CopyRequest(method, body, setup=setup, copy=copy, apply=apply)


# --------------------------------------------------------------------------------------------------
# binary COPY


def json_bytes(metadata: dict[str, Any]) -> bytes:
    """The row's metadata as JSON text; integers beyond 64 bits fall back to the standard library."""
    try:
        return orjson.dumps(
            metadata, default=str, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
        )
    except orjson.JSONEncodeError:
        return json.dumps(metadata, default=str, ensure_ascii=False).encode()


def encode_copy(batch: RowBatch, layout: TableLayout) -> bytes:
    """The binary COPY stream of ``batch`` in ``layout.stage_columns()`` order.

    The vector field has a fixed size, so the row's field count and the whole vector field
    are built for every row at once as a packed numpy record; the rest is joined per row.
    """
    n = len(batch)
    nfields = len(layout.stage_columns())
    heads = _dense_fields(batch.vectors, nfields, n)
    width = len(heads) // n if n else 0
    ids = [_text_field(str(i)) for i in batch.ids]
    metadata: list[bytes] | None = None
    if layout.metadata is not None:
        md = batch.metadata
        metadata = [_EMPTY_JSONB] * n if md is None else [_jsonb_field(m) if m else _EMPTY_JSONB for m in md]
    namespace = b""
    if layout.namespace is not None:
        namespace = NULL if batch.namespace is None else _text_field(batch.namespace)
    sparse: list[bytes] | None = None
    if layout.sparse is not None:
        dim = layout.sparse_dimension or 0
        sparse = [NULL] * n if batch.sparse is None else [_sparse_field(s, dim) for s in batch.sparse]
    parts: list[Any] = [SIGNATURE]
    append = parts.append
    for i in range(n):
        append(heads[i * width : (i + 1) * width])
        append(ids[i])
        if metadata is not None:
            append(metadata[i])
        if namespace:
            append(namespace)
        if sparse is not None:
            append(sparse[i])
    append(TRAILER)
    return b"".join(parts)


def _dense_fields(matrix: np.ndarray | None, nfields: int, n: int) -> memoryview:
    """Per row: int16 field count, then the vector field (int32 size, int16 dim, int16 unused, >f4 values)."""
    if matrix is None:  # rows with only a sparse vector
        return memoryview((struct.pack(">h", nfields) + NULL) * n)
    dim = matrix.shape[1]
    record = np.dtype(
        [("fields", ">i2"), ("size", ">i4"), ("dim", ">i2"), ("unused", ">i2"), ("values", ">f4", (dim,))]
    )
    out = np.empty(n, dtype=record)
    out["fields"] = nfields
    out["size"] = 4 + 4 * dim
    out["dim"] = dim
    out["unused"] = 0
    out["values"] = matrix  # one pass: float32 to big-endian
    return memoryview(out.view(np.uint8).reshape(-1).data)


def _text_field(text: str) -> bytes:
    raw = text.encode()
    return _I32(len(raw)) + raw


def _jsonb_field(metadata: dict[str, Any]) -> bytes:
    raw = json_bytes(metadata)
    return _I32(len(raw) + 1) + b"\x01" + raw


def _sparse_field(value: tuple[np.ndarray, np.ndarray] | None, dim: int) -> bytes:
    """sparsevec binary: int32 dim, int32 nnz, int32 unused, int32 indices (0-based), float32 values."""
    if value is None:
        return NULL
    indices, values = value
    nnz = len(indices)
    return (
        _SPARSE_HEAD(12 + 8 * nnz, dim, nnz, 0)
        + np.asarray(indices, dtype=">i4").tobytes()
        + np.asarray(values, dtype=">f4").tobytes()
    )
