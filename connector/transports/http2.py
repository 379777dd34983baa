"""gRPC unary calls over HTTP/2 connections of our own: every gRPC database's requests go through
``Http2Pool`` (``transports/grpc.py`` maps what comes back to the connector's errors).

Why not grpcio under the hot path: a unary call's own CPU in the client, on loopback, is 184–272 µs
through grpcio (its channel hands every call between threads and completion queues) for a 1,000-id
delete, and 317–393 µs for a 100 × 768 upsert; here 84–111 and 157–164 µs (``jobs/bench/grpc_call.py``,
two runs): a call is one ``sendmsg`` of the request's frames (the body not copied) and the reads of its
reply.

What it speaks: one stream at a time per connection (``max_concurrency`` calls use as many
connections, as the HTTP/1.1 pool does), opened with the client preface and our settings (no push; a
window of 1 GiB per stream and for the connection, topped up as replies arrive, so a server is never
held up by us); the request's HEADERS (HPACK literals, never indexed, so no encoder state; the
credentials in use marked never-to-be-indexed for any proxy on the way) and DATA frames within the
server's frame size and windows, waiting for its WINDOW_UPDATEs; the reply's headers, message and
trailers, decoded by ``hpack`` (the dynamic table a server indexes into; its debug log, which
would print a server's echo of a key, switched off); SETTINGS acknowledged,
PINGs answered, GOAWAY and RST_STREAM honoured. Over TLS, ALPN must choose ``h2``; the certificates
trusted are the REST transport's (``http1.tls_context``). No compression is asked for, so a reply
that comes compressed is refused.

A call is never sent twice here: a connection that fails once the request has started to leave is a
``TransportError`` for the engine to retry, which says whether the server can have seen it; a stream
the server refused (GOAWAY naming a lower stream, ``REFUSED_STREAM``) was not processed
(``StreamRefused``). An idle connection is checked before reuse: what the server sent meanwhile (a
GOAWAY, a PING, its end) is read first, and one idle for 30 s is replaced (a NAT may have dropped it
without a word). A proxy the environment names for grpc carries the connection (``proxy_for``). ``timeout_s`` bounds the whole call, connect included; a connection whose call timed out
is closed, never reused mid-stream. Frames are read strictly (lengths within what we advertised,
windows that cannot overflow, header blocks within 64 KiB): anything else ends the connection with a
``TransportError``.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ConnectError, ConnectTimeout, DeadlineExceeded, TransportError
from .idle import Connections

if TYPE_CHECKING:
    import ssl

__all__ = ["Http2Pool", "Reply", "StreamRefused", "header_block"]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    range(10)
)
END_STREAM = ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIORITY_FLAG = 0x20
SETTINGS_HEADER_TABLE_SIZE, SETTINGS_ENABLE_PUSH, SETTINGS_MAX_CONCURRENT_STREAMS = 0x1, 0x2, 0x3
SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE, SETTINGS_MAX_HEADER_LIST_SIZE = 0x4, 0x5, 0x6
REFUSED_STREAM_CODE = 0x7
CANCEL_CODE = 0x8
DEFAULT_WINDOW = 65_535
DEFAULT_FRAME = 16_384  # the largest frame we accept (we never raise it) and the peer's until it says
MAX_FRAME = (1 << 24) - 1
MAX_WINDOW = (1 << 31) - 1
OUR_WINDOW = 1 << 30  # per stream and for the connection
MAX_HEADER_BLOCK = 65_536  # one header block, CONTINUATIONs included
MAX_REPLY_BYTES = 128 * 1024 * 1024 + 5  # a reply's DATA (one message and its prefix)
LAST_STREAM_ID = (1 << 31) - 1
RECV_BYTES = 65_536  # below malloc's mmap threshold: a recv's buffer is not mapped and unmapped each time
MAX_SEND_BYTES = 1 << 31  # a request's message (grpc's own default limit for a server is 4 MiB)
MAX_IDLE_S = 30.0  # an idle connection older than this is closed, not reused: a NAT or load balancer
# may have dropped it without a word, and a request on it would wait out its whole timeout
MAX_IDLE_READS = 8  # reads the idle check makes of what a server sent meanwhile
IDLE_CHECK_S = 0.05  # what the idle check may take, writing the acknowledgements it owes included
MAX_KEPT_BLOCKS = 16  # decoded header blocks kept per connection (see ``_Connection._decode``)
SEND_BATCH = 64  # frames per sendmsg
MAX_DATA_FRAME = 65_536  # however large the peer allows: a server parses a long frame only once it is whole
FRAME_HEAD = struct.Struct(">BHBBI")  # length (24 bits: 8 + 16), type, flags, stream (and its reserved bit)
SETTING = struct.Struct(">HI")
U32 = struct.Struct(">I")
GRPC_PREFIX = struct.Struct(">BI")

# what an HTTP status says when a reply carries no grpc-status (a proxy's page): grpc's own mapping, but
# a gateway's 429 is its rate limit, so a throttle (the in-flight limit halves, its Retry-After honoured)
STATUS_OF_HTTP = {400: "INTERNAL", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "UNIMPLEMENTED"}
STATUS_OF_HTTP |= dict.fromkeys((502, 503, 504), "UNAVAILABLE") | {429: "RESOURCE_EXHAUSTED"}
# RST_STREAM error code → gRPC status, as grpc clients read it
STATUS_OF_RESET = {0x7: "UNAVAILABLE", 0x8: "CANCELLED", 0xB: "RESOURCE_EXHAUSTED", 0xC: "PERMISSION_DENIED"}
STATUS_NAMES = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
]


class StreamRefused(TransportError):
    """The server refused the stream before processing it (GOAWAY, ``REFUSED_STREAM``): safe to send again."""


@dataclass(slots=True)
class Reply:
    """A call's outcome: its gRPC status name and details (a server's ``grpc-message`` as it came,
    percent-encoded: the caller blanks the credentials from it before and after decoding), its message
    (``b""`` if none) and trailers."""

    status: str
    details: str
    body: bytes
    trailers: dict[str, str] = field(default_factory=dict)


def header_block(fields: list[tuple[str, str]], secret_names: frozenset[str] = frozenset()) -> bytes:
    """HPACK literals, none indexed (no encoder state to keep); ``secret_names`` as never-indexed.

    A name or value outside printable ASCII, or a name with capitals, is a ``ConfigError`` naming the
    header, never quoting its value (a key pasted with a zero-width space)."""
    out = bytearray()
    for name, value in fields:
        if not name or not (name.isascii() and name.isprintable()) or name != name.lower():
            raise ConfigError(f"gRPC metadata name {name!r}: lower-case printable ASCII only")
        if not (value.isascii() and value.isprintable()):
            raise ConfigError(
                f"gRPC metadata {name}: a character gRPC metadata cannot carry (printable ASCII only)"
            )
        out.append(0x10 if name in secret_names else 0x00)
        for text in (name, value):
            raw = text.encode("ascii")
            out += _integer(len(raw), 7, 0)
            out += raw
    return bytes(out)


def _integer(value: int, prefix_bits: int, first: int) -> bytes:
    """An HPACK integer (RFC 7541 §5.1) with ``first``'s high bits in its first byte."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out = bytearray((first | limit,))
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def grpc_timeout(timeout_s: float) -> str:
    """The ``grpc-timeout`` header: at most 8 digits and a unit."""
    millis = max(1, int(timeout_s * 1000))
    return f"{millis}m" if millis < 100_000_000 else f"{min(99_999_999, int(timeout_s))}S"


