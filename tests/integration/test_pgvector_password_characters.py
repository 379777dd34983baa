"""A PostgreSQL password holding ``@``, ``/``, ``#``, ``?`` or ``:`` unencoded, as generated passwords do.

libpq ends the user-info at the first ``@`` or ``/`` and the connector cut the URI at a ``#``: such a
password could never connect, and its pieces showed up as a host name in a DNS look-up, a port number,
a fragment in the target's label (``repr(client)``, Spark's job report, Beam's display data), or a
"name the table" error for a URI that names one. Here each connects to the real server (roles that
authenticate with scram-sha-256) and no piece of it shows in an error, a repr or a log.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from vectordb.connector import ConnectorError, connect
from vectordb.connector.backends.pgvector import PgTarget
from vectordb.connector.transports.base import forget_shared

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401

DIM = 4
# each piece is long enough not to occur by chance in a message; each password holds the delimiters
PASSWORDS = {
    "at": "Pfx7qHead@TailAtPW6",
    "slash": "HeadSlPW9/TailSlPW9",
    "hash": "HeadHashPW8#TailHashPW8",
    "question": "HeadQPW7?TailQPW7=x",
    "colon": "HeadColPW5:TailColPW5",
    "amp": "HeadAmpPW3&TailAmpPW3&&EndAmpPW3",  # in the query: items without "=" after password=
    "all": "AllHeadPW4@x/AllMidPW4#y?z=:AllTailPW4%zz",
}
ROLE_PREFIX = "pwchars_"


def pieces(password: str) -> list[str]:
    """The parts of ``password`` between its delimiters that are long enough to be telling."""
    for sep in "@/#?:=%&":
        password = password.replace(sep, " ")
    return [p for p in password.split() if len(p) >= 6]


def shown(error: BaseException) -> str:
    """Everything an error can show: each error of its chain, as str, repr and a formatted traceback."""
    out: list[str] = []
    seen: BaseException | None = error
    while seen is not None:
        out += [str(seen), repr(seen), "".join(traceback.format_exception(seen))]
        seen = seen.__cause__ or seen.__context__
    return "\n".join(out)


@pytest.fixture(scope="module")
def roles(pg_server: PgServer) -> Iterator[dict[str, str]]:
    """One login role per password, authenticating by scram-sha-256 over the socket (others are trusted)."""
    import psycopg
    from psycopg import sql

    names = {key: f"{ROLE_PREFIX}{key}" for key in PASSWORDS}
    with pg_server.connect() as conn:
        for key, role in names.items():
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(PASSWORDS[key])
                )
            )
            conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(role)))
        hba = Path(conn.execute("SHOW hba_file").fetchone()[0])
        before = hba.read_text()
        hba.write_text(f"local all {','.join(names.values())} scram-sha-256\n" + before)
        conn.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 10
    while True:  # the reload is asynchronous: wait until a role without its password is turned away
        try:
            psycopg.connect(f"postgresql://{names['at']}@/postgres?host={pg_server.socket_dir}").close()
        except psycopg.OperationalError:
            break
        assert time.monotonic() < deadline, "the server did not load the password rule"
        time.sleep(0.05)
    try:
        yield names
    finally:
        forget_shared()
        with pg_server.connect() as conn:
            hba.write_text(before)
            conn.execute("SELECT pg_reload_conf()")
            for role in names.values():
                conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
                conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.mark.parametrize("form", ["userinfo", "query"])
@pytest.mark.parametrize("key", sorted(PASSWORDS))
def test_a_password_holding_uri_delimiters_connects_and_never_shows(
    pg_server: PgServer,
    pg_table: str,
    roles: dict[str, str],
    key: str,
    form: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    password, role = PASSWORDS[key], roles[key]
    if form == "userinfo":
        uri = f"postgresql://{role}:{password}@/postgres?host={pg_server.socket_dir}&table={pg_table}"
    else:  # the password last, as written: a "#" in it is no fragment
        uri = (
            f"postgresql://{role}@/postgres?host={pg_server.socket_dir}&table={pg_table}&password={password}"
        )
    rows = [{"id": f"r{i}", "values": [0.1 * i] * DIM, "metadata": {"i": i}} for i in range(3)]
    caplog.set_level(logging.DEBUG)
    with connect(uri, create=True, dimension=DIM, max_retries=0) as client:
        report = client.write(rows)
        text = f"{client!r} {client.backend.describe()} {report!r} {report.summary()}"
    assert (report.written, report.failed) == (3, 0), report
    with pg_server.connect() as conn:
        (owner,) = conn.execute(
            "SELECT tableowner FROM pg_tables WHERE tablename = %s", (pg_table,)
        ).fetchone()
        (count,) = conn.execute(f'SELECT count(*) FROM "{pg_table}"').fetchone()
    assert (owner, count) == (role, 3)  # written as the role the password is for
    for piece in pieces(password):
        assert piece not in text
        assert piece not in caplog.text


def test_an_unencoded_ampersand_in_a_query_password_before_other_parameters_connects_and_never_shows(
    pg_server: PgServer, pg_table: str, roles: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """``?password=Head&Tail&table=t``: libpq refused the URI quoting "Tail" ("missing key/value separator"),
    and the target's label showed ``&TailAmpPW3=***``; the pieces are the password's, as written."""
    password, role = PASSWORDS["amp"], roles["amp"]
    uri = f"postgresql://{role}@/postgres?host={pg_server.socket_dir}&password={password}&table={pg_table}"
    caplog.set_level(logging.DEBUG)
    with connect(uri, create=True, dimension=DIM, max_retries=0) as client:
        report = client.write([{"id": "a", "values": [0.1] * DIM}])
        text = f"{client!r} {client.backend.describe()} {report!r}"
    assert (report.written, report.failed) == (1, 0), report
    wrong = uri.replace("TailAmpPW3", "WrongAmpPW3")
    with connect(wrong, max_retries=0) as client, pytest.raises(ConnectorError) as caught:
        client.upsert([{"id": "a", "values": [0.1] * DIM}])
    text += shown(caught.value)
    assert "password authentication failed" in text  # the server's answer: the password reached it whole
    for piece in [*pieces(password), "WrongAmpPW3"]:
        assert piece not in text and piece not in caplog.text


# the reviewer's failures: a host that refuses, a socket that is not there, a wrong password on the real server
FAILING = [
    ("postgresql://loader:Pfx7q@TailAtPW6@127.0.0.1:1/app?table=items&connect_timeout=2", "TailAtPW6"),
    ("postgresql://loader:HeadSlPW9/tail@/app?host=/nonexistent&table=items", "HeadSlPW9"),
    (
        "postgresql://loader@127.0.0.1:1/app?table=items&connect_timeout=2&password=Pfx7q#TailHashPW8",
        "TailHashPW8",
    ),
    ("postgresql://loader:Pfx7q#TailHashPW8@127.0.0.1:1/app?table=items&connect_timeout=2", "TailHashPW8"),
    ("postgresql://127.0.0.1:1/app?user=loader&password=Pfx7q@TailQAtPW3&table=items", "TailQAtPW3"),
]


@pytest.mark.parametrize(("uri", "piece"), FAILING)
def test_no_piece_of_such_a_password_shows_when_the_connection_fails(
    uri: str, piece: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with connect(uri, max_retries=0, timeout_s=3) as client:
        described = f"{client!r} {client.backend.describe()}"
        with pytest.raises(ConnectorError) as caught:
            client.upsert([{"id": "a", "values": [0.1] * DIM}])
    text = shown(caught.value)
    assert "cannot connect" in text  # refused or not there: not a host or port made of the password
    assert "resolve host" not in text and "invalid integer value" not in text
    assert piece not in text and piece not in described and piece not in caplog.text
    assert "Pfx7q" not in text and "Pfx7q" not in described


def test_a_wrong_password_holding_delimiters_is_refused_by_the_server_and_never_shows(
    pg_server: PgServer, roles: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "WrongHeadPW2@x/WrongMidPW2#y?z:WrongTailPW2"
    uri = f"postgresql://{roles['all']}:{wrong}@/postgres?host={pg_server.socket_dir}&table=items"
    caplog.set_level(logging.DEBUG)
    with connect(uri, max_retries=0) as client, pytest.raises(ConnectorError) as caught:
        client.upsert([{"id": "a", "values": [0.1] * DIM}])
    text = shown(caught.value)
    assert "password authentication failed" in text, (
        text
    )  # the server's answer: the password reached it whole
    for piece in pieces(wrong):
        assert piece not in text and piece not in caplog.text


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (
            "postgresql://u:a@b/c#d?e:f@db.example:6543/app?table=items",
            {"user": "u", "password": "a@b/c#d?e:f", "host": "db.example", "port": "6543", "dbname": "app"},
        ),
        (
            "postgresql://u@h:5432/app?password=x#y@z=w&table=items",
            {"user": "u", "password": "x#y@z=w", "host": "h", "port": "5432", "dbname": "app"},
        ),
        (
            "postgresql://h:5432/app?user=u&password=a@b&table=items",
            {"user": "u", "password": "a@b", "host": "h", "port": "5432", "dbname": "app"},
        ),
        (
            "postgresql://h:5432/app?user=u&password=a@b/c?d&table=items",
            {"user": "u", "password": "a@b/c?d", "host": "h", "port": "5432", "dbname": "app"},
        ),
        (
            "postgresql://u:x?y=z@e@h/app?table=items",
            {"user": "u", "password": "x?y=z@e", "host": "h", "dbname": "app"},
        ),
        (
            "postgres://u:p%40ss%zz@[::1]:5/app?table=items",
            {"user": "u", "password": "p@ss%zz", "host": "::1", "port": "5", "dbname": "app"},
        ),
        ("postgresql://u:x?y=z@h?table=items", {"user": "u", "password": "x?y=z", "host": "h"}),
    ],
)
def test_libpq_reads_the_password_the_uri_holds(uri: str, expected: dict[str, str]) -> None:
    from psycopg.conninfo import conninfo_to_dict

    target = PgTarget.parse(uri, None)
    read = conninfo_to_dict(target.conninfo)
    assert {k: read.get(k) for k in expected} == expected
    assert str(target.table) == "items"
    for piece in [*pieces(expected["password"]), expected["password"]]:
        assert piece not in target.label
