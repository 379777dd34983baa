"""PostgreSQL transport over psycopg 3: one request is one transaction of binary COPY plus SQL.

A ``CopyRequest`` carries a complete binary COPY stream (``body``: signature, tuples,
trailer) and the statements around it. ``send`` runs, on one pooled connection::

    SET lock_timeout; SET statement_timeout   when the connection's are not yet ``timeout_s`` (lock_timeout: not the user's)
    setup                                     once per connection, committed on its own
    BEGIN
    COPY … FROM STDIN (FORMAT BINARY)         ``body`` written as it is
    apply; COMMIT                             one round trip (the upsert)

so a batch lands whole or not at all. A ``StatementRequest`` (a batch of deletes) is one
parameterised statement, run on its own instead of the BEGIN, COPY and apply: in autocommit mode a
statement is its own transaction, so it lands whole or not at all in one round trip. Every
statement, ``query``'s catalog look-ups, DDL and deletes included, waits for a lock at most
``timeout_s`` (``lock_timeout``, SQLSTATE 55P03, retryable): a transaction left open elsewhere
fails a call with its reason instead of hanging the task. A long delete (``query``) that holds its
locks may run as long as it needs: it runs under the session's own ``statement_timeout`` (RESET
when a write had set it). A write's statements may not: ``statement_timeout`` is ``timeout_s`` on
the connection for every statement of ``send``, set once per connection rather than per transaction
(and again after a ``query``), and a write whose server stops answering ends ``REPLY_GRACE_S`` after
``timeout_s`` (``DeadlineExceeded``) however long the server stays silent. Connections are opened on
demand, one per request in flight, and kept idle for reuse; the pool is shared per process by
target. Connections are in autocommit mode and transactions are explicit, which saves psycopg's
separate ``BEGIN``.

psycopg errors become the connector's errors in ``error_for`` and nowhere else: by SQLSTATE
when the server sent one (data and constraint errors are rejections the engine bisects;
serialization failures, deadlocks and shutdowns are retryable; a statement timeout is a
deadline), by libpq's message when a connection could not be made (no SQLSTATE there). A value
psycopg itself refuses before sending (``DataError``: a text holding NUL) has no SQLSTATE either:
it is a rejection too, so its row fails alone.
Passwords never appear in errors or reprs: the credentials in use (``secrets``) are blanked out of
every message (``redaction``). Nor on a refused connection's traceback: psycopg's error, raised in
frames holding the conninfo and the password, is translated where it is caught and not kept as the
connector's error's context (``_open``).
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    AuthError,
    ConnectError,
    ConnectorError,
    ConnectTimeout,
    DeadlineExceeded,
    MissingExtra,
    NotFound,
    Rejected,
    ServerError,
    ServerTimedOut,
    Throttled,
    TransportError,
    Unavailable,
)
from ..redaction import Secrets, blank_logs, returned
from .base import WireReply, WireRequest, host_of, shared

__all__ = ["CopyRequest", "PostgresTransport", "StatementRequest", "error_for"]


@dataclass(frozen=True, slots=True, repr=False)
class CopyRequest(WireRequest):
    """A batch for PostgreSQL: ``body`` is the binary COPY stream fed to ``copy``, then ``apply`` runs."""

    setup: str = ""  # idempotent statements run once per connection (the session's staging table)
    copy: str = ""  # "COPY pg_temp.stage (…) FROM STDIN (FORMAT BINARY)"
    apply: str = ""  # "INSERT INTO … SELECT … FROM pg_temp.stage ON CONFLICT … DO UPDATE …"


@dataclass(frozen=True, slots=True, repr=False)
class StatementRequest(WireRequest):
    """A batch for PostgreSQL as one statement with parameters: a delete of ids. ``body`` is not sent; it
    holds what the parameters carry (the ids' text), so byte counts and the rate budget see it."""

    sql: str = ""  # "DELETE FROM … WHERE id = ANY(CAST(%s AS text[]))"
    params: tuple[Any, ...] = ()


ErrorClass = type[ServerError] | type[TransportError]

# SQLSTATE → error class; exact codes first, then the two-character class (every class PostgreSQL
# defines is listed, a test checks). Unknown: ServerError.
ERROR_BY_SQLSTATE: dict[str, ErrorClass] = {
    "57014": ServerTimedOut,  # query_canceled: statement_timeout fired, the statement rolled back
    "53300": Throttled,  # too_many_connections: fewer in flight helps
    "55P03": Unavailable,  # lock_not_available
    "42501": AuthError,  # insufficient_privilege
    "42P01": NotFound,  # undefined_table: dropped during the load
    "42703": NotFound,  # undefined_column
    "42704": NotFound,  # undefined_object (a type, e.g. vector without the extension)
}
ERROR_BY_CLASS: dict[str, ErrorClass] = {
    "08": Unavailable,  # connection exception
    "09": Rejected,  # triggered action exception
    "0A": Rejected,  # feature not supported
    "02": Rejected,  # no data (a statement's own outcome, not a transient state)
    "03": Rejected,  # SQL statement not yet complete
    "0B": Unavailable,  # invalid transaction initiation: the connection's transaction state
    "0F": Rejected,  # locator exception
    "0L": AuthError,  # invalid grantor
    "0P": AuthError,  # invalid role specification
    "0Z": Rejected,  # diagnostics exception
    "10": Rejected,  # XQuery error
    "20": Rejected,  # case not found (PL/pgSQL, in a trigger)
    "21": Rejected,  # cardinality violation
    "22": Rejected,  # data exception: a bad value in some row
    "23": Rejected,  # integrity constraint violation
    "24": Unavailable,  # invalid cursor state: the connection's state, not the rows
    "25": Unavailable,  # invalid transaction state
    "26": Rejected,  # invalid SQL statement name
    "27": Rejected,  # triggered data change violation
    "28": AuthError,  # invalid authorization specification
    "2B": Rejected,  # dependent privilege descriptors or objects still exist
    "2D": Unavailable,  # invalid transaction termination: the connection's transaction state
    "2F": Rejected,  # SQL routine exception (a trigger function)
    "34": Rejected,  # invalid cursor name
    "38": Rejected,  # external routine exception
    "39": Rejected,  # external routine invocation exception
    "3B": Rejected,  # savepoint exception
    "3D": NotFound,  # invalid catalog name: no such database
    "3F": NotFound,  # invalid schema name
    "40": Unavailable,  # transaction rollback: serialization failure, deadlock
    "42": Rejected,  # syntax error or access rule violation
    "44": Rejected,  # WITH CHECK OPTION violation
    "53": Unavailable,  # insufficient resources
    "54": Rejected,  # program limit exceeded (a value too large for an index row)
    "55": Unavailable,  # object not in prerequisite state
    "57": Unavailable,  # operator intervention: admin shutdown, crash, cannot connect now
    "58": Unavailable,  # system error
    "72": Unavailable,  # snapshot failure
    "F0": Unavailable,  # configuration file error
    "HV": Unavailable,  # foreign data wrapper error
    "P0": Rejected,  # PL/pgSQL RAISE in a trigger
    "XX": Unavailable,  # internal error
}

# libpq's messages for failed connections carry no SQLSTATE: the first entry whose words all occur decides.
_CONNECT_MESSAGES: tuple[tuple[tuple[str, ...], ErrorClass, str], ...] = (
    (("password authentication failed",), AuthError, "28P01"),
    (("authentication failed",), AuthError, "28000"),
    (("no password supplied",), AuthError, "28P01"),
    (("pg_hba.conf",), AuthError, "28000"),
    (("role ", "does not exist"), AuthError, "28000"),
    (("database ", "does not exist"), NotFound, "3D000"),
    (("too many clients",), Throttled, "53300"),
    (("remaining connection slots",), Throttled, "53300"),
    (("the database system is",), Unavailable, "57P03"),  # starting up, shutting down, in recovery
)


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise MissingExtra(
            "postgresql URIs need psycopg 3: pip install 'vectordb-connector[pgvector]'"
        ) from None
    return psycopg


def error_for(exc: BaseException, where: str, *, connecting: bool = False) -> ConnectorError:
    """The connector error for a psycopg error: the one place they are translated."""
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate:
        kind = ERROR_BY_SQLSTATE.get(sqlstate) or ERROR_BY_CLASS.get(sqlstate[:2], ServerError)
        return _make(kind, f"{where}: {sqlstate}: {_server_message(exc)}", sqlstate)
    text = " ".join(str(exc).split())  # libpq's messages span lines
    if isinstance(exc, _import_psycopg().DataError):
        # refused by psycopg before sending (a text with NUL): no SQLSTATE, and the connection is fine;
        # a rejection, so the batch is split and the row holding the value fails alone
        return Rejected(f"{where}: {type(exc).__name__}: {text}")
    lowered = text.lower()
    for words, kind, state in _CONNECT_MESSAGES:
        if all(word in lowered for word in words):
            return _make(kind, f"{where}: {text}", state)
    if connecting:  # libpq's connect_timeout says "timeout expired"; the kernel's, "timed out"
        timed_out = "timeout expired" in lowered or "timed out" in lowered
        return (ConnectTimeout if timed_out else ConnectError)(f"{where}: cannot connect: {text}")
    return TransportError(f"{where}: {type(exc).__name__}: {text}")  # the connection broke mid-request


def _make(kind: ErrorClass, message: str, sqlstate: str) -> ConnectorError:
    if issubclass(kind, ServerError):
        return kind(message, status=sqlstate)
    return kind(message)


def _server_message(exc: BaseException) -> str:
    """PostgreSQL's own words: the primary message, its detail, and where (COPY line and column)."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None)
    if not primary:
        return " ".join(str(exc).split())
    text = str(primary)
    detail, context = getattr(diag, "message_detail", None), getattr(diag, "context", None)
    if detail:
        text += f" ({detail})"
    if context:
        text += f" [{' '.join(context.split())}]"
    return text


@contextmanager
def pg_errors(where: str, secrets: Secrets) -> Iterator[None]:
    """Raise psycopg errors as the connector's, with ``secrets`` blanked out of the message."""
    psycopg = _import_psycopg()
    try:
        yield
    except psycopg.Error as exc:
        error = _blanked(exc, where, secrets)
        try:
            raise error from None
        finally:
            del error  # held by this frame, the raised error would be a cycle keeping the callers' frames


def _blanked(exc: BaseException, where: str, secrets: Secrets, *, connecting: bool = False) -> ConnectorError:
    """``error_for`` with ``secrets`` blanked out of its message and out of psycopg's: raised in a handler,
    the error keeps psycopg's as its __context__ ("from None" only hides it from tracebacks)."""
    error = error_for(exc, where, connecting=connecting)
    error.args = (secrets.blank(str(error)),)
    exc.args = tuple(secrets.blank(a) if isinstance(a, str) else a for a in exc.args)
    return error


# past statement_timeout, the time the server's own cancellation (57014) has to arrive before the client gives up
REPLY_GRACE_S = 1.0


class _Alarm:
    """One armed deadline of ``_Watchdog``: ``fire`` runs once unless disarmed first."""

    __slots__ = ("done", "fire", "state")

    def __init__(self, fire: Callable[[], None]) -> None:
        self.fire = fire
        self.state = _ARMED
        self.done: threading.Event | None = None  # made when it fires: disarm waits for the firing to end


_ARMED, _FIRED, _DISARMED = 0, 1, 2


class _Watchdog:
    """One thread for the reply deadlines of every request in the process, earliest first.

    A ``threading.Timer`` a request started and joined a thread each time (about 80 µs of CPU and
    150 µs of the request's time); here arming is a heap push under a lock. Disarmed alarms stay in
    the heap until their time comes, or until they outnumber the armed ones (then it is rebuilt).
    After a fork the child starts its own thread: the parent's does not exist there.
    """

    def __init__(self) -> None:
        self._seq = itertools.count()
        self._reset()
        # a fork while another thread holds the lock would leave it held in the child for good
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, _Alarm]] = []
        self._armed = 0
        self._pid = 0

    def arm(self, seconds: float, fire: Callable[[], None]) -> _Alarm:
        alarm = _Alarm(fire)
        entry = (time.monotonic() + seconds, next(self._seq), alarm)
        with self._cond:
            if self._pid != os.getpid():
                self._heap, self._armed, self._pid = [], 0, os.getpid()
                threading.Thread(target=self._run, name="vectordb-pg-deadlines", daemon=True).start()
            heapq.heappush(self._heap, entry)
            self._armed += 1
            if self._heap[0] is entry:  # earlier than what the thread waits for
                self._cond.notify()
            elif len(self._heap) > 2 * self._armed + 64:
                self._heap = [item for item in self._heap if item[2].state == _ARMED]
                heapq.heapify(self._heap)
        return alarm

    def disarm(self, alarm: _Alarm) -> bool:
        """Whether ``alarm`` fired; if it is firing, its ``fire`` has returned when this returns."""
        with self._cond:
            if alarm.state == _ARMED:
                alarm.state = _DISARMED
                self._armed -= 1
                return False
            done = alarm.done
        if done is not None:
            done.wait()
        return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][2].state != _ARMED:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait_s = self._heap[0][0] - time.monotonic()
                    if wait_s <= 0:
                        alarm = heapq.heappop(self._heap)[2]
                        done = threading.Event()
                        alarm.state, alarm.done = _FIRED, done
                        self._armed -= 1
                        break
                    self._cond.wait(wait_s)
            try:
                alarm.fire()
            finally:
                done.set()