class Http2Pool(Connections["_Connection"]):
    """HTTP/2 connections to ``host:port`` (TLS if ``tls``), shared by threads, one call at a time each;
    thread-safe. ``call(block, body, ...)`` sends the header block (from ``header_block``, pseudo-headers
    first) and the gRPC message ``body``, and returns the ``Reply`` of any status."""

    def __init__(self, host: str, port: int, *, tls: bool, max_idle: int = 256) -> None:
        super().__init__(max_idle)
        self.host, self.port, self.tls = host, port, tls
        self._context = _h2_context() if tls else None

    def __repr__(self) -> str:
        return f"Http2Pool({self.host}:{self.port}, tls={self.tls})"

    def call(self, block: bytes, body: bytes, *, where: str, timeout_s: float) -> Reply:
        deadline = time.monotonic() + timeout_s
        conn = self._take(lambda idle: idle.still_usable(deadline)) or self._connect(
            where, timeout_s, deadline
        )
        try:
            reply = conn.call(block, body, deadline)
        except TimeoutError:
            self._drop(conn)
            raise DeadlineExceeded(f"{where}: no reply within {timeout_s} s") from None
        except StreamRefused as exc:
            self._drop(conn)
            raise StreamRefused(f"{where}: {exc}") from None
        except TransportError as exc:
            self._drop(conn)
            raise TransportError(f"{where}: {exc}") from None
        except OSError as exc:  # reset, broken pipe, TLS failure
            self._drop(conn)
            sent = (
                "after the request started to leave"
                if conn.request_started
                else "before the request was sent"
            )
            raise TransportError(f"{where}: connection lost {sent}: {type(exc).__name__}: {exc}") from None
        except BaseException:
            self._drop(conn)
            raise
        if conn.reusable:
            conn.idle_since = time.monotonic()
            self._give_back(conn)
        else:
            self._drop(conn)
        return reply

    def _connect(self, where: str, timeout_s: float, deadline: float) -> _Connection:
        """A new connection, its settings exchanged, within ``deadline`` as a whole (the name's lookup aside);
        through the proxy the environment names, if it names one for this host (``proxy_for``)."""
        proxy = proxy_for(self.host)
        address = (self.host, self.port) if proxy is None else (proxy.host, proxy.port)
        via = "" if proxy is None else f" through the proxy {proxy.host}:{proxy.port}"
        try:
            sock = socket.create_connection(address, timeout=timeout_s)
        except TimeoutError:
            raise ConnectTimeout(f"{where}: cannot connect{via}: timed out after {timeout_s} s") from None
        except OSError as exc:  # refused, unreachable, no such host (socket.gaierror)
            raise ConnectError(f"{where}: cannot connect{via}: {exc}") from None
        early = b""  # the server's first bytes, read with the proxy's reply
        if proxy is not None:
            try:
                early = proxy.tunnel(sock, self.host, self.port, deadline)
                if early and self._context is not None:  # a TLS server never speaks first
                    raise TransportError("bytes before the TLS handshake")
            except (OSError, TransportError) as exc:  # TimeoutError among OSErrors
                sock.close()
                if isinstance(exc, TimeoutError):
                    raise ConnectTimeout(f"{where}: cannot connect{via}: timed out") from None
                raise ConnectError(f"{where}: cannot connect{via}: {exc}") from None
        step = "TLS handshake"
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._context is not None:
                sock.settimeout(_left(deadline))
                sock = self._context.wrap_socket(sock, server_hostname=self.host)
                if sock.selected_alpn_protocol() != "h2":
                    raise ConnectError(f"{where}: cannot connect: the server does not offer HTTP/2 (ALPN h2)")
            step = "HTTP/2 settings exchange"
            conn = _Connection(sock, tls=self._context is not None)
            conn.buffer += early
            conn.start(deadline)
        except ConnectError:
            sock.close()
            raise
        except TimeoutError:
            sock.close()
            raise ConnectTimeout(f"{where}: cannot connect: {step} timed out after {timeout_s} s") from None
        except (OSError, TransportError) as exc:  # ssl.SSLError; a server that does not speak HTTP/2
            sock.close()
            raise ConnectError(f"{where}: cannot connect: {step}: {exc}") from None
        self._add(conn)
        return conn


