"""HTTP/1.1 keep-alive connections to one server on plain sockets: every REST database's requests and the
embeddings endpoint's go through ``ConnectionPool`` (a proxy the environment names goes through httpx:
``transports/http.py``).

Why not httpx or ``http.client`` under the hot path: a request's own CPU in the client, on loopback
(``jobs/bench/http_request.py``), is about 280 µs through ``httpx.HTTPTransport`` and 95 µs through
``http.client`` for a 12 KB delete, against 15–25 µs here; with a 1.9 MB upsert body both copy the body
once more than needed, where here the head and the body leave in one ``sendmsg``. Per-request cost is
what bounds deletes (a 1,000-id request carries no vector to amortise it) and a fifth of a REST upsert's.

What it speaks: a request with a ``Content-Length`` body (or none); replies framed by ``Content-Length``,
by chunks, or by the connection's end; 1xx replies skipped; the connection kept unless either side says
``close``. No redirects, cookies, compression (no ``Accept-Encoding`` is sent, so replies come as they
are) or HTTP/2: none of the databases needs them.

A connection the server closed while it sat idle (its keep-alive timeout: uvicorn's is 5 s) is found
readable before reuse and dropped, as urllib3 does; one closed in the instant before the request went
out, after an idle second, is re-opened and the request sent once more at once. A connection that fails
while in use is the engine's to retry. Errors are the connector's, their messages naming ``where`` and
blanked of the credentials in use.
"""

from __future__ import annotations

import select
import socket
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from ..errors import ConnectError, DeadlineExceeded, TransportError
from ..redaction import Secrets

if TYPE_CHECKING:
    import ssl

__all__ = ["ConnectionPool", "Reply", "request_head", "tls_context"]

IDLE_REUSE_S = 1.0  # a connection idle longer than this may have been closed by the server meanwhile
MAX_HEAD_BYTES = 65_536  # a reply's status line and headers
ONE_SEND_BYTES = 16_384  # below this, head and body are joined into one buffer (TLS cannot sendmsg)
RECV_BYTES = 65_536
NO_BODY = frozenset({204, 304})