_WATCHDOG = _Watchdog()


@contextmanager
def _reply_deadline(conn: Any, seconds: float, where: str) -> Iterator[None]:
    """Fail a request whose server stops answering (stopped, hung, or cut off without a reset).

    ``statement_timeout`` is enforced by the server, and psycopg waits for a reply without a
    deadline: without this, a write to a frozen server never ends. Past ``seconds`` the connection's
    socket is shut down, so the blocked read fails and the request ends as ``DeadlineExceeded``
    (retryable); the connection is not reused.
    """

    def expire() -> None:
        with suppress(Exception):  # already closed: nothing is waiting on it
            sock = socket.socket(fileno=os.dup(conn.fileno()))
            try:
                sock.shutdown(socket.SHUT_RDWR)
            finally:
                sock.close()

    alarm = _WATCHDOG.arm(seconds, expire)
    try:
        yield
    except Exception:
        if _WATCHDOG.disarm(alarm):
            raise DeadlineExceeded(f"{where}: no reply within {seconds:g} s") from None
        raise
    except BaseException:
        _WATCHDOG.disarm(alarm)
        raise
    if _WATCHDOG.disarm(alarm):  # the reply came as the deadline passed: the socket is shut all the same
        conn.close()


# sessions a forked child inherited: kept referenced so that no finalizer closes the parent's sockets
_INHERITED: list[_Session] = []


