"""What the PostgreSQL transport sends per request: the timeouts once per connection, a delete as one
statement, an upsert as BEGIN, COPY and apply with COMMIT; and the one thread that keeps every request's
reply deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("psycopg")

from vectordb.connector.redaction import Secrets
from vectordb.connector.transports import postgres
from vectordb.connector.transports.postgres import (
    CopyRequest,
    PostgresTransport,
    StatementRequest,
)


class FakeCursor:
    description = None  # no rows

    def __init__(self, conn: FakeConnection) -> None:
        self.conn = conn
        self.rowcount = -1

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str, params: Any = None) -> FakeCursor:
        self.conn.sent.append(sql if params is None else (sql, params))
        self.rowcount = 7
        return self

    def fetchone(self) -> tuple[str]:
        return (self.conn.lock_timeout,)

    @contextmanager
    def copy(self, sql: str) -> Iterator[Any]:
        self.conn.sent.append(sql)
        yield self.conn

    def write(self, body: bytes) -> None:
        self.conn.sent.append(body)


class FakeConnection:
    """Records the statements a session sends, one entry a round trip."""

    closed = broken = False

    def __init__(self, lock_timeout: str = "0") -> None:
        self.lock_timeout = lock_timeout
        self.sent: list[Any] = []

    def execute(self, sql: str, params: Any = None) -> FakeCursor:
        return FakeCursor(self).execute(sql, params)

    def cursor(self) -> FakeCursor:
        return FakeCursor(self)

    def write(self, body: bytes) -> None:
        self.sent.append(body)

    def fileno(self) -> int:
        return -1


def transport_on(conn: FakeConnection, monkeypatch: pytest.MonkeyPatch, name: str) -> PostgresTransport:
    transport = PostgresTransport(f"postgresql://u@h/{name}", secrets=Secrets("pw"), label=name)
    session = postgres._Session(conn)
    monkeypatch.setattr(transport._pool, "take", lambda timeout_s: session)
    monkeypatch.setattr(transport._pool, "give", lambda session: None)
    return transport


DELETE = StatementRequest("DELETE t", b"a,b", sql="DELETE FROM t WHERE id = ANY(%s)", params=(["a", "b"],))
UPSERT = CopyRequest(
    "COPY t", b"PGCOPY", setup="CREATE TEMP TABLE s ()", copy="COPY s FROM STDIN", apply="INSERT"
)


def test_timeouts_are_set_once_per_connection_and_a_delete_is_one_statement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn = FakeConnection()
    transport = transport_on(conn, monkeypatch, "once")
    for _ in range(3):
        assert transport.send(DELETE, timeout_s=2.5).body == b"7"
    assert conn.sent == [
        "SHOW lock_timeout",
        "SET lock_timeout = 2500; SET statement_timeout = 2500",
        *[("DELETE FROM t WHERE id = ANY(%s)", (["a", "b"],))] * 3,
    ]


def test_an_upsert_is_one_transaction_after_the_connections_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = FakeConnection()
    transport = transport_on(conn, monkeypatch, "upsert")
    transport.send(UPSERT, timeout_s=1.0)
    transport.send(UPSERT, timeout_s=1.0)
    frame = ["BEGIN", "COPY s FROM STDIN", b"PGCOPY", "INSERT; COMMIT"]
    assert conn.sent[2:] == ["CREATE TEMP TABLE s ()", *frame, *frame]


def test_a_query_runs_under_the_sessions_own_statement_timeout_and_a_write_sets_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn = FakeConnection(lock_timeout="1200ms")  # the user's: left alone
    transport = transport_on(conn, monkeypatch, "query")
    transport.send(DELETE, timeout_s=3.0)
    transport.query("DELETE FROM t", timeout_s=3.0)
    transport.query("SELECT 1", timeout_s=3.0)
    transport.send(DELETE, timeout_s=4.0)
    delete = ("DELETE FROM t WHERE id = ANY(%s)", (["a", "b"],))
    assert conn.sent == [
        "SHOW lock_timeout",
        "SET statement_timeout = 3000",
        delete,
        "RESET statement_timeout",
        "DELETE FROM t",
        "SELECT 1",
        "SET statement_timeout = 4000",
        delete,
    ]


def test_the_watchdog_fires_a_deadline_once_and_not_a_disarmed_one() -> None:
    fired: list[str] = []
    late = postgres._WATCHDOG.arm(30.0, lambda: fired.append("late"))
    soon = postgres._WATCHDOG.arm(
        0.05, lambda: fired.append("soon")
    )  # earlier than what the thread waits for
    gone = postgres._WATCHDOG.arm(0.02, lambda: fired.append("gone"))
    assert postgres._WATCHDOG.disarm(gone) is False
    deadline = time.monotonic() + 5.0
    while not fired and time.monotonic() < deadline:
        time.sleep(0.01)
    assert postgres._WATCHDOG.disarm(soon) is True
    assert postgres._WATCHDOG.disarm(late) is False
    time.sleep(0.05)
    assert fired == ["soon"]


def test_disarming_an_alarm_that_is_firing_waits_for_it_to_end() -> None:
    started, release, ended = threading.Event(), threading.Event(), threading.Event()

    def fire() -> None:
        started.set()
        release.wait(5.0)
        ended.set()

    alarm = postgres._WATCHDOG.arm(0.0, fire)
    assert started.wait(5.0)
    threading.Timer(0.05, release.set).start()
    assert postgres._WATCHDOG.disarm(alarm) is True
    assert ended.is_set()


def test_many_disarmed_alarms_do_not_pile_up() -> None:
    for _ in range(5000):
        postgres._WATCHDOG.disarm(postgres._WATCHDOG.arm(60.0, lambda: None))
    assert len(postgres._WATCHDOG._heap) < 200
