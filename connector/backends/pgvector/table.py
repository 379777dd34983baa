"""The table: its layout (learnt from the catalog, or the one ``create=true`` makes) and the SQL around a batch."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...errors import ConfigError, DimensionMismatch
from .options import PgvectorOptions
from .target import TableName, quote_ident

__all__ = [
    "Column",
    "TableLayout",
    "create_table_sql",
    "default_layout",
    "delete_ids_sql",
    "delete_sql",
    "id_fold_of",
    "learn_layout",
    "namespace_fold_of",
    "no_namespace_column",
    "truncate_sql",
]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    sql_type: str  # format_type() with the typmod (messages, CREATE): "vector(768)", "character varying(10)"
    # what staged values are cast to: the type without its typmod, since an explicit cast to varchar(10) cuts a
    # longer id short where the column's own (assignment) coercion refuses it (22001), and the row fails alone
    cast_type: str
    dimension: int | None = None  # a vector column's typmod, when it has one
    not_null: bool = False
    half: bool = False  # a halfvec column: a value half precision cannot hold fails the whole COPY

    @property
    def ident(self) -> str:
        return quote_ident(self.name)


@dataclass(frozen=True, slots=True)
class TableLayout:
    """The columns a write fills and the conflict key; ``stage_*`` are the staging table's types."""

    table: TableName
    id: Column
    vector: Column | None  # None: named vectors (option vector_columns) fill ``named`` instead
    metadata: Column | None = None
    namespace: Column | None = None
    sparse: Column | None = None
    key: tuple[str, ...] = ("id",)
    dimension: int | None = None  # the vector column's, when it has one
    sparse_dimension: int | None = None
    stage_vector_type: str = "vector"
    stage_sparse_type: str = "sparsevec"
    named: tuple[
        Column, ...
    ] = ()  # named vectors: a vector (or halfvec) column per name, in the write's order
    # the spellings the id column reads as one id (``rows.types.ID_FOLDS``; ``id_fold_of``): "any" until the
    # catalog is read, so rows prepared before it still keep the order of every id PostgreSQL may merge
    id_fold: str = "any"
    id_scale: int | None = None
    # how the namespace column compares: "" as written, "case" in any letter case (citext), "one" by a
    # collation the connector cannot model; "any" until the catalog is read (``namespace_fold_of``)
    namespace_fold: str = "any"

    @property
    def namespace_in_key(self) -> bool:
        return self.namespace is not None and self.namespace.name in self.key

    @property
    def vectors(self) -> tuple[Column, ...]:
        """The dense vector columns a row fills: the one vector, or each name's column."""
        return self.named if self.vector is None else (self.vector,)

    def stage_vectors(self) -> list[str]:
        """The staging table's vector columns, in COPY order: ``v``, or ``v0, v1, ...`` (one per name)."""
        return ["v"] if self.vector is not None else [f"v{k}" for k in range(len(self.named))]

    def stage_columns(self) -> list[tuple[str, str]]:
        """(name, type) in COPY order: the fixed-size vectors first, so their fields head the row."""
        cols = [(name, self.stage_vector_type) for name in self.stage_vectors()]
        cols.append(("id", "text"))
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
        targets = [self.id, *self.vectors]
        values = [f"CAST(s.id AS {self.id.cast_type})"]
        values += [
            f"CAST(s.{v} AS {c.cast_type})" for v, c in zip(self.stage_vectors(), self.vectors, strict=True)
        ]
        if self.metadata is not None:
            targets.append(self.metadata)
            values.append(f"CAST(s.m AS {self.metadata.cast_type})")
        if self.namespace is not None:
            targets.append(self.namespace)
            # rows without one: NULL where the column takes it, else '' (create=true's default)
            never_null = self.namespace_in_key or self.namespace.not_null
            values.append("COALESCE(s.ns, '')" if never_null else "s.ns")
        if self.sparse is not None:
            targets.append(self.sparse)
            values.append(f"CAST(s.sp AS {self.sparse.cast_type})")
        updates = ", ".join(f"{c.ident} = EXCLUDED.{c.ident}" for c in targets if c.name not in self.key)
        # the same order in every batch: concurrent batches then take row locks without deadlocking
        order = "s.ns, s.id" if self.namespace is not None else "s.id"
        return (
            f"INSERT INTO {self.table.sql} ({', '.join(c.ident for c in targets)}) "
            f"SELECT {', '.join(values)} FROM pg_temp.{self.stage_name()} s ORDER BY {order} "
            f"ON CONFLICT ({', '.join(quote_ident(k) for k in self.key)}) DO UPDATE SET {updates}"
        )