@dataclass(frozen=True, slots=True)
class Proxy:
    """An HTTP proxy that opens tunnels (``CONNECT``), as grpc clients use one."""

    host: str
    port: int
    authorization: str | None = field(default=None, repr=False)  # "Basic ...": never in a message

    def tunnel(self, sock: socket.socket, host: str, port: int, deadline: float) -> bytes:
        """Asks the proxy for a tunnel to ``host:port`` on ``sock``; ``TransportError`` if it refuses. What
        came after the proxy's reply is the server's already (an HTTP/2 server speaks first): returned."""
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
        if self.authorization:
            head += f"Proxy-Authorization: {self.authorization}\r\n"
        sock.settimeout(_left(deadline))
        sock.sendall((head + "\r\n").encode("latin-1"))
        reply = b""
        while b"\r\n\r\n" not in reply:
            if len(reply) > MAX_HEADER_BLOCK:
                raise TransportError("the proxy's reply to CONNECT has no end")
            sock.settimeout(_left(deadline))
            chunk = sock.recv(4096)
            if not chunk:
                raise TransportError("the proxy closed the connection instead of opening a tunnel")
            reply += chunk
        head_end = reply.index(b"\r\n\r\n") + 4
        status = reply.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or parts[1] != "200":
            raise TransportError(f"the proxy refused the tunnel: {status[:200]}")
        return reply[head_end:]


def proxy_for(host: str) -> Proxy | None:
    """The proxy a grpc client would use for ``host``: the first of ``grpc_proxy``, ``https_proxy`` and
    ``http_proxy`` that is set (lower case only, as grpc reads them; set but empty: no proxy), if it is an
    ``http://`` proxy (grpc takes no other); none where the first of ``no_grpc_proxy`` and ``no_proxy`` that
    is set exempts the host (``_exempt``)."""
    import urllib.parse

    env = os.environ
    url = next((env[name] for name in ("grpc_proxy", "https_proxy", "http_proxy") if name in env), "")
    if not url:
        return None
    exempt = next((env[name] for name in ("no_grpc_proxy", "no_proxy") if name in env), "")
    if _exempt(host, exempt):
        return None
    parsed = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    if parsed.scheme.lower() != "http" or parsed.hostname is None:
        return None  # an https:// or socks proxy: grpc connects directly, and so does this
    try:
        port = parsed.port or 80
    except ValueError:  # a port that is no number: no proxy
        return None
    authorization = None
    if parsed.username is not None:
        import base64

        pair = f"{urllib.parse.unquote(parsed.username)}:{urllib.parse.unquote(parsed.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode()
    return Proxy(parsed.hostname, port, authorization)


