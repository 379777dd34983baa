"""A ``citext`` id compares by the database's ``lower()``, which in a UTF-8 locale (``C.UTF-8``,
``en_US.UTF-8``: the usual) lower-cases ``İ`` to ``i``: ``'İD'`` and ``'id'`` are one row there. The rows'
keys took Python's ``casefold`` (``'i̇d'``), so the two went side by side and the first written could win.
The tests' server runs in the C locale, where they are two rows; this database is made UTF-8."""

from __future__ import annotations

from typing import Any

import psycopg

from vectordb.connector import connect
from vectordb.connector.rows import RowRules

from .pg_server import PgServer, pg_server_fixture  # noqa: F401

DB = "utf8_citext"


def run(conninfo: str, statement: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def test_ids_one_in_a_utf8_locale_keep_their_order(pg_server: PgServer) -> None:
    keys = RowRules(id_fold="case").row_keys(["İD", "id", "Straße", "STRASSE"])
    assert keys[0] == keys[1] and keys[2] == keys[3]
    with pg_server.connect() as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DB}")
        admin.execute(f"CREATE DATABASE {DB} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8'")
    uri = pg_server.uri("t_citext").replace("@/postgres?", f"@/{DB}?")
    conninfo = uri.split("&table=")[0]
    run(conninfo, "CREATE EXTENSION vector")
    run(conninfo, "CREATE EXTENSION citext")
    assert run(conninfo, "SELECT 'İD'::citext = 'id'::citext") == [(True,)]
    run(conninfo, "CREATE TABLE t_citext (id citext PRIMARY KEY, embedding vector(2), metadata jsonb)")
    # the first row's statement is slow: sent side by side, the second would land first and be overwritten
    run(
        conninfo,
        "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.metadata->>'v' = 'first' THEN PERFORM pg_sleep(0.4); END IF; RETURN NEW; END $$",
    )
    run(
        conninfo,
        "CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON t_citext FOR EACH ROW EXECUTE FUNCTION slow()",
    )
    with connect(uri, on_error="report", batch_size=1, max_concurrency=4) as client:
        assert client.write(
            [{"id": "warm", "values": [0, 0], "metadata": {"v": "warm"}}]
        ).ok  # the table read
        report = client.write(
            [
                {"id": "İD", "values": [1, 1], "metadata": {"v": "first"}},
                {"id": "id", "values": [2, 2], "metadata": {"v": "last"}},
            ]
        )
    assert report.ok
    assert run(conninfo, "SELECT metadata->>'v' FROM t_citext WHERE id <> 'warm'") == [("last",)]