@dataclass(eq=False)
class _Session:
    """A pooled connection, the setup statements it has already run, and its lock and statement timeouts."""

    conn: Any
    done: set[str] = field(default_factory=set)
    lock_timeout_ms: int | None = None
    lock_timeout_is_theirs: bool | None = None  # set by the URI's options, the role or the database
    statement_timeout_ms: int | None = None  # set by ``send``; None: the session's own

    def limit(self, timeout_s: float, *, statements: bool) -> None:
        """Every later statement on this connection waits for a lock at most ``timeout_s`` and, with
        ``statements`` (a write), runs at most ``timeout_s``; without (``query``), as long as the
        session's own ``statement_timeout`` lets it. One round trip when either changes, none otherwise.

        A ``lock_timeout`` the user configured (``options=-c lock_timeout=…`` in the URI, or a
        role or database default) is theirs to choose, so it is left as it is.
        """
        if self.lock_timeout_is_theirs is None:
            self.lock_timeout_is_theirs = self.conn.execute("SHOW lock_timeout").fetchone()[0] != "0"
        timeout_ms = max(1, int(timeout_s * 1000))
        lock_ms = self.lock_timeout_ms if self.lock_timeout_is_theirs else timeout_ms
        statement_ms = timeout_ms if statements else None
        changes = []
        if lock_ms != self.lock_timeout_ms:
            changes.append(f"SET lock_timeout = {lock_ms}")
        if statement_ms != self.statement_timeout_ms:  # RESET: back to the URI's, the role's or the server's
            changes.append(
                "RESET statement_timeout"
                if statement_ms is None
                else f"SET statement_timeout = {statement_ms}"
            )
        if changes:
            self.conn.execute("; ".join(changes))
            self.lock_timeout_ms, self.statement_timeout_ms = lock_ms, statement_ms


