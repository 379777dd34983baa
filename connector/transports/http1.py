"""HTTP/1.1 keep-alive connections to one server on plain sockets: every REST database's requests and the
embeddings endpoint's go through ``ConnectionPool`` (a proxy the environment names goes through httpx:
``transports/http.py``).

Why not httpx or ``http.client`` under the hot path: a request's own CPU in the client, on loopback
(``jobs/bench/http_request.py``), is 274–325 µs through ``httpx.HTTPTransport`` and 108–128 µs through
``http.client`` for a 12 KB delete, against 35–57 µs here; with a 1.9 MB upsert body both copy the body
once more than needed, where here the head and the body leave in one ``sendmsg``. Per-request cost is
what bounds deletes (a 1,000-id request carries no vector to amortise it) and a fifth of a REST upsert's.

What it speaks: a request with a ``Content-Length`` body (or none); replies framed by ``Content-Length``,
by chunks, or by the connection's end; 1xx replies skipped; the connection kept unless either side says
``close``. No redirects, cookies, compression (no ``Accept-Encoding`` is sent, so replies come as they
are) or HTTP/2: none of the databases needs them.

A connection the server closed while it sat idle (its keep-alive timeout: uvicorn's is 5 s) is found
readable before reuse and dropped, as urllib3 does. One that fails after that, even before a byte of
the reply (the server may have read and applied the request), is a ``TransportError`` for the engine to
retry, never a silent second send. ``timeout_s`` bounds the whole exchange: the connect, the send and
every byte of the reply, however slowly it drips. A reply's framing is read strictly (digits for
lengths, hex for chunk sizes, a bound on every line): what does not parse is a ``TransportError``, not a
short or long body. Errors are the connector's, their messages naming ``where`` and blanked of the
credentials in use before anything is cut from them.
"""

from __future__ import annotations

import re
import select
import socket
import time
from typing import TYPE_CHECKING

from ..errors import ConnectError, ConnectTimeout, DeadlineExceeded, TransportError
from ..redaction import Secrets
from .idle import Connections

if TYPE_CHECKING:
    import ssl

__all__ = ["ConnectionPool", "Reply", "request_head", "tls_context"]

MAX_HEAD_BYTES = 65_536  # a reply's status line and headers
MAX_LINE_BYTES = 4_096  # a chunk's size line, a trailer
MAX_INTERIM = 16  # 1xx replies before the final one
MAX_MESSAGE = 500  # characters of a protocol error's message (after blanking)
ONE_SEND_BYTES = 16_384  # below this, head and body are joined into one buffer (TLS cannot sendmsg)
RECV_BYTES = 65_536
NO_BODY = frozenset({204, 304})
STATUS_LINE = re.compile(r"HTTP/1\.([01]) ([0-9]{3})(?: .*)?")
DIGITS = re.compile(r"[0-9]{1,18}")
HEX = re.compile(r"[0-9A-Fa-f]{1,15}")


