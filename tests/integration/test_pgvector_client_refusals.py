"""PostgreSQL: a value psycopg refuses before sending (no SQLSTATE) fails its row alone, against the
real server the fixtures start."""

from __future__ import annotations

import pytest

from vectordb.connector import connect
from vectordb.connector.errors import Rejected, TransportError
from vectordb.connector.transports.postgres import error_for

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401

DIM = 4


def _ids(server: PgServer, table: str) -> list[str]:
    with server.connect() as conn:
        return [row[0] for row in conn.execute(f'SELECT id FROM "{table}" ORDER BY id').fetchall()]


def test_a_delete_id_holding_a_nul_fails_alone_and_the_other_deletes_are_done(
    pg_server: PgServer, pg_table: str
) -> None:
    uri = pg_server.uri(pg_table)
    with connect(uri, create=True) as client:
        assert client.upsert([{"id": f"k{i}", "values": [1.0, 0.0, 0.0, float(i)]} for i in range(5)]).ok
    rows = [
        {"id": "k0", "op": "delete"},
        {"id": "bad\x00id", "op": "delete"},
        {"id": "k1", "op": "delete"},
        {"id": "k9", "values": [0.0, 1.0, 0.0, 0.0]},
    ]
    with connect(uri, op_column="op", on_error="report", max_retries=5) as client:
        report = client.write(rows)
    assert [f.ids for f in report.failures] == [("bad\x00id",)], report
    (failure,) = report.failures
    assert failure.error_type == "Invalid" and not failure.retryable, failure
    assert failure.attempts == 0, failure  # left out of the DELETE: never sent, never retried
    assert failure.error == "id 'bad\\x00id': PostgreSQL text cannot hold NUL (\\x00)", failure
    assert report.written == 3 and report.requests == 2, report  # one DELETE, one COPY: no splitting
    assert _ids(pg_server, pg_table) == ["k2", "k3", "k4", "k9"]


def test_psycopg_refusing_a_value_is_a_rejection_and_a_broken_connection_is_not(pg_server: PgServer) -> None:
    import psycopg

    with pg_server.connect() as conn, pytest.raises(psycopg.DataError) as refused:
        conn.execute("SELECT %s::text", ("a\x00b",))
    assert refused.value.sqlstate is None  # psycopg's own refusal: the server never saw it
    error = error_for(refused.value, "pgvector delete")
    assert type(error) is Rejected and not error.retryable and not error.fatal
    assert str(error).startswith("pgvector delete: ") and "NUL" in str(error)
    broken = error_for(psycopg.OperationalError("server closed the connection unexpectedly"), "x")
    assert type(broken) is TransportError