class _Pool:
    """Connections to one server, opened on demand (one per request in flight), at most ``max_idle`` kept.

    After a fork the idle connections belong to the parent: the child sets them aside and
    never closes them, since closing (even by garbage collection) would end the parent's sessions.
    """

    def __init__(self, conninfo: str, connect_kwargs: dict[str, Any], max_idle: int) -> None:
        self.conninfo = conninfo
        self.connect_kwargs = connect_kwargs
        self.max_idle = max_idle
        self._idle: list[_Session] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def take(self, connect_timeout_s: float) -> _Session:
        with self._lock:
            if self._pid != os.getpid():
                _INHERITED.extend(self._idle)
                self._idle, self._pid = [], os.getpid()
            if self._idle:
                return self._idle.pop()
        psycopg = _import_psycopg()
        kwargs = dict(self.connect_kwargs)
        if "connect_timeout=" not in self.conninfo:  # libpq counts whole seconds, at least 2
            kwargs["connect_timeout"] = max(2, math.ceil(connect_timeout_s))
        return _Session(psycopg.connect(self.conninfo, autocommit=True, **kwargs))

    def give(self, session: _Session) -> None:
        with self._lock:
            if session.conn.closed or session.conn.broken or len(self._idle) >= self.max_idle:
                keep = False
            else:
                self._idle.append(session)
                keep = True
        if not keep:
            session.conn.close()

    def discard(self, session: _Session) -> None:
        """A request failed on ``session``: roll back and keep it if it is healthy, else close it."""
        conn = session.conn
        if not (conn.closed or conn.broken):
            psycopg = _import_psycopg()
            try:
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")
                self.give(session)
                return
            except psycopg.Error:
                pass
        conn.close()

    @contextmanager
    def lease(self, session: _Session) -> Iterator[_Session]:
        """Use ``session`` for one request; it goes back to the pool however the request ends."""
        try:
            yield session
        except Exception:
            self.discard(session)
            raise
        except BaseException:  # interrupted mid-protocol: the connection's state is unknown
            session.conn.close()
            raise
        self.give(session)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            mine = self._pid == os.getpid()
        if not mine:
            _INHERITED.extend(idle)
            return
        for session in idle:
            session.conn.close()


