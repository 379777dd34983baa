"""POSTs to one embeddings endpoint over keep-alive ``http.client`` connections, one per sender thread.

Why not the shared httpx pool of ``transports/http.py``: with 32 threads sending 128-input
requests, httpx spent about twice the CPU per embedding (22 µs against 10 µs, reply decoding
included), most of it in its pool and h11 parsing under the GIL; a plain connection per thread
shares no lock and parses headers once in C-backed code. Statuses map to the connector's errors
exactly as every HTTP transport maps them (``error_for_status``); the key travels only in the
``Authorization`` header, and the credentials in use (``secrets``) are blanked out of any message the
server sends back.

``timeout_s`` bounds the connect and each wait for bytes. A connection the server closed while it
sat idle (its keep-alive timeout: uvicorn's is 5 s) is found readable before reuse and re-opened,
as urllib3 does; one closed in the instant before the request went out is re-opened and the
request sent once more at once. A connection that fails while in use is the client's to retry.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
import weakref
from urllib.parse import urlsplit

from ..errors import ConnectError, DeadlineExceeded, TransportError
from ..redaction import Secrets
from ..transports.base import host_of
from ..transports.http import error_for_status

__all__ = ["EmbeddingTransport"]

IDLE_REUSE_S = 1.0  # a reused connection idle longer than this may have been closed by the server


class _Connection:
    __slots__ = ("conn", "last_used")

    def __init__(self, conn: http.client.HTTPConnection) -> None:
        self.conn, self.last_used = conn, time.monotonic()


class EmbeddingTransport:
    """``post(body, timeout_s) -> reply body`` or a connector error; thread-safe."""

    def __init__(
        self, endpoint: str, api_key: str | None, *, secrets: Secrets, user_agent: str = "vectordb-connector"
    ) -> None:
        parts = urlsplit(endpoint)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self.host = host_of(f"{self._host}:{self._port}")
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.where = f"POST {parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"
        self.secrets = secrets
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": user_agent,
        }
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._local = threading.local()
        self._all: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        # a transport dropped without close() (a client nobody closed) still closes its connections, when
        # it is collected, instead of leaving their sockets to the collector (a ResourceWarning each)
        weakref.finalize(self, _close_all, self._all)
        self._ssl = ssl.create_default_context() if self._https else None

    def __repr__(self) -> str:
        return f"EmbeddingTransport({self.where})"

    def post(self, body: bytes, timeout_s: float) -> bytes:
        held: _Connection | None = getattr(self._local, "held", None)
        if held is not None and _closed_by_peer(held.conn):
            self._drop(held)
            held = None
        stale = held is not None and time.monotonic() - held.last_used > IDLE_REUSE_S
        if held is None:
            held = self._open(timeout_s)
        try:
            status, data, retry_after = self._exchange(held, body, timeout_s)
        except _Stale:
            if not stale:
                raise TransportError(
                    f"{self.where}: the server closed the connection without a reply"
                ) from None
            held = self._open(timeout_s)  # closed while idle: one fresh attempt, not a retry
            try:
                status, data, retry_after = self._exchange(held, body, timeout_s)
            except _Stale:
                raise TransportError(
                    f"{self.where}: the server closed the connection without a reply"
                ) from None
        held.last_used = time.monotonic()
        self.host.answered = True  # a status came back: a server is there, if not well
        if status >= 300:
            raise error_for_status(status, data, self.where, retry_after, secrets=self.secrets)
        return data

    def _exchange(self, held: _Connection, body: bytes, timeout_s: float) -> tuple[int, bytes, str | None]:
        conn = held.conn
        try:
            conn.timeout = timeout_s
            if conn.sock is not None:
                conn.sock.settimeout(timeout_s)
            conn.request("POST", self._path, body, self._headers)
            reply = conn.getresponse()
            data = reply.read()
        except (
            http.client.RemoteDisconnected,
            ConnectionResetError,
            BrokenPipeError,
            ConnectionAbortedError,
        ):
            self._drop(held)
            raise _Stale from None
        except TimeoutError:
            self._drop(held)
            raise DeadlineExceeded(f"{self.where}: no reply within {timeout_s} s") from None
        except (OSError, http.client.HTTPException) as exc:  # cut mid-reply, protocol error (may quote it)
            self._drop(held)
            raise TransportError(
                f"{self.where}: {type(exc).__name__}: {self.secrets.blank(str(exc))}"
            ) from None
        if reply.will_close:
            self._drop(held)
        return reply.status, data, reply.getheader("retry-after")

    def _open(self, timeout_s: float) -> _Connection:
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout_s, context=self._ssl)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout_s)
        try:
            conn.connect()
        except TimeoutError:
            raise ConnectError(f"{self.where}: cannot connect: timed out after {timeout_s} s") from None
        except (OSError, socket.gaierror) as exc:
            raise ConnectError(f"{self.where}: cannot connect: {exc}") from None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        held = _Connection(conn)
        self._local.held = held
        with self._lock:
            self._all.append(conn)
        return held

    def _drop(self, held: _Connection) -> None:
        held.conn.close()
        if getattr(self._local, "held", None) is held:
            self._local.held = None
        with self._lock:
            if held.conn in self._all:
                self._all.remove(held.conn)

    def close(self) -> None:
        """Close every connection (each sender thread's)."""
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()


def _close_all(conns: list[http.client.HTTPConnection]) -> None:
    for conn in list(conns):
        conn.close()


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """An idle keep-alive connection with something to read: the server's FIN (or bytes nobody asked for)."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):  # closed, or a descriptor select cannot take
        return True
    return bool(readable)


class _Stale(Exception):
    """The connection was closed before a reply began."""