def _exempt(host: str, exempt: str) -> bool:
    """Whether a ``no_proxy`` list exempts ``host``: ``*``, the host itself, a domain it is in, or (for an
    IP address) a network in CIDR notation that holds it."""
    import ipaddress

    host = host.strip("[]").lower()
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in exempt.lower().split(","):
        entry = entry.strip().strip("[]")
        if "/" in entry:
            try:
                if address is not None and address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        if entry.rsplit(":", 1)[-1].isdigit() and entry.count(":") == 1:
            entry = entry.rsplit(":", 1)[0]  # a port given: hosts are matched alone
        domain = entry.lstrip(".")
        if entry == "*" or (domain and (host == domain or host.endswith("." + domain))):
            return True
    return False


def _left(deadline: float) -> float:
    """Seconds until ``deadline``; ``TimeoutError`` if it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _decoder() -> Any:
    """An HPACK decoder, with ``hpack``'s log silenced: it prints every header block it decodes at debug
    level, and a server's blocks may quote the key it was sent (``grpc-message``, an echo header). A
    filter that drops every record stays through a later ``logging.config`` (``disabled`` and levels
    do not), and ``disabled`` spares the records' making while nobody re-enables them."""
    import logging

    from hpack import Decoder

    for name in ("hpack.hpack", "hpack.table"):
        logger = logging.getLogger(name)
        if _drop_all not in logger.filters:
            logger.addFilter(_drop_all)
        logger.disabled = True
    return Decoder(max_header_list_size=MAX_HEADER_BLOCK)


def _drop_all(record: Any) -> bool:
    return False


def _h2_context() -> ssl.SSLContext:
    from .http1 import tls_context

    context = tls_context()
    context.set_alpn_protocols(["h2"])
    return context