class PostgresTransport:
    """Runs ``CopyRequest``s (and the backend's catalog queries) on a pool of psycopg connections.

    Args:
        conninfo: a libpq URI without the connector's own parameters; a password in it stays here.
        password: sent as libpq's ``password`` when given (option ``api_key``).
        secrets: the credentials in use (``password``, and any in ``conninfo``), blanked out of errors.
        label: the target as logs show it, with the password masked.
        max_connections: connections kept idle for reuse; one is opened per request in flight.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        secrets: Secrets,
        password: str | None = None,
        label: str = "",
        max_connections: int = 4,
    ) -> None:
        self.label = label or "postgresql"
        self.host = host_of(self.label)  # the target as logs show it: its host, port and database
        self._secrets = secrets
        blank_logs(secrets, "psycopg")  # its debug log quotes a failed connection's message whole
        kwargs: dict[str, Any] = {}
        if password is not None:
            kwargs["password"] = password
        if "application_name=" not in conninfo:
            kwargs["application_name"] = "vectordb-connector"
        self._pool: _Pool = shared(
            ("postgres", conninfo, password), lambda: _Pool(conninfo, kwargs, max_connections)
        )
        self._pool.max_idle = max(self._pool.max_idle, max_connections)

    def __repr__(self) -> str:
        return f"PostgresTransport({self.label})"

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        if not isinstance(request, CopyRequest | StatementRequest):
            raise TypeError(
                f"PostgresTransport sends CopyRequest or StatementRequest, not {type(request).__name__}"
            )
        where = f"{self.label} {request.method}"
        with (
            self._session(where, timeout_s, statements=True) as session,
            pg_errors(where, self._secrets),
            _reply_deadline(session.conn, timeout_s + REPLY_GRACE_S, where),
        ):
            conn = session.conn
            with conn.cursor() as cur:
                if isinstance(request, StatementRequest):
                    # autocommit: one statement is one transaction, whole or not at all, in one round trip
                    cur.execute(request.sql, request.params)
                    rows = cur.rowcount
                else:
                    if request.setup and request.setup not in session.done:
                        # committed on its own: a rolled-back batch must not undo it
                        cur.execute(request.setup)
                        session.done.add(request.setup)
                    cur.execute("BEGIN")
                    with cur.copy(request.copy) as copy:
                        copy.write(request.body)
                    cur.execute(f"{request.apply}; COMMIT")
                    rows = cur.rowcount  # the INSERT's: the first of the two results
        return WireReply(body=str(rows).encode(), status="OK")

    def query(
        self, sql: str, params: tuple[Any, ...] = (), *, timeout_s: float = 30.0
    ) -> list[tuple[Any, ...]]:
        """Rows of one statement in its own transaction (catalog look-ups, DDL)."""
        where = f"{self.label} {sql.split(None, 1)[0]}"
        with (
            self._session(where, timeout_s, statements=False) as session,
            pg_errors(where, self._secrets),
            session.conn.cursor() as cur,
        ):
            cur.execute(sql, params or None)
            return cur.fetchall() if cur.description else []

    @contextmanager
    def _session(self, where: str, timeout_s: float, *, statements: bool) -> Iterator[_Session]:
        # an error is raised here, outside psycopg's handler, so psycopg's error is not its __context__
        session = returned(self._open(where, timeout_s))
        self.host.answered = True  # a session: the server took the connection and the credentials
        with self._pool.lease(session):
            with pg_errors(where, self._secrets):
                session.limit(timeout_s, statements=statements)
            yield session

    def _open(self, where: str, timeout_s: float) -> _Session | ConnectorError:
        """A session, or the error of a connection refused, returned: psycopg's error is not kept, as its
        traceback's frames (``psycopg.connect``'s, ``_Pool.take``'s) hold the conninfo and the password and
        tools print a traceback's locals (``redaction``); the connector's error says what happened."""
        psycopg = _import_psycopg()
        try:
            return self._pool.take(timeout_s)
        except psycopg.Error as exc:
            return _blanked(exc, where, self._secrets, connecting=True)

    def close(self) -> None:
        """The pool is shared by the process; it closes with ``forget_shared`` or at exit."""