def default_layout(
    table: TableName,
    options: PgvectorOptions,
    dimension: int | None,
    named: Mapping[str, int | None] | None = None,
    types: Mapping[str, str] | None = None,
) -> TableLayout:
    """The layout ``create=true`` makes, also used when no catalog can be read (scripted transports).
    ``named``: a write of named vectors (option ``vector_columns``), a column per name (name -> its
    dimension) instead of ``embedding``. ``types``: pgvector's type names as the database spells them
    (``TYPES_SQL``: ``public.vector`` where its schema is not on the search_path), else unqualified."""
    namespaced = options.namespace is not None or options.namespace_column is not None
    spelt = types or {}
    vector_type = spelt.get(options.vector_type, options.vector_type)
    half = options.vector_type == "halfvec"
    sparse = None
    if options.sparse_column:
        sparsevec = spelt.get("sparsevec", "sparsevec")
        sparse = Column("sparse_embedding", _sized(sparsevec, options.sparse_dimension), sparsevec)
    return TableLayout(
        table=table,
        id=Column("id", options.id_type, options.id_type),
        vector=None
        if named
        else Column("embedding", _sized(vector_type, dimension), vector_type, dimension, half=half),
        metadata=Column("metadata", "jsonb", "jsonb"),
        namespace=Column("namespace", "text", "text", not_null=True) if namespaced else None,
        sparse=sparse,
        key=("namespace", "id") if namespaced else ("id",),
        dimension=None if named else dimension,
        sparse_dimension=options.sparse_dimension,
        named=tuple(
            Column(name, _sized(vector_type, dim), vector_type, dim, half=half)
            for name, dim in (named or {}).items()
        ),
    )


def _sized(type_name: str, dimension: int | None) -> str:
    """``vector(768)``; without a dimension, any: ``vector``."""
    return type_name + (f"({dimension})" if dimension else "")


def create_table_sql(layout: TableLayout) -> str:
    cols = []
    if layout.namespace is not None:
        cols.append(f"{layout.namespace.ident} text NOT NULL DEFAULT ''")
    cols.append(f"{layout.id.ident} {layout.id.sql_type} NOT NULL")
    # NULL allowed: rows with only a sparse vector
    cols.extend(f"{column.ident} {column.sql_type}" for column in layout.vectors)
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


def no_namespace_column(table: TableName, namespace: str) -> str:
    """Why rows carrying ``namespace`` cannot go into ``table``, and what helps."""
    return f"rows carry namespace {namespace!r} but table {table} has no namespace column: {add_namespace_column(table)}"


def add_namespace_column(table: TableName) -> str:
    """How to give a table that exists its namespace column: create=true alters no table, and makes the
    column only in one it creates with option namespace or namespace_column set, so advising it for a
    table already made (as create=true makes it for rows whose namespace no option names) cannot help."""
    return (
        f"ALTER TABLE {table.sql} ADD COLUMN namespace text NOT NULL DEFAULT ''; for one row per namespace "
        "and id, make (namespace, id) its primary key. create=true adds it only to a table it creates, and "
        "only with option namespace or namespace_column set (namespace_column=namespace for rows' own "
        '"namespace")'
    )


def delete_ids_sql(layout: TableLayout, namespace: str | None) -> tuple[str, bool]:
    """Delete a batch's ids, in ``namespace``: the statement (its first parameter the ids as text, cast to
    the id column's type) and whether a second parameter, the namespace, follows.

    Where the namespace is part of the key, rows without one are stored under ``''``; where it is not,
    ids are unique across namespaces, and a batch without one deletes its ids whatever their namespace
    (as an upsert without one replaces them). ``""`` is also the rows stored with a NULL namespace.
    """
    # numeric(p, s) rounds an id stored to s places: a delete rounds its ids alike, so that it meets the
    # row an upsert of the same id wrote ("7.001" is 7.00); other types' typmods cut (varchar(n)), not round
    id_type = layout.id.sql_type if layout.id_fold == "numeric" else layout.id.cast_type
    ids = f"{layout.id.ident} = ANY(CAST(%s AS {id_type}[]))"
    sql = f"DELETE FROM {layout.table.sql} WHERE {ids}"
    if layout.namespace is None:
        if namespace is not None:  # never widen a namespace's delete to the whole table
            raise ConfigError(no_namespace_column(layout.table, namespace))
        return sql, False
    ns = layout.namespace.ident
    if layout.namespace_in_key:
        return f"{sql} AND {ns} = %s", True
    if namespace is None:
        return sql, False
    return sql + (f" AND ({ns} = %s OR {ns} IS NULL)" if namespace == "" else f" AND {ns} = %s"), True


