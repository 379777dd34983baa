"""create=true where pgvector's schema is not on the connection's search_path (a role's own search_path, or
the URI's ``options=-csearch_path=...``): the table is made with the vector types the catalog names
(``public.vector``), not the bare names, which PostgreSQL would not find ("type vector does not exist")."""

from __future__ import annotations

from typing import Any

import numpy as np

from vectordb.connector import connect

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401

SCHEMA = "vdb_no_vector"


def sql(server: PgServer, statement: str) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def off_path_uri(server: PgServer, table: str) -> str:
    """The table's URI, its connection's search_path the schema alone (pgvector lives in public)."""
    sql(server, f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    assert sql(
        server, "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
    ) == [("public",)]
    return server.uri(table) + f"&options=-csearch_path%3D{SCHEMA}"


def column_types(server: PgServer, table: str) -> dict[str, str]:
    rows = sql(
        server,
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
        f"WHERE attrelid = to_regclass('{SCHEMA}.\"{table}\"') AND attnum > 0 AND NOT attisdropped",
    )
    return dict(rows)


def test_create_off_the_search_path_makes_the_dense_and_sparse_columns(
    pg_server: PgServer, pg_table: str
) -> None:
    uri = off_path_uri(pg_server, pg_table)
    try:
        rows = [
            {
                "id": "a",
                "values": [1.0, 2.0],
                "sparse": {"indices": [1], "values": [3.0]},
                "metadata": {"k": 1},
            },
            {"id": "b", "values": [3.0, 4.0], "sparse": {"indices": [0, 4], "values": [1.0, 2.0]}},
        ]
        with connect(uri, create=True, sparse_column="sparse", sparse_dimension=5) as client:
            report = client.write(rows)
        assert report.ok and report.written == 2, report
        assert column_types(pg_server, pg_table)["embedding"] == "vector(2)"
        assert column_types(pg_server, pg_table)["sparse_embedding"] == "sparsevec(5)"
        stored = sql(
            pg_server,
            f'SELECT id, embedding::text, sparse_embedding::text FROM {SCHEMA}."{pg_table}" ORDER BY id',
        )
        assert stored == [("a", "[1,2]", "{2:3}/5"), ("b", "[3,4]", "{1:1,5:2}/5")]
    finally:
        sql(pg_server, f'DROP TABLE IF EXISTS {SCHEMA}."{pg_table}"')


def test_create_off_the_search_path_makes_halfvec_and_named_columns(
    pg_server: PgServer, pg_table: str
) -> None:
    uri = off_path_uri(pg_server, pg_table)
    try:
        vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
        with connect(uri, create=True, vector_type="halfvec", vector_columns={"title": "t"}) as client:
            report = client.write([{"id": f"r{i}", "t": vectors[i]} for i in range(2)])
        assert report.ok and report.written == 2, report
        assert column_types(pg_server, pg_table)["title"] == "halfvec(3)"
        stored = sql(pg_server, f'SELECT id, title::text FROM {SCHEMA}."{pg_table}" ORDER BY id')
        assert stored == [("r0", "[0,1,2]"), ("r1", "[3,4,5]")]
    finally:
        sql(pg_server, f'DROP TABLE IF EXISTS {SCHEMA}."{pg_table}"')