class Reply:
    """A reply: its status, its headers (names lower-cased, repeats joined by ``", "``) and its body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def request_head(verb: str, target: str, headers: dict[str, str]) -> bytes:
    """The request line and ``headers`` (``Host`` among them), up to where ``Content-Length`` goes."""
    lines = [f"{verb} {target} HTTP/1.1"] + [f"{name}: {value}" for name, value in headers.items()]
    for line in lines:
        if "\r" in line or "\n" in line:
            raise ValueError(f"a line break in an HTTP header line: {line.split(':')[0]!r}")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def tls_context() -> ssl.SSLContext:
    """The certificates httpx trusts (certifi's, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``): one trust for
    requests sent here and requests that go through a proxy."""
    import httpx

    return httpx.create_ssl_context()


class _Stale(Exception):
    """The connection was closed before a reply began."""


class _Connection:
    __slots__ = ("last_used", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.last_used = sock, time.monotonic()


class ConnectionPool:
    """Keep-alive connections to ``host:port`` (TLS for ``https``), shared by threads; thread-safe.

    ``request(head, body, ...)`` sends ``head`` (from ``request_head``) with ``Content-Length`` and
    ``body``, and returns the ``Reply`` of any status: the caller maps statuses to errors.
    """

    def __init__(self, scheme: str, host: str, port: int, *, max_idle: int = 256) -> None:
        self._tls = tls_context() if scheme == "https" else None
        self._host, self._port, self._max_idle = host, port, max_idle
        self._idle: list[_Connection] = []
        self._open_socks: set[socket.socket] = set()
        self._lock = threading.Lock()
        # a pool dropped without close() still closes its sockets when collected, not at the collector's
        # whim with a ResourceWarning each
        weakref.finalize(self, _close_all, self._open_socks)

    def __repr__(self) -> str:
        return f"ConnectionPool({self._host}:{self._port}, tls={self._tls is not None})"

    def request(
        self, head: bytes, body: bytes, *, verb: str, where: str, timeout_s: float, secrets: Secrets
    ) -> Reply:
        head += b"Content-Length: %d\r\n\r\n" % len(body) if body or verb not in ("GET", "HEAD") else b"\r\n"
        held = self._take()
        fresh = held is None
        stale = held is not None and time.monotonic() - held.last_used > IDLE_REUSE_S
        if held is None:
            held = self._open(where, timeout_s)
        try:
            reply, keep = self._exchange(held.sock, head, body, verb, timeout_s)
        except _Stale:
            self._drop(held)
            if fresh or not stale:
                raise TransportError(f"{where}: the server closed the connection without a reply") from None
            held = self._open(where, timeout_s)  # closed while idle: one fresh attempt, not a retry
            try:
                reply, keep = self._exchange(held.sock, head, body, verb, timeout_s)
            except _Stale:
                self._drop(held)
                raise TransportError(f"{where}: the server closed the connection without a reply") from None
            except BaseException as exc:
                self._drop(held)
                raise _mapped(exc, where, timeout_s, secrets) from None
        except BaseException as exc:
            self._drop(held)
            raise _mapped(exc, where, timeout_s, secrets) from None
        if keep:
            self._give_back(held)
        else:
            self._drop(held)
        return reply

    def close(self) -> None:
        """Close every connection, idle or not; the pool opens new ones if used again."""
        with self._lock:
            socks, self._idle = list(self._open_socks), []
            self._open_socks.clear()
        for sock in socks:
            sock.close()

    def _take(self) -> _Connection | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                held = self._idle.pop()
            if not _closed_by_peer(held.sock):
                return held
            self._drop(held)

    def _give_back(self, held: _Connection) -> None:
        held.last_used = time.monotonic()
        with self._lock:
            if held.sock in self._open_socks and len(self._idle) < self._max_idle:
                self._idle.append(held)
                return
        self._drop(held)

    def _drop(self, held: _Connection) -> None:
        with self._lock:
            self._open_socks.discard(held.sock)
        held.sock.close()

    def _open(self, where: str, timeout_s: float) -> _Connection:
        try:
            sock = socket.create_connection((self._host, self._port), timeout=timeout_s)
        except TimeoutError:
            raise ConnectError(f"{where}: cannot connect: timed out after {timeout_s} s") from None
        except OSError as exc:  # refused, unreachable, no such host (socket.gaierror)
            raise ConnectError(f"{where}: cannot connect: {exc}") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self._host)
        except TimeoutError:
            sock.close()
            raise ConnectError(
                f"{where}: cannot connect: TLS handshake timed out after {timeout_s} s"
            ) from None
        except OSError as exc:  # ssl.SSLError among them
            sock.close()
            raise ConnectError(f"{where}: cannot connect: {exc}") from None
        with self._lock:
            self._open_socks.add(sock)
        return _Connection(sock)

    def _exchange(
        self, sock: socket.socket, head: bytes, body: bytes, verb: str, timeout_s: float
    ) -> tuple[Reply, bool]:
        sock.settimeout(timeout_s)
        try:
            _send(sock, head, body, tls=self._tls is not None)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            # the server closed it: before anything was read (a keep-alive timeout), or after refusing the
            # request early (a reply may be waiting: read it)
            try:
                return _read_reply(sock, verb)
            except (OSError, _Stale):
                raise _Stale from None
        return _read_reply(sock, verb)


def _send(sock: socket.socket, head: bytes, body: bytes, *, tls: bool) -> None:
    if len(body) < ONE_SEND_BYTES:
        sock.sendall(head + body)
    elif tls:  # an SSLSocket has no sendmsg
        sock.sendall(head)
        sock.sendall(body)
    else:
        sent = sock.sendmsg([head, body])
        if sent < len(head):
            sock.sendall(head[sent:])
            sock.sendall(body)
        elif sent < len(head) + len(body):
            sock.sendall(memoryview(body)[sent - len(head) :])


def _read_reply(sock: socket.socket, verb: str) -> tuple[Reply, bool]:
    """One reply (1xx ones skipped) and whether the connection can carry another request."""
    buffer = b""
    while True:
        end = buffer.find(b"\r\n\r\n")
        while end < 0:
            if len(buffer) > MAX_HEAD_BYTES:
                raise TransportError(f"a reply's headers exceed {MAX_HEAD_BYTES} bytes")
            chunk = sock.recv(RECV_BYTES)
            if not chunk:
                if not buffer:
                    raise _Stale
                raise TransportError("the server closed the connection mid-reply")
            buffer += chunk
            end = buffer.find(b"\r\n\r\n", max(0, len(buffer) - len(chunk) - 3))
        status, version, headers = _parse_head(buffer[:end])
        buffer = buffer[end + 4 :]
        if 100 <= status < 200 and status != 101:
            continue  # an interim reply (100 Continue, 103 Early Hints): the real one follows
        break
    keep = (
        "close" not in headers.get("connection", "").lower()
        if version == "HTTP/1.1"
        else "keep-alive" in headers.get("connection", "").lower()
    )
    if verb == "HEAD" or status in NO_BODY or 100 <= status < 200:
        body, rest = b"", buffer
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        body, rest = _read_chunked(sock, buffer)
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise TransportError(
                f"a reply's Content-Length is not a number: {headers['content-length']!r}"
            ) from None
        body, rest = _read_exactly(sock, buffer, length)
    else:  # framed by the connection's end
        body, rest, keep = _read_to_end(sock, buffer), b"", False
    return Reply(status, headers, body), keep and not rest  # bytes nobody asked for: do not reuse


def _parse_head(head: bytes) -> tuple[int, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise TransportError(f"not an HTTP/1.x reply: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise TransportError(f"a reply header without a colon: {line[:80]!r}")
        name, value = name.strip().lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return int(code), version, headers


def _read_exactly(sock: socket.socket, buffer: bytes, length: int) -> tuple[bytes, bytes]:
    if len(buffer) >= length:
        return buffer[:length], buffer[length:]
    out = bytearray(length)
    out[: len(buffer)] = buffer
    view, got = memoryview(out), len(buffer)
    while got < length:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise TransportError(f"the server closed the connection after {got} of {length} body bytes")
        got += n
    return bytes(out), b""


def _read_chunked(sock: socket.socket, buffer: bytes) -> tuple[bytes, bytes]:
    parts: list[bytes] = []
    while True:
        line_end = buffer.find(b"\r\n")
        while line_end < 0:
            buffer = _more(sock, buffer)
            line_end = buffer.find(b"\r\n")
        size_text = buffer[:line_end].split(b";")[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise TransportError(f"a reply's chunk size is not hex: {size_text[:20]!r}") from None
        buffer = buffer[line_end + 2 :]
        if size == 0:  # the last chunk: trailers (ignored) up to an empty line
            while True:
                line_end = buffer.find(b"\r\n")
                while line_end < 0:
                    buffer = _more(sock, buffer)
                    line_end = buffer.find(b"\r\n")
                line, buffer = buffer[:line_end], buffer[line_end + 2 :]
                if not line:
                    return b"".join(parts), buffer
        chunk, buffer = _read_exactly(sock, buffer, size + 2)
        if chunk[-2:] != b"\r\n":
            raise TransportError("a reply's chunk does not end where its size says")
        parts.append(chunk[:-2])


def _more(sock: socket.socket, buffer: bytes) -> bytes:
    chunk = sock.recv(RECV_BYTES)
    if not chunk:
        raise TransportError("the server closed the connection mid-reply")
    return buffer + chunk


def _read_to_end(sock: socket.socket, buffer: bytes) -> bytes:
    parts = [buffer]
    while chunk := sock.recv(RECV_BYTES):
        parts.append(chunk)
    return b"".join(parts)


def _mapped(exc: BaseException, where: str, timeout_s: float, secrets: Secrets) -> BaseException:
    """A failure while a request was out, as the connector's error (others pass through as they are)."""
    if isinstance(exc, TimeoutError):
        return DeadlineExceeded(f"{where}: no reply within {timeout_s} s")
    if isinstance(exc, TransportError):
        return type(exc)(f"{where}: {secrets.blank(str(exc))}")
    if isinstance(exc, OSError):  # reset mid-reply, TLS failure (ssl.SSLError) (may quote the server)
        return TransportError(f"{where}: {type(exc).__name__}: {secrets.blank(str(exc))}")
    return exc


def _closed_by_peer(sock: socket.socket) -> bool:
    """An idle keep-alive connection with something to read: the server's FIN (or bytes nobody asked for)."""
    try:
        poller = select.poll()  # not select.select: it cannot take a descriptor above 1023
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):  # closed
        return True


def _close_all(socks: set[Any]) -> None:
    for sock in list(socks):
        sock.close()
