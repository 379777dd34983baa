"""A table whose name holds a dot is named quoted, as in SQL: ``"my.dotted"``, ``schema."a.b"`` (option
collection, or the URI's table=). Unquoted, the first dot still ends the schema's name, as before."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.pgvector import TableName

from .pg_server import PgServer, pg_server_fixture  # noqa: F401

SCHEMA = "vdb_dots"


def sql(server: PgServer, statement: str) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def base_uri(server: PgServer) -> str:
    return f"postgresql://postgres@/postgres?host={server.socket_dir}"


def test_a_quoted_name_with_a_dot_is_one_table(pg_server: PgServer) -> None:
    sql(pg_server, 'DROP TABLE IF EXISTS "my.dotted"')
    sql(pg_server, 'CREATE TABLE "my.dotted" (id text PRIMARY KEY, embedding vector(2), metadata jsonb)')
    try:
        with connect(base_uri(pg_server), collection='"my.dotted"') as client:
            assert client.write([{"id": "a", "values": [1, 2]}]).ok
            assert '"my.dotted"' in repr(client)
        quoted = quote('"my.dotted"', safe="")
        uri = f"{base_uri(pg_server)}&table={quoted}"
        with connect(uri) as client:
            assert client.write([{"id": "b", "values": [3, 4]}]).ok
        assert sql(pg_server, 'SELECT id FROM "my.dotted" ORDER BY id') == [("a",), ("b",)]
    finally:
        sql(pg_server, 'DROP TABLE IF EXISTS "my.dotted"')


def test_create_makes_a_dotted_name_in_a_schema(pg_server: PgServer) -> None:
    sql(pg_server, f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    try:
        with connect(base_uri(pg_server), collection=f'{SCHEMA}."a.b"', create=True) as client:
            assert client.write([{"id": "a", "values": [1, 2]}]).ok
        assert sql(pg_server, f'SELECT id, embedding::text FROM {SCHEMA}."a.b"') == [("a", "[1,2]")]
    finally:
        sql(pg_server, f'DROP TABLE IF EXISTS {SCHEMA}."a.b"')


def test_unquoted_the_first_dot_ends_the_schema() -> None:
    assert TableName.parse("my.dotted") == TableName("my", "dotted")
    assert TableName.parse("s.a.b") == TableName("s", "a.b")
    assert TableName.parse('q"uote') == TableName(None, 'q"uote')  # a quote inside a name, as written
    assert TableName.parse('"we""ird.x"') == TableName(None, 'we"ird.x')
    assert TableName.parse('"My Schema"."a.b"') == TableName("My Schema", "a.b")
    for bad in ['"a.b', '"a"."b"."c"', '"a"x', '""', '"a".']:
        with pytest.raises(ConfigError, match="option collection"):
            TableName.parse(bad)
