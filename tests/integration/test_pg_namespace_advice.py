"""Rows that carry their own namespace (a dict row's or a Beam element's "namespace") into a table without a
namespace column fail alone, and the advice they carry helps: the ALTER TABLE it gives makes the next
write land, and the option it names makes create=true build the column. Advising create=true for a table
that exists (as create=true had just made it) could not help."""

from __future__ import annotations

import re
from typing import Any

from vectordb.connector import connect

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401

ROWS = [
    {"id": "a", "values": [1.0, 2.0], "namespace": "tenant1"},
    {"id": "a", "values": [3.0, 4.0], "namespace": "tenant2"},
    {"id": "b", "values": [5.0, 6.0]},
]


def sql(server: PgServer, statement: str) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def test_the_alter_table_the_failure_gives_lets_the_rows_land(pg_server: PgServer, pg_table: str) -> None:
    with connect(pg_server.uri(pg_table), create=True, on_error="report") as client:
        report = client.write(ROWS)
    assert report.written == 1 and report.failed == 2
    reasons = {failure.error for failure in report.failures}
    assert all("has no namespace column" in reason for reason in reasons), reasons
    assert not any("set option namespace/namespace_column with create=true" in reason for reason in reasons)
    found = re.search(r"ALTER TABLE .*? DEFAULT ''", next(iter(reasons)))
    assert found is not None, reasons
    sql(pg_server, found.group())
    with connect(pg_server.uri(pg_table), on_error="report") as client:
        report = client.write(ROWS)
    assert report.ok and report.written == 3, report
    # the primary key is still (id): one row per id, the last namespace's
    stored = sql(pg_server, f'SELECT namespace, id, embedding::text FROM "{pg_table}" ORDER BY id')
    assert stored == [("tenant2", "a", "[3,4]"), ("", "b", "[5,6]")]


def test_namespace_column_namespace_makes_create_build_the_column_for_the_rows_own(
    pg_server: PgServer, pg_table: str
) -> None:
    with connect(pg_server.uri(pg_table), create=True, namespace_column="namespace") as client:
        report = client.write(ROWS)
    assert report.ok and report.written == 3, report
    stored = sql(pg_server, f'SELECT namespace, id, embedding::text FROM "{pg_table}" ORDER BY namespace, id')
    assert stored == [("", "b", "[5,6]"), ("tenant1", "a", "[1,2]"), ("tenant2", "a", "[3,4]")]
