"""PostgreSQL + pgvector: what a table of the user's own, a name or the URI could get silently wrong.

Ids longer than a ``varchar(n)``/``char(n)`` id column, names PostgreSQL would cut, a namespace column
that is not text, a NOT NULL column the write does not fill, ``tls`` against the URI's ``sslmode``,
and the password in a repr or an error: each either fails loudly, naming the option or column, or is
written as asked. Against a real server, read back with psycopg.
"""

from __future__ import annotations

from typing import Any

import pytest

from vectordb.connector import ConfigError, ConnectError, connect
from vectordb.connector.backends.pgvector import PgTarget

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401


def sql(server: PgServer, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        cur = conn.execute(statement, params or None)
        return cur.fetchall() if cur.description else []


def rows(*ids: str) -> list[dict[str, Any]]:
    return [{"id": row_id, "values": [1.0, 2.0, float(i)], "n": i} for i, row_id in enumerate(ids)]


# -- ids and the id column's length ----------------------------------------------------------------


@pytest.mark.parametrize("id_type", ["varchar(10)", "char(10)", "id10"])
def test_ids_longer_than_the_id_column_fail_alone_and_delete_nothing(
    pg_server: PgServer, pg_table: str, id_type: str
) -> None:
    """An explicit cast to varchar(10) would cut both long ids to 'customer-0': one row, reported as two.
    ``id10``: a domain over varchar(10), cast to its base type."""
    if id_type == "id10":
        sql(pg_server, f'CREATE DOMAIN "{pg_table}_id10" AS varchar(10)')
        id_type = f'"{pg_table}_id10"'
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id {id_type} PRIMARY KEY, embedding vector(3), metadata jsonb)',
    )
    with connect(pg_server.uri(pg_table), on_error="report") as client:
        report = client.upsert(rows("customer-0001", "customer-0002", "short"))
    assert (report.written, report.failed) == (1, 2)
    assert sorted(report.failed_ids) == ["customer-0001", "customer-0002"]
    assert all("too long" in failure.error for failure in report.failures)
    assert sql(pg_server, f'SELECT rtrim(id) FROM "{pg_table}"') == [("short",)]

    sql(pg_server, f"INSERT INTO \"{pg_table}\" VALUES ('customer-0', '[1,1,1]', '{{}}')")
    with connect(pg_server.uri(pg_table), on_error="report") as client:
        assert client.delete(["customer-0999-never-written"]).ok  # an id the table cannot hold: not there
    assert sql(pg_server, f'SELECT rtrim(id) FROM "{pg_table}" ORDER BY 1') == [("customer-0",), ("short",)]


# -- the namespace column --------------------------------------------------------------------------


@pytest.mark.parametrize("ns_type", ["integer", "uuid"])
@pytest.mark.parametrize("in_key", [False, True])
def test_a_namespace_column_not_of_text_is_a_config_error(
    pg_server: PgServer, pg_table: str, ns_type: str, in_key: bool
) -> None:
    """Staged as text, a namespace goes into no integer or uuid column: every row would fail."""
    key = "namespace, id" if in_key else "id"
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id text, namespace {ns_type}, embedding vector(3), metadata jsonb, '
        f"PRIMARY KEY ({key}))",
    )
    for namespace in (None, "5"):  # a write without a namespace too
        with (
            connect(pg_server.uri(pg_table), namespace=namespace, max_retries=0) as client,
            pytest.raises(ConfigError, match=f"column namespace is {ns_type}") as caught,
        ):
            client.upsert(rows("r0", "r1"))
        assert "text" in str(caught.value)
    assert sql(pg_server, f'SELECT count(*) FROM "{pg_table}"') == [(0,)]


@pytest.mark.parametrize("ns_type", ["text", "varchar(20)", "citext"])
def test_a_namespace_column_of_a_text_type_takes_the_namespace(
    pg_server: PgServer, pg_table: str, ns_type: str
) -> None:
    if ns_type == "citext":
        sql(pg_server, "CREATE EXTENSION IF NOT EXISTS citext")
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id text, namespace {ns_type} NOT NULL, embedding vector(3), '
        "metadata jsonb, PRIMARY KEY (namespace, id))",
    )
    with connect(pg_server.uri(pg_table), namespace="tenant-a") as client:
        assert client.upsert(rows("r0", "r1")).written == 2
    with connect(pg_server.uri(pg_table)) as client:
        assert client.upsert(rows("r0")).written == 1
    got = sql(pg_server, f'SELECT namespace::text, id FROM "{pg_table}" ORDER BY 1, 2')
    assert got == [("", "r0"), ("tenant-a", "r0"), ("tenant-a", "r1")]


def test_a_not_null_namespace_outside_the_key_takes_rows_without_one_as_empty(
    pg_server: PgServer, pg_table: str
) -> None:
    """Where the column refuses NULL, a row without a namespace is stored under '' (as where it is keyed)."""
    sql(
        pg_server,
        f"CREATE TABLE \"{pg_table}\" (id text PRIMARY KEY, namespace text NOT NULL DEFAULT '', "
        "embedding vector(3), metadata jsonb)",
    )
    with connect(pg_server.uri(pg_table)) as client:
        assert client.upsert(rows("r0", "r1")).written == 2
        assert client.upsert(rows("r2"), namespace="a").written == 1
        assert client.clear("") == f"namespace '' of table {pg_table} (2 rows)"
    assert sql(pg_server, f'SELECT namespace, id FROM "{pg_table}"') == [("a", "r2")]


