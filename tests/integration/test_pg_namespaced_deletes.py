"""Deletes that carry their own namespace (a dict row's "namespace" with ``op_column``) into a table without a
namespace column fail alone, as such upserts do, and the write's other rows land: the delete's statement
refused them with a ``ConfigError`` that stopped the whole write. A delete never widens to every namespace."""

from __future__ import annotations

from typing import Any

from vectordb.connector import connect

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401


def sql(server: PgServer, statement: str) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def test_a_namespaced_delete_into_a_table_without_namespaces_fails_alone(
    pg_server: PgServer, pg_table: str
) -> None:
    sql(pg_server, f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, embedding vector(2), metadata jsonb)')
    sql(pg_server, f"""INSERT INTO "{pg_table}" VALUES ('a', '[1,2]', NULL), ('b', '[1,2]', NULL)""")
    rows = [
        {"id": "a", "op": "delete", "namespace": "tenant1"},
        {"id": "b", "op": "delete"},
        {"id": "c", "values": [3.0, 4.0], "op": "upsert"},
    ]
    with connect(pg_server.uri(pg_table), op_column="op", on_error="report") as client:
        report = client.write(rows)
    assert (report.written, report.deleted, report.failed) == (2, 1, 1), report  # written counts deletes
    (failure,) = report.failures
    assert failure.ids == ("a",) and failure.op == "delete" and failure.error_type == "Invalid"
    assert "rows carry namespace 'tenant1' but table" in failure.error and "ALTER TABLE" in failure.error
    assert sql(pg_server, f'SELECT id FROM "{pg_table}" ORDER BY id') == [("a",), ("c",)]