class Reply:
    """A reply: its status, its headers (names lower-cased, repeats joined by ``", "``) and its body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def request_head(verb: str, target: str, headers: dict[str, str]) -> bytes:
    """The request line and ``headers`` (``Host`` among them), up to where ``Content-Length`` goes.

    A header holding a line break, a NUL or a character outside latin-1 (a key pasted with a zero-width
    space) is a ``ConfigError`` naming the header, never its value."""
    from ..errors import ConfigError

    lines = [f"{verb} {target} HTTP/1.1"] + [f"{name}: {value}" for name, value in headers.items()]
    for line, name in zip(lines, ["the request line", *headers], strict=True):
        if "\r" in line or "\n" in line or "\0" in line:
            raise ConfigError(f"{name}: a line break or NUL where an HTTP header goes")
        if max(line, default=" ") > "\xff":  # not latin-1 (the error raised outside any encoding error,
            # whose arguments would carry the whole line, key and all)
            raise ConfigError(f"{name}: a character HTTP headers cannot carry (not latin-1)")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def tls_context() -> ssl.SSLContext:
    """The certificates httpx trusts (certifi's, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``): one trust for
    requests sent here and requests that go through a proxy."""
    import httpx

    return httpx.create_ssl_context()


class ConnectionPool(Connections[socket.socket]):
    """Keep-alive connections to ``host:port`` (TLS for ``https``), shared by threads; thread-safe.

    ``request(head, body, ...)`` sends ``head`` (from ``request_head``) with ``Content-Length`` and
    ``body``, and returns the ``Reply`` of any status: the caller maps statuses to errors.
    """

    def __init__(self, scheme: str, host: str, port: int, *, max_idle: int = 256) -> None:
        super().__init__(max_idle)
        self._tls = tls_context() if scheme == "https" else None
        self._host, self._port = host, port

    def __repr__(self) -> str:
        return f"ConnectionPool({self._host}:{self._port}, tls={self._tls is not None})"

    def request(
        self, head: bytes, body: bytes, *, verb: str, where: str, timeout_s: float, secrets: Secrets
    ) -> Reply:
        deadline = time.monotonic() + timeout_s
        head += b"Content-Length: %d\r\n\r\n" % len(body) if body or verb not in ("GET", "HEAD") else b"\r\n"
        sock = self._take(_still_open) or self._open(where, timeout_s)
        try:
            sock.settimeout(timeout_s)
            reply, keep = self._exchange(sock, head, body, verb, deadline)
        except BaseException as exc:
            self._drop(sock)
            raise _mapped(exc, where, timeout_s, secrets) from None
        if keep:
            self._give_back(sock)
        else:
            self._drop(sock)
        return reply

    def _open(self, where: str, timeout_s: float) -> socket.socket:
        try:
            sock = socket.create_connection((self._host, self._port), timeout=timeout_s)
        except TimeoutError:
            raise ConnectTimeout(f"{where}: cannot connect: timed out after {timeout_s} s") from None
        except OSError as exc:  # refused, unreachable, no such host (socket.gaierror)
            raise ConnectError(f"{where}: cannot connect: {exc}") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self._host)
        except TimeoutError:
            sock.close()
            raise ConnectTimeout(
                f"{where}: cannot connect: TLS handshake timed out after {timeout_s} s"
            ) from None
        except OSError as exc:  # ssl.SSLError among them
            sock.close()
            raise ConnectError(f"{where}: cannot connect: {exc}") from None
        self._add(sock)
        return sock

    def _exchange(
        self, sock: socket.socket, head: bytes, body: bytes, verb: str, deadline: float
    ) -> tuple[Reply, bool]:
        try:
            _send(sock, head, body, tls=self._tls is not None)
        except TimeoutError:
            raise
        except OSError:
            # the server closed the connection, or refused the request before reading all of it (a 413):
            # a reply may be waiting (over TLS the close is an SSLEOFError); none is a TransportError
            try:
                reply, _ = _Reader(sock, deadline).reply(verb)
            except (OSError, TransportError):
                raise TransportError("the server closed the connection before the request was sent") from None
            return reply, False
        return _Reader(sock, deadline).reply(verb)


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


class _Reader:
    """One reply off a socket: bytes received and not yet used in ``buffer`` from ``at``, each wait for
    more bounded by what is left until ``deadline``."""

    __slots__ = ("at", "buffer", "deadline", "received", "sock")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline
        self.buffer, self.at = bytearray(), 0
        self.received = False  # any byte of a reply (an interim one too)

    def reply(self, verb: str) -> tuple[Reply, bool]:
        """The final reply (1xx ones skipped) and whether the connection can carry another request."""
        for _ in range(MAX_INTERIM + 1):
            status, version, headers = _parse_head(self._head())
            if not 100 <= status < 200:
                break
            if status == 101:
                raise TransportError("the server switched protocols, which no request asked for")
        else:
            raise TransportError(f"more than {MAX_INTERIM} interim (1xx) replies")
        connection = headers.get("connection", "").lower()
        keep = "close" not in connection if version == "1" else "keep-alive" in connection
        codings = [c.strip() for c in headers.get("transfer-encoding", "").lower().split(",") if c.strip()]
        if verb == "HEAD" or status in NO_BODY:
            body = b""
        elif codings:
            if codings[-1] != "chunked":  # framed by the connection's end (RFC 9112 6.3)
                return Reply(status, headers, self._to_end()), False
            body = self._chunked()
            keep = keep and "content-length" not in headers  # both framings: trust neither connection
        elif "content-length" in headers:
            text = headers["content-length"]
            if not DIGITS.fullmatch(text):
                raise TransportError(f"a reply's Content-Length is not a length: {text!r}")
            body = self._exactly(int(text))
        else:
            return Reply(status, headers, self._to_end()), False
        return Reply(status, headers, body), keep and self.at == len(self.buffer)  # nothing unasked for

    def _head(self) -> bytes:
        return self._until(b"\r\n\r\n", MAX_HEAD_BYTES, "a reply's headers")

    def _line(self) -> bytes:
        return self._until(b"\r\n", MAX_LINE_BYTES, "a line of a chunked reply")

    def _until(self, mark: bytes, limit: int, what: str) -> bytes:
        """The bytes up to ``mark`` (which is passed over)."""
        end = self.buffer.find(mark, self.at)
        while end < 0:
            pending = len(self.buffer) - self.at
            if pending > limit:
                raise TransportError(f"{what} exceeds {limit} bytes")
            if not self._more():
                where = "mid-reply" if self.received else "without a reply"
                raise TransportError(f"the server closed the connection {where}")
            end = self.buffer.find(mark, self.at + max(0, pending - len(mark) + 1))
        start, self.at = self.at, end + len(mark)
        return bytes(memoryview(self.buffer)[start:end])

    def _exactly(self, length: int) -> bytes:
        while len(self.buffer) - self.at < length:
            if not self._more(length - (len(self.buffer) - self.at)):
                got = len(self.buffer) - self.at
                raise TransportError(f"the server closed the connection after {got} of {length} body bytes")
        start, self.at = self.at, self.at + length
        return bytes(memoryview(self.buffer)[start : self.at])

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size_text = self._line().split(b";")[0].strip()
            if not HEX.fullmatch(size_text.decode("latin-1")):
                raise TransportError(f"a reply's chunk size is not hex: {size_text.decode('latin-1')!r}")
            size = int(size_text, 16)
            if size == 0:
                while self._line():  # trailers, ignored, up to an empty line
                    pass
                return b"".join(parts)
            parts.append(self._exactly(size))
            if self._line():
                raise TransportError("a reply's chunk does not end where its size says")

    def _to_end(self) -> bytes:
        while self._more():
            pass
        start, self.at = self.at, len(self.buffer)
        return bytes(memoryview(self.buffer)[start:])

    def _more(self, wanted: int = RECV_BYTES) -> bool:
        """Appends what the socket has next (waiting at most until the deadline); False at its end."""
        if self.at and self.at == len(self.buffer):
            self.buffer.clear()  # keep the buffer to what is not used yet
            self.at = 0
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)
        chunk = self.sock.recv(min(max(wanted, RECV_BYTES), 1 << 20))
        if not chunk:
            return False
        self.buffer += chunk
        self.received = True
        return True


def _parse_head(head: bytes) -> tuple[int, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    matched = STATUS_LINE.fullmatch(lines[0])
    if matched is None:
        raise TransportError(f"not an HTTP/1.x reply: {lines[0]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise TransportError(f"a reply header without a colon: {line!r}")
        name, value = name.strip().lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return int(matched.group(2)), matched.group(1), headers


def _mapped(exc: BaseException, where: str, timeout_s: float, secrets: Secrets) -> BaseException:
    """A failure while a request was out, as the connector's error (others pass through as they are); the
    message blanked of ``secrets`` before it is cut."""
    if isinstance(exc, TimeoutError):
        return DeadlineExceeded(f"{where}: no reply within {timeout_s} s")
    if isinstance(exc, TransportError):
        return TransportError(f"{where}: {_cut(secrets.blank(str(exc)))}")
    if isinstance(exc, OSError):  # reset mid-reply, TLS failure (ssl.SSLError) (may quote the server)
        return TransportError(f"{where}: {type(exc).__name__}: {_cut(secrets.blank(str(exc)))}")
    return exc


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "…"


def _still_open(sock: socket.socket) -> bool:
    """An idle keep-alive connection with nothing to read: no FIN from the server (nor bytes nobody asked for)."""
    try:
        poller = select.poll()  # not select.select: it cannot take a descriptor above 1023
        poller.register(sock, select.POLLIN)
        return not poller.poll(0)
    except (OSError, ValueError):  # closed
        return False