# -- a column the write does not fill --------------------------------------------------------------


def test_a_not_null_column_without_a_default_is_a_config_error_naming_it(
    pg_server: PgServer, pg_table: str
) -> None:
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, embedding vector(3), metadata jsonb, '
        "owner text NOT NULL, created timestamptz NOT NULL DEFAULT now(), "
        "serial_no bigint GENERATED ALWAYS AS IDENTITY, note text)",
    )
    with (
        connect(pg_server.uri(pg_table), on_error="report") as client,
        pytest.raises(ConfigError, match=r"owner text: give each a DEFAULT") as caught,
    ):
        client.upsert(rows(*(f"r{i}" for i in range(100))))
    for filled in ("created", "serial_no", "note"):  # a default, an identity, NULL allowed
        assert filled not in str(caught.value)
    sql(pg_server, f"ALTER TABLE \"{pg_table}\" ALTER COLUMN owner SET DEFAULT 'loader'")
    with connect(pg_server.uri(pg_table)) as client:
        assert client.upsert(rows("r0")).written == 1


# -- names PostgreSQL would cut --------------------------------------------------------------------

LONG = "embeddings_for_customer_support_knowledge_base_articles_version_"  # 64 bytes


@pytest.mark.parametrize(
    ("uri_table", "collection", "part"),
    [
        (LONG + "2025_q3", None, "table"),
        (None, LONG + "2025_q3", "table"),
        (None, f"{LONG}.items", "schema"),
        (None, "é" * 32, "table"),  # 32 characters, 64 bytes
    ],
)
def test_a_name_longer_than_63_bytes_is_a_config_error(
    pg_server: PgServer, uri_table: str | None, collection: str | None, part: str
) -> None:
    """PostgreSQL cuts names at 63 bytes: ..._2024_q1 and ..._2025_q3 would be one table."""
    base = pg_server.uri("x").rsplit("&table=", 1)[0]
    uri = base + (f"&table={uri_table}" if uri_table else "")
    with pytest.raises(ConfigError, match=f"option collection: {part} name .* longer than PostgreSQL's 63"):
        connect(uri, collection=collection, create=True)
    assert sql(pg_server, "SELECT relname FROM pg_class WHERE relname LIKE 'embeddings_for_customer%'") == []


def test_a_name_of_63_bytes_is_the_table(pg_server: PgServer) -> None:
    name = LONG[:63]
    try:
        with connect(pg_server.uri(name), create=True) as client:
            assert client.upsert(rows("a")).written == 1
        assert sql(pg_server, f'SELECT id FROM "{name}"') == [("a",)]
    finally:
        sql(pg_server, f'DROP TABLE IF EXISTS "{name}"')


# -- the URI: TLS, and the password ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("sslmode", "tls"),
    [("disable", True), ("allow", True), ("prefer", True), ("require", False), ("verify-full", False)],
)
def test_tls_against_the_uris_sslmode_is_a_config_error_naming_both(sslmode: str, tls: bool) -> None:
    uri = f"postgresql://loader:pw@db.example.com/app?table=t&sslmode={sslmode}"
    with pytest.raises(ConfigError, match=f"option tls={str(tls).lower()} and the URI's sslmode={sslmode}"):
        PgTarget.parse(uri, None, tls)
    with pytest.raises(ConfigError, match="disagree"):
        connect(uri, tls=str(tls).lower())


@pytest.mark.parametrize(("sslmode", "tls"), [("require", True), ("verify-ca", True), ("disable", False)])
def test_tls_that_agrees_with_the_uris_sslmode_keeps_it(sslmode: str, tls: bool) -> None:
    target = PgTarget.parse(f"postgresql://u@db.example.com/app?sslmode={sslmode}&table=t", None, tls)
    assert target.conninfo == f"postgresql://u@db.example.com/app?sslmode={sslmode}"


def test_the_targets_repr_holds_no_password() -> None:
    client = connect("postgresql://loader:PWREPR-777@127.0.0.1:1/db?table=t")
    shown = repr(client.backend.target)  # type: ignore[attr-defined]
    assert "PWREPR-777" not in shown and "loader:***@127.0.0.1:1/db" in shown


@pytest.mark.parametrize("password", ["Xq7/LmN2pass", "Xq7?LmN2pass", "Xq7#LmN2pass", "p@ss:w0rd"])
def test_a_password_with_uri_delimiters_is_masked_in_describe_and_connect_errors(password: str) -> None:
    """urlsplit ends the netloc at the first ``/``, ``?`` or ``#``: its ``password`` is then a piece."""
    uri = f"postgresql://loader:{password}@127.0.0.1:9/app"
    with connect(uri, collection="t", max_retries=0) as client:
        assert password not in client.backend.describe()  # type: ignore[attr-defined]
        with pytest.raises(ConnectError) as caught:
            client.upsert(rows("a"))
    for piece in {password, *password.replace("?", "/").replace("#", "/").split("/")} - {""}:
        assert piece not in str(caught.value), piece