class _Connection:
    """One HTTP/2 connection, used by one thread at a time; at most one open stream."""

    def __init__(self, sock: socket.socket, *, tls: bool) -> None:
        self.sock, self.tls = sock, tls
        self.decoder = _decoder()
        self.decoded: dict[bytes, list[tuple[str, str]]] = {}  # see ``_decode``
        self.buffer = bytearray()
        self.at = 0
        self.next_stream = 1
        self.send_window = DEFAULT_WINDOW  # the connection's, for our DATA
        self.peer_initial_window = DEFAULT_WINDOW
        self.peer_max_frame = DEFAULT_FRAME
        self.unacknowledged = 0  # DATA bytes received since our last connection WINDOW_UPDATE
        self.goaway_last: int | None = None  # the last stream id of a GOAWAY received
        self.broken = False
        self.settled = False  # the server's first SETTINGS received
        self.poller: Any = None  # a select.poll for the idle check, made at its first use
        self.idle_since = 0.0  # when the pool got it back
        self.request_started = False  # whether any frame of the call's stream has been given to the socket
        self.deadline = 0.0  # the current call's (or idle check's): bounds every read and write
        self.stream: _Stream | None = None

    @property
    def reusable(self) -> bool:
        return not self.broken and self.goaway_last is None and self.next_stream < LAST_STREAM_ID

    def close(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError):
            self.sock.close()

    def start(self, deadline: float) -> None:
        self.deadline = deadline
        settings = SETTING.pack(SETTINGS_ENABLE_PUSH, 0) + SETTING.pack(
            SETTINGS_INITIAL_WINDOW_SIZE, OUR_WINDOW
        )
        settings += SETTING.pack(SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_BLOCK)
        update = U32.pack(OUR_WINDOW - DEFAULT_WINDOW)
        self._send(
            [
                PREFACE,
                _frame_head(len(settings), SETTINGS, 0, 0),
                settings,
                _frame_head(4, WINDOW_UPDATE, 0, 0),
                update,
            ]
        )
        while not self.settled:  # the server's settings (its windows, its frame size) before any request
            self._read_one()

    def still_usable(self, deadline: float) -> bool:
        """Reads what the server sent while the connection sat idle (frames already read first); False if
        it sat idle too long (``MAX_IDLE_S``), is closed or going away, or the server sent more than a few
        reads' worth, or left a header block unfinished: the call then takes a new connection instead of
        waiting here."""
        if time.monotonic() - self.idle_since >= MAX_IDLE_S:
            return False
        # a short deadline of its own: time to answer a PING or SETTINGS that came meanwhile, not to wait
        # for what the server has not sent (a header block left unfinished drops the connection)
        self.deadline = min(deadline, time.monotonic() + IDLE_CHECK_S)
        try:
            for _ in range(MAX_IDLE_READS):
                while (frame := self._frame()) is not None:
                    self._handle(*frame)
                if not self._readable():
                    return self.reusable
                if not self._receive(wait=False):
                    return False
            return False
        except (OSError, ValueError, TransportError):  # TimeoutError among OSErrors
            return False
        finally:
            self.deadline = deadline

    def _readable(self) -> bool:
        if self.tls and self.sock.pending():  # type: ignore[attr-defined]  # decrypted, not read yet
            return True
        if self.poller is None:
            self.poller = select.poll()  # not select.select: it cannot take a descriptor above 1023
            self.poller.register(self.sock, select.POLLIN)
        return bool(self.poller.poll(0))

    # -- a call -----------------------------------------------------------------------------------

    def call(self, block: bytes, body: bytes, deadline: float) -> Reply:
        """One unary call: the request's frames out as the windows allow, then the reply's in."""
        self.deadline = deadline
        self.request_started = False
        stream_id = self.next_stream
        self.next_stream += 2
        stream = self.stream = _Stream(stream_id, self.peer_initial_window)
        pieces = [memoryview(GRPC_PREFIX.pack(0, len(body))), memoryview(body)]
        left = 5 + len(body)
        try:
            pending = self._headers_frames(block, stream_id)
            self.request_started = True
            while left and not stream.closed_remote:
                room = min(self.send_window, stream.send_window)
                frames = 0
                while room > 0 and left and frames < SEND_BATCH:
                    size = min(room, left, self.peer_max_frame, MAX_DATA_FRAME)
                    room, left, frames = room - size, left - size, frames + 1
                    pending.append(_frame_head(size, DATA, 0 if left else END_STREAM, stream_id))
                    pending += _take(pieces, size)
                    self.send_window -= size
                    stream.send_window -= size
                if pending:
                    self._send(pending)
                    pending = []
                if left and room <= 0:
                    self._read_one()  # a WINDOW_UPDATE, or the reply itself
            stream.closed_local = not left
            while not stream.closed_remote:
                self._read_one()
        finally:
            self.stream = None
        if not stream.closed_local and not stream.reset:
            # the server answered before taking the whole request: end our side so the stream closes (if
            # that fails, the answer stands and the connection goes)
            try:
                self._send([_frame_head(4, RST_STREAM, 0, stream_id), U32.pack(CANCEL_CODE)])
            except OSError:
                self.broken = True
        return stream.reply()

    def _headers_frames(self, block: bytes, stream_id: int) -> list[bytes | memoryview]:
        if len(block) > MAX_HEADER_BLOCK:
            raise ConfigError(f"gRPC metadata of {len(block)} bytes: at most {MAX_HEADER_BLOCK}")
        size = self.peer_max_frame
        parts: list[bytes | memoryview] = []
        view = memoryview(block)
        first, view = view[:size], view[size:]
        parts += [_frame_head(len(first), HEADERS, 0 if view else END_HEADERS, stream_id), first]
        while view:
            piece, view = view[:size], view[size:]
            parts += [_frame_head(len(piece), CONTINUATION, 0 if view else END_HEADERS, stream_id), piece]
        return parts

    # -- frames in ---------------------------------------------------------------------------------

    def _read_one(self) -> None:
        frame = self._frame()
        while frame is None:
            if not self._receive(wait=True):
                self.broken = True
                stream = self.stream
                if stream is not None and self.goaway_last is not None and stream.id > self.goaway_last:
                    raise StreamRefused("the server went away before taking the request (GOAWAY)")
                raise ConnectionResetError("the server closed the connection")
            frame = self._frame()
        self._handle(*frame)

    def _frame(self) -> tuple[int, int, int, bytes] | None:
        """The next whole frame read (type, flags, stream, payload), consumed; ``None`` if none is whole yet."""
        buffer, at = self.buffer, self.at
        if len(buffer) - at < 9:
            return None
        high, low, kind, flags, stream_id = FRAME_HEAD.unpack_from(buffer, at)
        length = high << 16 | low
        if length > DEFAULT_FRAME:
            self.broken = True
            raise TransportError(f"a frame of {length} bytes, beyond the {DEFAULT_FRAME} we accept")
        end = at + 9 + length
        if end > len(buffer):
            return None
        payload = bytes(memoryview(buffer)[at + 9 : end])
        if end == len(buffer):
            buffer.clear()
            self.at = 0
        else:
            self.at = end
        return kind, flags, stream_id & 0x7FFFFFFF, payload

    def _receive(self, *, wait: bool) -> bool:
        """Appends what the socket has next (waiting at most until the deadline); False at its end."""
        if self.at:
            del self.buffer[: self.at]
            self.at = 0
        if wait:
            self.sock.settimeout(_left(self.deadline))
        else:
            self.sock.settimeout(0)
        try:
            chunk = self.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError as exc:
            if not wait and type(exc).__name__ == "SSLWantReadError":  # a TLS record not whole yet
                return True
            raise
        if not chunk:
            return False
        self.buffer += chunk
        return True

    def _handle(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        stream = self.stream
        if kind == DATA:
            self._received_data(len(payload))
            if stream is not None and stream_id == stream.id:
                stream.data(_unpadded(payload, flags), flags)
            elif stream_id == 0:
                self._protocol("DATA on stream 0")
        elif kind in (HEADERS, CONTINUATION):
            if kind == CONTINUATION:
                self._protocol("CONTINUATION without HEADERS")
            if stream_id == 0:
                self._protocol("HEADERS on stream 0")
            block = _header_fragment(payload, flags)
            end_stream = flags & END_STREAM
            while not flags & END_HEADERS:  # CONTINUATIONs follow at once, on the same stream
                if len(block) > MAX_HEADER_BLOCK:
                    self._protocol(f"a header block beyond {MAX_HEADER_BLOCK} bytes")
                frame = self._frame()
                if frame is None:
                    if not self._receive(wait=True):
                        self._protocol("the connection ended inside a header block")
                    continue
                kind, flags, next_id, payload = frame
                if kind != CONTINUATION or next_id != stream_id:
                    self._protocol("a header block interrupted")
                block += payload
            headers = self._decode(block)  # every block, so the dynamic table stays the server's
            if stream is not None and stream_id == stream.id:
                stream.headers(headers, bool(end_stream))
        elif kind == RST_STREAM:
            if len(payload) != 4 or stream_id == 0:
                self._protocol("a malformed RST_STREAM frame")
            if stream is not None and stream_id == stream.id:
                code = U32.unpack(payload)[0]
                if code == REFUSED_STREAM_CODE and not stream.responded:
                    raise StreamRefused("the server refused the stream before processing it (REFUSED_STREAM)")
                stream.reset_by(code)
        elif kind == SETTINGS:
            if stream_id != 0 or len(payload) % 6 or (flags & ACK and payload):
                self._protocol("a malformed SETTINGS frame")
            if not flags & ACK:
                self._settings(payload)
                self.settled = True
                self._send([_frame_head(0, SETTINGS, ACK, 0)])
        elif kind == PING:
            if stream_id != 0 or len(payload) != 8:
                self._protocol("a malformed PING frame")
            if not flags & ACK:
                self._send([_frame_head(8, PING, ACK, 0), payload])
        elif kind == GOAWAY:
            if stream_id != 0 or len(payload) < 8:
                self._protocol("a malformed GOAWAY frame")
            self.goaway_last = U32.unpack_from(payload, 0)[0] & 0x7FFFFFFF
            if stream is not None and stream.id > self.goaway_last:
                raise StreamRefused("the server went away before taking the request (GOAWAY)")
        elif kind == WINDOW_UPDATE:
            if len(payload) != 4:
                self._protocol("WINDOW_UPDATE of the wrong size")
            increment = U32.unpack(payload)[0] & 0x7FFFFFFF
            if increment == 0:
                self._protocol("a WINDOW_UPDATE of 0")
            if stream_id == 0:
                self.send_window += increment
                if self.send_window > MAX_WINDOW:
                    self._protocol("the connection's window beyond 2^31-1")
            elif stream is not None and stream_id == stream.id:
                stream.send_window += increment
                if stream.send_window > MAX_WINDOW:
                    self._protocol("a stream's window beyond 2^31-1")
        elif kind == PUSH_PROMISE:
            self._protocol("PUSH_PROMISE, which we disabled")
        # PRIORITY and unknown types: ignored, as RFC 9113 says

    def _decode(self, block: bytes) -> list[tuple[str, str]]:
        """The fields of a header block. A server sends the same few blocks on every reply (indexed, once
        the first reply has filled its dynamic table), so a block that cannot change the table (no field
        added to it, no size update: ``_changes_table``) is kept with its fields, and given again as long
        as no block that can change it has come since: decoding it would give the same fields."""
        from hpack import HPACKError

        known = self.decoded.get(block)
        if known is not None:
            return known
        try:
            changes = _changes_table(block)
            raw = self.decoder.decode(block, raw=True)
        except (HPACKError, IndexError) as exc:
            self._protocol(f"a header block that does not decode ({type(exc).__name__})")
        fields = [(bytes(name).decode("latin-1"), bytes(value).decode("latin-1")) for name, value in raw]
        if changes:
            self.decoded.clear()  # what was kept was decoded against the table before this block
        elif len(self.decoded) < MAX_KEPT_BLOCKS:
            self.decoded[block] = fields
        return fields

    def _settings(self, payload: bytes) -> None:
        for at in range(0, len(payload), 6):
            key, value = SETTING.unpack_from(payload, at)
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    self._protocol("an initial window beyond 2^31-1")
                delta, self.peer_initial_window = value - self.peer_initial_window, value
                if self.stream is not None:
                    self.stream.send_window += delta
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if not DEFAULT_FRAME <= value <= MAX_FRAME:
                    self._protocol(f"a max frame size of {value}")
                self.peer_max_frame = value
            elif key == SETTINGS_ENABLE_PUSH and value > 1:
                self._protocol("ENABLE_PUSH beyond 1")

    def _received_data(self, size: int) -> None:
        self.unacknowledged += size
        if self.unacknowledged > OUR_WINDOW // 2:
            increment, self.unacknowledged = self.unacknowledged, 0
            self._send([_frame_head(4, WINDOW_UPDATE, 0, 0), U32.pack(increment)])

    def _protocol(self, what: str) -> Any:
        self.broken = True
        raise TransportError(f"HTTP/2 protocol error from the server: {what}")

    # -- bytes out ---------------------------------------------------------------------------------

    def _send(self, parts: list[bytes | memoryview]) -> None:
        """Writes ``parts`` whole, each write bounded by what is left of the deadline."""
        sock = self.sock
        if self.tls:  # an SSL socket has no sendmsg
            parts = [memoryview(b"".join(parts))]
        while parts:
            sock.settimeout(_left(self.deadline))
            sent = sock.send(parts[0]) if self.tls else sock.sendmsg(parts[:1024])
            while sent:
                first = parts[0]
                if sent >= len(first):
                    sent -= len(first)
                    parts = parts[1:]
                else:
                    parts[0] = memoryview(first)[sent:]
                    sent = 0


@dataclass(slots=True)
class _Stream:
    """What one call's stream has seen."""

    id: int
    send_window: int
    closed_local: bool = False
    closed_remote: bool = False
    reset: bool = False
    reset_code: int | None = None
    responded: bool = False  # any frame of the reply
    head: list[tuple[str, str]] | None = None
    tail: list[tuple[str, str]] | None = None
    body: bytearray = field(default_factory=bytearray)

    def data(self, payload: bytes, flags: int) -> None:
        if self.head is None or self.tail is not None:
            raise TransportError("HTTP/2 protocol error from the server: DATA outside a reply's body")
        self.responded = True
        self.body += payload
        if len(self.body) > MAX_REPLY_BYTES:
            raise TransportError(f"a reply beyond {MAX_REPLY_BYTES} bytes")
        if flags & END_STREAM:
            self.closed_remote = True

    def headers(self, fields: list[tuple[str, str]], end_stream: bool) -> None:
        self.responded = True
        if self.head is None:
            self.head = fields
        elif self.tail is None and end_stream:
            self.tail = fields
        else:
            raise TransportError(
                "HTTP/2 protocol error from the server: a third header block, or trailers that go on"
            )
        if end_stream:
            self.closed_remote = True

    def reset_by(self, code: int) -> None:
        self.reset, self.reset_code, self.closed_remote = True, code, True
        self.closed_local = True

    def reply(self) -> Reply:
        """The call's outcome, as a gRPC client reads it."""
        head = dict(self.head or ())
        fields = dict(self.tail) if self.tail is not None else (head if self.head is not None else {})
        if self.reset and "grpc-status" not in fields:
            name = STATUS_OF_RESET.get(self.reset_code or 0, "INTERNAL")
            return Reply(name, f"the server reset the stream (HTTP/2 error code {self.reset_code})", b"")
        if self.head is None:
            return Reply("INTERNAL", "the server ended the stream without a reply", b"")
        http_status = head.get(":status", "")
        if http_status != "200":
            if "grpc-status" not in fields:
                name = STATUS_OF_HTTP.get(_number(http_status), "UNKNOWN")
                # its headers too: a gateway's Retry-After says when to come back
                pairs = {**head, **fields}.items()
                headers = {field_name: value for field_name, value in pairs if not field_name.startswith(":")}
                message = f"HTTP status {http_status or '(none)'} without a gRPC status"
                return Reply(name, message, b"", headers)
        elif not head.get("content-type", "").startswith("application/grpc"):
            return Reply(
                "UNKNOWN", f"not a gRPC reply (content-type: {head.get('content-type', '(none)')})", b""
            )
        trailers = {name: value for name, value in fields.items() if not name.startswith(":")}
        code = fields.get("grpc-status")
        if code is None:
            return Reply("UNKNOWN", "the reply ended without a grpc-status", b"", trailers)
        number = _number(code)
        name = STATUS_NAMES[number] if 0 <= number < len(STATUS_NAMES) else "UNKNOWN"
        details = fields.get("grpc-message", "")  # percent-encoded: see ``Reply``
        if name != "OK":
            return Reply(name, details, b"", trailers)
        return _message(self.body, trailers)


def _number(text: str) -> int:
    """A status as a number (ASCII digits only: ``int`` takes other scripts' digits), -1 if it is none."""
    return int(text) if 0 < len(text) <= 3 and text.isascii() and text.isdigit() else -1


def _message(body: bytearray, trailers: dict[str, str]) -> Reply:
    """A unary reply's one message, out of its 5-byte length prefix."""
    if len(body) < 5:
        return Reply("INTERNAL", "no message in the reply", b"", trailers)
    compressed, length = GRPC_PREFIX.unpack_from(body, 0)
    if compressed:
        return Reply("INTERNAL", "a compressed reply, which was not asked for", b"", trailers)
    if len(body) != 5 + length:
        return Reply(
            "INTERNAL", f"a reply of {len(body) - 5} bytes where its prefix says {length}", b"", trailers
        )
    return Reply("OK", "", bytes(memoryview(body)[5:]), trailers)


def _changes_table(block: bytes) -> bool:
    """Whether decoding ``block`` can change the HPACK dynamic table (RFC 7541 §6): a literal with
    incremental indexing (``01``) or a size update (``001``) anywhere in it. The representations are
    walked, not decoded: an index or a string is skipped by its length. ``IndexError`` if it runs out."""
    at, end = 0, len(block)
    while at < end:
        first = block[at]
        if first & 0x80:  # an indexed field: its index alone
            at = _skip_integer(block, at, 7)
        elif first & 0xC0 == 0x40 or first & 0xE0 == 0x20:
            return True
        else:  # a literal never or not indexed: a name's index (0: the name as a string), then the value
            name_index = first & 0x0F
            at = _skip_integer(block, at, 4)
            if name_index == 0:
                at = _skip_string(block, at)
            at = _skip_string(block, at)
    if at != end:
        raise IndexError("a representation beyond the block")
    return False


def _skip_integer(block: bytes, at: int, prefix_bits: int) -> int:
    """Where the HPACK integer at ``at`` (its first byte's low ``prefix_bits``) ends."""
    limit = (1 << prefix_bits) - 1
    if block[at] & limit != limit:
        return at + 1
    at += 1
    for _ in range(8):
        if not block[at] & 0x80:
            return at + 1
        at += 1
    raise IndexError("an integer of more than 8 continuation bytes")


def _skip_string(block: bytes, at: int) -> int:
    """Where the HPACK string at ``at`` (a length with a 7-bit prefix, then its bytes) ends."""
    limit, length, shift = 0x7F, block[at] & 0x7F, 0
    at += 1
    if length == limit:
        for _ in range(8):
            byte = block[at]
            at += 1
            length += (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        else:
            raise IndexError("a length of more than 8 continuation bytes")
    return at + length


def _take(pieces: list[memoryview], size: int) -> list[memoryview]:
    """The next ``size`` bytes of ``pieces`` (the message's prefix, then its body), as views; consumed."""
    out = []
    while size:
        piece = pieces[0]
        if len(piece) <= size:
            out.append(piece)
            del pieces[0]
            size -= len(piece)
        else:
            out.append(piece[:size])
            pieces[0] = piece[size:]
            size = 0
    return out


def _frame_head(length: int, kind: int, flags: int, stream_id: int) -> bytes:
    return FRAME_HEAD.pack(length >> 16, length & 0xFFFF, kind, flags, stream_id)


def _unpadded(payload: bytes, flags: int) -> bytes:
    if not flags & PADDED:
        return payload
    if not payload or payload[0] >= len(payload):
        raise TransportError("HTTP/2 protocol error from the server: padding beyond the frame")
    return payload[1 : len(payload) - payload[0]]


def _header_fragment(payload: bytes, flags: int) -> bytes:
    start, end = 0, len(payload)
    if flags & PADDED:
        if not payload or payload[0] >= len(payload):
            raise TransportError("HTTP/2 protocol error from the server: padding beyond the frame")
        start, end = 1, len(payload) - payload[0]
    if flags & PRIORITY_FLAG:
        start += 5
        if start > end:
            raise TransportError(
                "HTTP/2 protocol error from the server: a HEADERS frame too short for its priority"
            )
    return payload[start:end]