class CatalogColumn(NamedTuple):
    """A row of ``COLUMNS_SQL``."""

    name: str
    typname: str
    sql_type: str  # format_type() with the typmod: "character varying(10)"
    typmod: int
    # format_type() of the type, a domain's base type, without the typmod: "character varying", "bpchar"
    # (not "character", which is char(1)); as PostgreSQL's information_schema, one level of domain
    cast_type: str
    not_null: bool
    defaulted: bool  # a default, an identity or a generated column: filled when a row does not say
    base_type: str  # typname of the type, a domain's base type: "text", "bpchar", "citext", "uuid", "int8"
    nondeterministic: bool  # its collation compares texts that differ as equal (an ICU one: case, accents)

    @property
    def required(self) -> bool:
        """A row must give it a value."""
        return self.not_null and not self.defaulted


COLUMNS_SQL = (
    "SELECT a.attname, t.typname, format_type(a.atttypid, a.atttypmod), a.atttypmod, "
    "format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, -1), "
    "a.attnotnull, a.atthasdef OR a.attidentity <> '', "
    "(SELECT b.typname::text FROM pg_type b WHERE b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype "
    "ELSE a.atttypid END), "
    "COALESCE((SELECT NOT c.collisdeterministic FROM pg_collation c WHERE c.oid = a.attcollation), false) "
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
# the namespace is staged as text: a column of these types takes it without a cast
NAMESPACE_TYPES = ("text", "varchar", "citext")


def learn_layout(
    table: TableName,
    columns: Sequence[Sequence[Any]],
    keys: list[list[str]],
    types: dict[str, str],
    options: PgvectorOptions,
    dimension: int | None,
    named: Mapping[str, int | None] | None = None,
) -> TableLayout:
    """The layout of an existing table from its catalog rows (``COLUMNS_SQL``); ``ConfigError`` says what
    does not fit. ``named``: a write of named vectors (name -> the write's dimension, ``None`` if not known
    yet), each name a vector or halfvec column of that name instead of the one vector column."""
    by_name = {row[0]: CatalogColumn(*row) for row in columns}
    listing = ", ".join(f"{c.name} {c.sql_type}" for c in by_name.values())
    if "id" not in by_name:
        raise ConfigError(f"table {table} has no column id (columns: {listing})")
    vector = None
    table_dim = None
    if not named:
        vector_name = _pick(table, by_name, ("vector", "halfvec"), "embedding")
        if vector_name is None:
            raise ConfigError(f"table {table} has no vector or halfvec column (columns: {listing})")
        vector = _column(by_name[vector_name])
        table_dim = vector.dimension
        if dimension is not None and table_dim is not None and dimension != table_dim:
            raise DimensionMismatch(
                f"dimension mismatch: table {table} column {vector_name} is {vector.sql_type}, "
                f"the data has {dimension} dimensions",
                target_dimension=table_dim,
            )
    metadata_name = _pick(table, by_name, ("jsonb", "json"), "metadata")
    namespace = _namespace_column(table, by_name.get("namespace"), options)
    sparse = None
    sparse_dim = None
    if options.sparse_column:
        sparse_name = _pick(table, by_name, ("sparsevec",), "sparse_embedding")
        if sparse_name is None:
            raise ConfigError(
                f"table {table} has no sparsevec column for option sparse_column (columns: {listing})"
            )
        sparse = _column(by_name[sparse_name])
        sparse_dim = sparse.dimension or options.sparse_dimension
        if sparse_dim is None:
            raise ConfigError(
                f"table {table} column {sparse_name} is {sparse.sql_type}: set option sparse_dimension"
            )
        if options.sparse_dimension is not None and sparse.dimension not in (None, options.sparse_dimension):
            raise ConfigError(
                f"option sparse_dimension is {options.sparse_dimension} but {sparse_name} is {sparse.sql_type}"
            )
    id_fold, id_scale = id_fold_of(by_name["id"])
    layout = TableLayout(
        table=table,
        id=_column(by_name["id"]),
        vector=vector,
        metadata=None if metadata_name is None else _column(by_name[metadata_name]),
        namespace=namespace,
        sparse=sparse,
        key=_conflict_key(table, keys, namespace),
        dimension=table_dim,
        sparse_dimension=sparse_dim,
        stage_vector_type=types.get("vector", "vector"),
        stage_sparse_type=types.get("sparsevec", "sparsevec"),
        named=_named_columns(table, by_name, named or {}, listing),
        id_fold=id_fold,
        id_scale=id_scale,
        namespace_fold=namespace_fold_of(by_name.get("namespace")),
    )
    _check_unfilled(layout, by_name)
    return layout


# id types whose text is one id exactly as written; int2/4/8 read integer text ("07" is 7: ``integer_text``)
EXACT_ID_TYPES = ("text", "varchar")
INTEGER_ID_TYPES = ("int2", "int4", "int8")
FOLDED_ID_TYPES = {"uuid": "uuid", "citext": "case", "bpchar": "spaces", "numeric": "numeric"}


def id_fold_of(row: CatalogColumn) -> tuple[str, int | None]:
    """Which spellings the id column reads as one id, as ``RowRules.id_fold`` and ``id_scale`` name them:
    "" for text and integers (``integer_text`` tells those apart), a fold for uuid, citext, char(n) and
    numeric, and "one" for any other type or a collation that is not deterministic, whose equality the
    connector cannot model (then a write's rows go one after another, in input order)."""
    if row.nondeterministic:
        return "one", None
    if row.base_type in EXACT_ID_TYPES or row.base_type in INTEGER_ID_TYPES:
        return "", None
    fold = FOLDED_ID_TYPES.get(row.base_type, "one")
    scale = None
    if fold == "numeric" and row.typmod >= 4:  # numeric(p, s): ((p << 16) | s) + 4, s in 11 bits, signed
        scale = (row.typmod - 4) & 0x7FF
        scale = scale - 0x800 if scale & 0x400 else scale
    return fold, scale


def namespace_fold_of(row: CatalogColumn | None) -> str:
    """How the namespace column (text, varchar or citext) compares two namespaces, as ``TableLayout``'s
    ``namespace_fold`` names it."""
    if row is None or row.nondeterministic:
        return "one" if row is not None else ""
    return "case" if row.base_type == "citext" else ""


def _column(row: CatalogColumn) -> Column:
    """The column a write fills; a vector type's typmod is its dimension."""
    dimension = row.typmod if row.typname in ("vector", "halfvec", "sparsevec") and row.typmod > 0 else None
    return Column(row.name, row.sql_type, row.cast_type, dimension, row.not_null, row.typname == "halfvec")


def _namespace_column(table: TableName, row: CatalogColumn | None, options: PgvectorOptions) -> Column | None:
    """The ``namespace`` column, if any, of a text type: every row staged fills it (a write without a
    namespace too), and a staged text goes into no other type (integer, uuid) without a cast."""
    if row is None:
        if options.namespace is not None or options.namespace_column is not None:
            raise ConfigError(
                f"table {table} has no namespace column for option namespace/namespace_column: "
                f"{add_namespace_column(table)}"
            )
        return None
    if row.typname not in NAMESPACE_TYPES:
        raise ConfigError(
            f"table {table} column namespace is {row.sql_type}: the connector writes namespaces as text "
            f"(into {', '.join(NAMESPACE_TYPES)}): change its type, or rename the column if it is not "
            "the rows' namespace"
        )
    return _column(row)


def _check_unfilled(layout: TableLayout, by_name: Mapping[str, CatalogColumn]) -> None:
    """A column that needs a value the write does not give would fail every row, each with the same
    PostgreSQL reason after a costly isolation: refuse it once, by name."""
    filled = {
        c.name for c in (layout.id, *layout.vectors, layout.metadata, layout.namespace, layout.sparse) if c
    }
    unfilled = [c for c in by_name.values() if c.required and c.name not in filled]
    if unfilled:
        listing = ", ".join(f"{c.name} {c.sql_type}" for c in unfilled)
        raise ConfigError(
            f"table {layout.table} has NOT NULL column(s) without a default that the connector does not "
            f"fill: {listing}: give each a DEFAULT, or drop NOT NULL"
        )


def _named_columns(
    table: TableName, by_name: Mapping[str, CatalogColumn], named: Mapping[str, int | None], listing: str
) -> tuple[Column, ...]:
    """Each name's column: present, vector or halfvec, and of the write's dimension where both are known
    (the dimension is the column's typmod, ``vector(768)``); else ``ConfigError`` naming the name. Another
    dimension is a ``DimensionMismatch``: where the rows gave it (no option ``vector_dimensions``), the
    client yields to the column's, and rows of another length fail alone."""
    out = []
    for name, wanted in named.items():
        where = f"option vector_columns: name {name!r}: table {table}"
        if name not in by_name:
            raise ConfigError(f"{where} has no column {name!r} (columns: {listing})")
        row = by_name[name]
        if row.typname not in ("vector", "halfvec"):
            raise ConfigError(f"{where} column {name!r} is {row.sql_type}, not vector or halfvec")
        column = _column(row)
        if wanted is not None and column.dimension is not None and wanted != column.dimension:
            raise DimensionMismatch(
                f"{where} column {name!r} is {row.sql_type}, the write's vectors have {wanted} dimensions",
                target_dimension=column.dimension,
            )
        out.append(column)
    return tuple(out)


def _pick(
    table: TableName, by_name: Mapping[str, CatalogColumn], typnames: tuple[str, ...], preferred: str
) -> str | None:
    """The column called ``preferred`` if its type fits, else the only column of those types."""
    if preferred in by_name and by_name[preferred].typname in typnames:
        return preferred
    found = [name for name, row in by_name.items() if row.typname in typnames]
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
