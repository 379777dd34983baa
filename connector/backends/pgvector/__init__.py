"""PostgreSQL + pgvector: ``postgresql://user@host:5432/db?table=items`` (also ``postgres://``).

The URI is any libpq URI (a unix socket is ``?host=/path``); the connector's own parameter
``table`` (or option ``collection``; ``schema.table`` allowed, names taken as written, each at
most 63 bytes, which PostgreSQL would cut; a name holding a dot quoted as in SQL: ``"my.dotted"``,
``schema."a.b"``) is removed before the rest reaches libpq. A password
may sit in the URI (unencoded ``@``, ``/``, ``#``, ``?`` and ``:`` allowed: see ``PgTarget``) or in option
``api_key``; it never appears in ``describe()``, reprs or errors.
The URI's ``sslmode`` and option ``tls`` may not disagree (``ConfigError``).

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
several), a ``jsonb`` ``metadata`` column, optionally ``namespace`` (``text``, ``varchar`` or
``citext``) and a ``sparsevec`` column for option ``sparse_column``; any other NOT NULL column
needs a default. An id longer than a ``varchar(n)`` id column fails alone (PostgreSQL's 22001),
never cut short. With ``create=true`` a missing table is made as::

    CREATE TABLE items (id text PRIMARY KEY, embedding vector(768), metadata jsonb)
    -- with namespaces: namespace text NOT NULL DEFAULT '', PRIMARY KEY (namespace, id)
    -- with sparse_column: sparse_embedding sparsevec(sparse_dimension)

and no ANN index is built: an index slows every insert of a bulk load several-fold. Build
it after the load, e.g. ``CREATE INDEX ON items USING hnsw (embedding vector_cosine_ops)``.

Named vectors (option ``vector_columns``): a ``vector`` (or ``halfvec``) column per name, the column
named as the name (a quoted identifier: case and characters kept), each a fixed-size field of the COPY
row built from its name's matrix with the others in the same vectorised step. ``check_named_target``
checks each name's column on an existing table (missing, another type, another ``vector(N)``:
``ConfigError`` naming it); ``create=true`` makes ``"title" vector(768)`` and so on instead of
``embedding``, once every name's dimension is known, and no ANN index (build one per column after the
load). Multi-vectors are refused (``ConfigError`` before any row): pgvector has no multi-vector type.

Which rows are one row follows the id column's type, learnt with the table (``table.id_fold_of``): a
uuid column reads a UUID in any spelling (braces, ``urn:uuid:``, any case, hyphens or none) as one id,
citext any letter case, char(n) trailing spaces, numeric one number (``7``, ``7.0``, rounded to the
column's scale), an integer column integer text (``07``); a citext namespace in the key is keyed in any
case. The same row twice in a write then goes in input order, whatever the spelling. An id type or
collation the connector cannot model (float8, a case-insensitive ICU collation) makes every id of a write
one key: its rows go one after another, a request each. Rows prepared before the table is read (a write's
first rows) are keyed by every spelling any of those types merges, and by id alone across namespaces.

A batch of deletes is one transaction too: ``DELETE … WHERE id = ANY(CAST(%s AS <id type>[]))``
with the ids as one array parameter, and ``AND namespace = %s`` in the rows' namespace (see
``table.delete_ids_sql`` for rows without one). An id that is not there deletes nothing, and is no error.

Clearing (``Client.clear``, Spark's overwrite) keeps the table, its indexes and grants:
``TRUNCATE`` for the whole table (a ``DELETE`` where TRUNCATE is not allowed), ``DELETE …
WHERE namespace = …`` for one namespace.

Modules: ``target`` (names and the URI), ``table`` (the layout and its SQL), ``copy`` (the binary
COPY stream), ``options``, ``backend``.
"""

from __future__ import annotations

from .backend import PgvectorBackend
from .copy import encode_copy
from .options import PgvectorOptions
from .table import TableLayout, default_layout, delete_sql, learn_layout, truncate_sql
from .target import PgTarget, TableName

__all__ = [
    "PgTarget",
    "PgvectorBackend",
    "PgvectorOptions",
    "TableLayout",
    "TableName",
    "default_layout",
    "delete_sql",
    "encode_copy",
    "learn_layout",
    "truncate_sql",
]
