"""``http2.Http2Pool`` and ``GrpcTransport`` on it: gRPC unary calls over our own HTTP/2 connections.

Against a real grpcio server (generic handlers, raw bytes): bodies from empty to beyond every window and
frame, each status, a deadline, many threads, a server gone and back, TLS with ALPN. Against a scripted
HTTP/2 server that misbehaves on purpose: windows of a few bytes, GOAWAY and RST_STREAM at the worst
moment, trailers-only replies, header blocks in CONTINUATIONs with padding and priority, a PING to
answer, frames beyond what we accept, a compressed reply, a connection cut mid-reply, a proxy's page.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import grpc
import hpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.net import connect_proxy
from tests.unit.test_http1 import make_ca_and_server_cert
from vectordb.connector.errors import (
    AuthError,
    ConfigError,
    ConnectError,
    DeadlineExceeded,
    NotFound,
    Rejected,
    ServerError,
    Throttled,
    TransportError,
    Unavailable,
)
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports import http2
from vectordb.connector.transports.base import WireRequest, forget_shared
from vectordb.connector.transports.grpc import ERROR_BY_STATUS, GrpcTransport

KEY = "k-live-5ecret"
METHOD = "/test.Echo/Call"


@pytest.fixture(autouse=True)
def _fresh_pools() -> Iterator[None]:
    yield
    forget_shared()


def transport(port: int, *, tls: bool = False, host: str = "127.0.0.1") -> GrpcTransport:
    return GrpcTransport(f"{host}:{port}", tls=tls, secrets=Secrets(KEY), metadata=(("api-key", KEY),))


def call(t: GrpcTransport, body: bytes, timeout_s: float = 10.0) -> bytes:
    return t.send(WireRequest(METHOD, body), timeout_s=timeout_s).body


# --------------------------------------------------------------------------------------------------
# a real grpcio server


Handler = Callable[[bytes, Any], bytes]


@contextmanager
def grpc_server(handler: Handler, *, credentials: Any = None, port: int = 0) -> Iterator[int]:
    class Generic(grpc.GenericRpcHandler):  # type: ignore[misc]
        def service(self, details: Any) -> Any:
            return grpc.unary_unary_rpc_method_handler(handler)  # raw bytes both ways

    limits = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[Generic()], options=limits)
    address = f"127.0.0.1:{port}"
    bound = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    server.start()
    try:
        yield bound
    finally:
        server.stop(None)


def echo(request: bytes, context: Any) -> bytes:
    if dict(context.invocation_metadata()).get("api-key") != KEY:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "no key")
    return request[::-1]


@pytest.mark.parametrize("size", [0, 1, 5, 16_379, 16_384, 65_535, 65_536, 200_000, 5_000_000])
def test_a_body_of_any_size_reaches_a_grpc_server_whole(size: int) -> None:
    body = os.urandom(size)
    with grpc_server(echo) as port:
        assert call(transport(port), body) == body[::-1]


def test_every_status_a_grpc_server_sends_is_the_connectors_error_with_its_details_blanked() -> None:
    def fail(request: bytes, context: Any) -> bytes:
        code = grpc.StatusCode[request.decode()]
        context.set_trailing_metadata((("grpc-retry-pushback-ms", "1500"),))
        context.abort(code, f"bad key {KEY} for {code.name}")
        return b""  # not reached: abort raises

    with grpc_server(fail) as port:
        t = transport(port)
        for code in grpc.StatusCode:
            if code is grpc.StatusCode.OK:
                continue
            with pytest.raises((ServerError, TransportError)) as raised:
                call(t, code.name.encode())
            assert type(raised.value) is ERROR_BY_STATUS[code.name], code
            assert KEY not in str(raised.value) and code.name in str(raised.value)
            if isinstance(raised.value, ServerError):
                assert raised.value.status == code.name
                assert raised.value.retry_after_s == 1.5
        assert t.host.answered


def test_a_deadline_bounds_the_call_and_the_next_call_works() -> None:
    def slow(request: bytes, context: Any) -> bytes:
        if request == b"slow":
            time.sleep(2)
        return request

    with grpc_server(slow) as port:
        t = transport(port)
        started = time.monotonic()
        with pytest.raises((DeadlineExceeded, ServerError)) as raised:
            call(t, b"slow", timeout_s=0.3)
        assert time.monotonic() - started < 1.5
        assert "DEADLINE_EXCEEDED" in str(raised.value) or isinstance(raised.value, DeadlineExceeded)
        assert call(t, b"fast") == b"fast"


def test_calls_from_many_threads_each_get_their_own_reply() -> None:
    with grpc_server(echo) as port:
        t = transport(port)
        bodies = [os.urandom(n * 997 % 150_000) + str(n).encode() for n in range(160)]
        with futures.ThreadPoolExecutor(16) as pool:
            assert list(pool.map(lambda b: call(t, b), bodies)) == [b[::-1] for b in bodies]


def test_a_server_gone_is_a_connect_error_and_back_on_its_port_it_is_used_again() -> None:
    with grpc_server(echo) as port:
        t = transport(port)
        assert call(t, b"ab") == b"ba"
    with pytest.raises(ConnectError, match="cannot connect"):
        call(t, b"ab", timeout_s=2)
    with grpc_server(echo, port=port):
        assert call(t, b"cd") == b"dc"


def test_tls_with_alpn_to_a_trusted_server_works_and_to_an_untrusted_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca, cert, key = make_ca_and_server_cert(tmp_path)
    credentials = grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])
    with grpc_server(echo, credentials=credentials) as port:
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))
        assert call(transport(port, tls=True, host="localhost"), b"x" * 100_000) == b"x" * 100_000
        forget_shared()
        monkeypatch.delenv("SSL_CERT_FILE")
        with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            call(transport(port, tls=True, host="localhost"), b"x")


def test_metadata_that_cannot_travel_is_a_config_error_naming_it_without_its_value() -> None:
    with pytest.raises(ConfigError, match="api-key") as raised:
        GrpcTransport("127.0.0.1:1", tls=False, secrets=Secrets(KEY), metadata=(("api-key", KEY + "\u200b"),))
    assert KEY not in str(raised.value)


# --------------------------------------------------------------------------------------------------
# a scripted HTTP/2 server


class Peer:
    """The server's side of one connection: frames in and out, HPACK by the ``hpack`` package."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buffer = sock, b""
        self.encoder, self.decoder = hpack.Encoder(), hpack.Decoder()
        self.settings: dict[int, int] = {}

    def exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def frame(self) -> tuple[int, int, int, bytes]:
        head = self.exactly(9)
        length = int.from_bytes(head[:3], "big")
        return head[3], head[4], int.from_bytes(head[5:], "big") & 0x7FFFFFFF, self.exactly(length)

    def send(self, kind: int, flags: int, stream: int, payload: bytes = b"") -> None:
        self.sock.sendall(
            len(payload).to_bytes(3, "big") + bytes((kind, flags)) + stream.to_bytes(4, "big") + payload
        )

    def handshake(self, settings: dict[int, int] | None = None) -> None:
        assert self.exactly(24) == http2.PREFACE
        self.send(
            http2.SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in (settings or {}).items())
        )

    def request(self, *, window_updates: int | None = None) -> tuple[int, list[tuple[str, str]], bytes]:
        """Reads one request: its stream, headers and gRPC message (the 5-byte prefix checked and cut)."""
        stream, headers, data = 0, list[tuple[str, str]](), b""
        while True:
            kind, flags, sid, payload = self.frame()
            if kind == http2.SETTINGS and not flags & http2.ACK:
                self.settings.update(
                    struct.unpack(">HI", payload[i : i + 6]) for i in range(0, len(payload), 6)
                )
            elif kind == http2.HEADERS:
                stream, headers = sid, list(self.decoder.decode(payload))
                assert flags & http2.END_HEADERS
            elif kind == http2.DATA:
                assert sid == stream
                data += payload
                if window_updates and payload:
                    self.send(http2.WINDOW_UPDATE, 0, 0, struct.pack(">I", len(payload)))
                    self.send(http2.WINDOW_UPDATE, 0, sid, struct.pack(">I", len(payload)))
                if flags & http2.END_STREAM:
                    compressed, length = struct.unpack(">BI", data[:5])
                    assert compressed == 0 and length == len(data) - 5
                    return stream, headers, data[5:]

    def reply(self, stream: int, message: bytes, status: int = 0, **trailers: str) -> None:
        self.send(
            http2.HEADERS,
            http2.END_HEADERS,
            stream,
            self.encoder.encode([(":status", "200"), ("content-type", "application/grpc")]),
        )
        self.send(http2.DATA, 0, stream, struct.pack(">BI", 0, len(message)) + message)
        fields = [("grpc-status", str(status)), *((k.replace("_", "-"), v) for k, v in trailers.items())]
        self.send(http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, stream, self.encoder.encode(fields))


@contextmanager
def scripted(script: Callable[[Peer], None]) -> Iterator[tuple[int, list[BaseException]]]:
    """A server on 127.0.0.1 that runs ``script`` on each connection; yields its port and the scripts'
    failures (a test asserts there were none, so the server's own checks count)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    failures: list[BaseException] = []
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                script(Peer(conn))
            except (EOFError, ConnectionError, OSError):
                pass
            except BaseException as exc:  # the script's own assertions
                failures.append(exc)
            with suppress(OSError):  # a graceful end: what the client sent last is read, so no reset
                conn.shutdown(socket.SHUT_WR)
                conn.settimeout(1)
                while conn.recv(65_536):
                    pass

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], failures
    finally:
        stop.set()
        thread.join()
        listener.close()


def test_windows_of_a_few_bytes_are_never_overrun_and_the_body_arrives_whole() -> None:
    body = os.urandom(40_000)
    got: list[bytes] = []

    def tiny_windows(peer: Peer) -> None:
        peer.handshake({http2.SETTINGS_INITIAL_WINDOW_SIZE: 7})
        window = {"conn": 65_535, "stream": 7}
        stream, data = 0, b""
        while True:
            kind, flags, sid, payload = peer.frame()
            if kind == http2.HEADERS:
                stream = sid
            elif kind == http2.DATA:
                window["conn"] -= len(payload)
                window["stream"] -= len(payload)
                assert min(window.values()) >= 0, "the client overran a window"
                data += payload
                if flags & http2.END_STREAM:
                    break
                if window["stream"] == 0:  # open it a little, connection and stream both
                    peer.send(http2.WINDOW_UPDATE, 0, sid, struct.pack(">I", 1000))
                    peer.send(http2.WINDOW_UPDATE, 0, 0, struct.pack(">I", 1000))
                    window["stream"] += 1000
                    window["conn"] += 1000
        got.append(data[5:])
        peer.reply(stream, b"ok")
        with suppress(EOFError):
            peer.frame()

    with scripted(tiny_windows) as (port, failures):
        assert call(transport(port), body) == b"ok"
    assert not failures and got == [body]


def test_a_goaway_before_the_stream_and_a_refused_stream_say_not_processed() -> None:
    def goaway(peer: Peer) -> None:
        peer.handshake()
        peer.request()
        peer.send(http2.GOAWAY, 0, 0, struct.pack(">II", 0, 0))

    def refused(peer: Peer) -> None:
        peer.handshake()
        stream, _, _ = peer.request()
        peer.send(http2.RST_STREAM, 0, stream, struct.pack(">I", http2.REFUSED_STREAM_CODE))

    for script in (goaway, refused):
        with scripted(script) as (port, failures):
            with pytest.raises(Unavailable, match=r"before (taking|processing)") as raised:
                call(transport(port), b"x")
            assert raised.value.retryable and not failures


def test_a_goaway_after_the_stream_lets_its_reply_arrive_and_the_connection_is_not_reused() -> None:
    connections: list[int] = []

    def goaway_then_reply(peer: Peer) -> None:
        connections.append(1)
        peer.handshake()
        stream, _, body = peer.request()
        peer.send(http2.GOAWAY, 0, 0, struct.pack(">II", stream, 0))
        peer.reply(stream, body)
        with suppress(EOFError):
            peer.frame()

    with scripted(goaway_then_reply) as (port, failures):
        t = transport(port)
        assert [call(t, b"a"), call(t, b"b")] == [b"a", b"b"]
    assert not failures and len(connections) == 2


def test_a_trailers_only_reply_with_a_pushback_is_read_as_grpc_clients_read_it() -> None:
    def throttled(peer: Peer) -> None:
        peer.handshake()
        stream, _, _ = peer.request()
        fields = [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", "8"),
                  ("grpc-message", f"quota%20for%20{KEY}"), ("grpc-retry-pushback-ms", "250")]  # fmt: skip
        peer.send(http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, stream, peer.encoder.encode(fields))

    with (
        scripted(throttled) as (port, failures),
        pytest.raises(Throttled, match="RESOURCE_EXHAUSTED: quota for") as raised,
    ):
        call(transport(port), b"x")
    assert raised.value.retry_after_s == 0.25 and KEY not in str(raised.value) and not failures


def test_headers_in_continuations_with_padding_priority_and_huffman_are_read() -> None:
    def awkward(peer: Peer) -> None:
        peer.handshake()
        stream, _, body = peer.request()
        block = peer.encoder.encode(
            [(":status", "200"), ("content-type", "application/grpc"), ("x-long", "v" * 3000)], huffman=True
        )
        padded = (
            bytes((4,)) + struct.pack(">IB", 0, 16) + block[:10] + b"\0" * 4
        )  # pad length, priority, fragment, padding
        peer.send(http2.HEADERS, http2.PADDED | http2.PRIORITY_FLAG, stream, padded)
        peer.send(http2.CONTINUATION, 0, stream, block[10:500])
        peer.send(http2.CONTINUATION, http2.END_HEADERS, stream, block[500:])
        message = struct.pack(">BI", 0, len(body)) + body
        peer.send(http2.DATA, http2.PADDED, stream, bytes((3,)) + message[:7] + b"\0\0\0")
        peer.send(http2.DATA, 0, stream, message[7:])
        peer.send(http2.PRIORITY, 0, stream, struct.pack(">IB", 0, 1))
        peer.send(0xFA, 0, 0, b"an extension frame nobody knows")
        peer.send(
            http2.HEADERS,
            http2.END_HEADERS | http2.END_STREAM,
            stream,
            peer.encoder.encode([("grpc-status", "0")]),
        )
        with suppress(EOFError):
            peer.frame()

    with scripted(awkward) as (port, failures):
        assert call(transport(port), b"hello, padded world") == b"hello, padded world"
    assert not failures


def test_a_ping_and_settings_before_the_reply_are_acknowledged() -> None:
    acks: list[tuple[int, bytes]] = []

    def pings(peer: Peer) -> None:
        peer.handshake()
        stream, _, body = peer.request()
        peer.send(http2.PING, 0, 0, b"12345678")
        peer.send(http2.SETTINGS, 0, 0, struct.pack(">HI", http2.SETTINGS_MAX_FRAME_SIZE, 20_000))
        peer.reply(stream, body)
        while len(acks) < 2:  # the PING's, the second SETTINGS' (the first's came before the request)
            kind, flags, _, payload = peer.frame()
            if flags & http2.ACK and kind in (http2.PING, http2.SETTINGS):
                acks.append((kind, payload))

    with scripted(pings) as (port, failures):
        assert call(transport(port), b"p") == b"p"
    assert sorted(acks) == [(http2.SETTINGS, b""), (http2.PING, b"12345678")] and not failures


@pytest.mark.parametrize(
    ("misbehaviour", "error", "match"),
    [
        ("oversized frame", TransportError, "beyond the 16384"),
        ("compressed reply", Unavailable, "compressed"),
        ("cut mid-reply", TransportError, "connection lost after the request started to leave"),
        ("proxy 503", Unavailable, "HTTP status 503"),
        ("proxy 404", NotFound, "HTTP status 404"),
        ("no grpc-status", Unavailable, "without a grpc-status"),
        ("bad window update", TransportError, "protocol error"),
        ("push promise", TransportError, "PUSH_PROMISE"),
        ("not grpc", Unavailable, "not a gRPC reply"),
    ],
)
def test_a_server_that_misbehaves_gives_the_connectors_error(
    misbehaviour: str, error: type[Exception], match: str
) -> None:
    def script(peer: Peer) -> None:
        peer.handshake()
        stream, _, _ = peer.request()
        ok = peer.encoder.encode([(":status", "200"), ("content-type", "application/grpc")])
        if misbehaviour == "oversized frame":
            peer.send(http2.HEADERS, http2.END_HEADERS, stream, ok)
            peer.send(http2.DATA, 0, stream, b"\0" * 16_385)
        elif misbehaviour == "compressed reply":
            peer.send(http2.HEADERS, http2.END_HEADERS, stream, ok)
            peer.send(http2.DATA, 0, stream, struct.pack(">BI", 1, 3) + b"abc")
            peer.send(
                http2.HEADERS,
                http2.END_HEADERS | http2.END_STREAM,
                stream,
                peer.encoder.encode([("grpc-status", "0")]),
            )
        elif misbehaviour == "cut mid-reply":
            peer.send(http2.HEADERS, http2.END_HEADERS, stream, ok)
            peer.send(http2.DATA, 0, stream, struct.pack(">BI", 0, 100) + b"abc")
            peer.sock.shutdown(socket.SHUT_RDWR)
        elif misbehaviour.startswith("proxy"):
            status = misbehaviour.split()[1]
            page = peer.encoder.encode([(":status", status), ("content-type", "text/html")])
            peer.send(http2.HEADERS, http2.END_HEADERS, stream, page)
            peer.send(http2.DATA, http2.END_STREAM, stream, b"<html>no</html>")
        elif misbehaviour == "no grpc-status":
            peer.send(http2.HEADERS, http2.END_HEADERS, stream, ok)
            peer.send(http2.DATA, 0, stream, struct.pack(">BI", 0, 0))
            peer.send(
                http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, stream, peer.encoder.encode([("x", "y")])
            )
        elif misbehaviour == "bad window update":
            peer.send(http2.WINDOW_UPDATE, 0, 0, struct.pack(">I", 0x7FFFFFFF))
        elif misbehaviour == "push promise":
            peer.send(http2.PUSH_PROMISE, http2.END_HEADERS, stream, struct.pack(">I", 2) + ok)
        elif misbehaviour == "not grpc":
            peer.send(
                http2.HEADERS,
                http2.END_HEADERS | http2.END_STREAM,
                stream,
                peer.encoder.encode([(":status", "200")]),
            )
        with suppress(EOFError, OSError):
            peer.frame()

    with scripted(script) as (port, failures), pytest.raises(error, match=match) as raised:
        call(transport(port), b"x", timeout_s=5)
    assert KEY not in str(raised.value) and not failures


def test_a_server_that_never_answers_is_a_deadline_not_a_hang() -> None:
    def silent(peer: Peer) -> None:
        peer.handshake()
        peer.request()
        time.sleep(3)

    with scripted(silent) as (port, _):
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match=r"no reply within 0\.5 s"):
            call(transport(port), b"x", timeout_s=0.5)
        assert time.monotonic() - started < 2


def test_an_early_reply_stops_the_request_and_the_connection_is_used_again() -> None:
    connections: list[int] = []

    def early(peer: Peer) -> None:
        connections.append(1)
        peer.handshake({http2.SETTINGS_INITIAL_WINDOW_SIZE: 1000})
        for _ in range(2):
            kind, _, stream, _ = peer.frame()
            while kind != http2.HEADERS:
                kind, _, stream, _ = peer.frame()
            fields = [
                (":status", "200"),
                ("content-type", "application/grpc"),
                ("grpc-status", "3"),
                ("grpc-message", "too big"),
            ]
            peer.send(
                http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, stream, peer.encoder.encode(fields)
            )
            kind, _, sid, payload = peer.frame()
            while kind != http2.RST_STREAM:
                kind, _, sid, payload = peer.frame()
            assert sid == stream and struct.unpack(">I", payload)[0] == http2.CANCEL_CODE

    with scripted(early) as (port, failures):
        t = transport(port)
        for _ in range(2):
            with pytest.raises(Rejected, match="INVALID_ARGUMENT: too big"):
                call(t, b"x" * 50_000)
    assert not failures and len(connections) == 1


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.binary(max_size=60_000), st.lists(st.integers(1, 20_000), min_size=1, max_size=12), st.integers(1, 4)
)
def test_a_reply_split_into_any_frames_and_segments_reads_back_whole(
    message: bytes, cuts: list[int], calls: int
) -> None:
    def split(peer: Peer) -> None:
        peer.handshake()
        for _ in range(calls):
            stream, _, _ = peer.request()
            out = bytearray()
            ok = peer.encoder.encode([(":status", "200"), ("content-type", "application/grpc")])
            out += (
                len(ok).to_bytes(3, "big")
                + bytes((http2.HEADERS, http2.END_HEADERS))
                + stream.to_bytes(4, "big")
                + ok
            )
            data, at = struct.pack(">BI", 0, len(message)) + message, 0
            for size in [*cuts, len(data)]:
                piece, at = data[at : at + min(size, 16_384)], at + min(size, 16_384)
                if piece:
                    out += (
                        len(piece).to_bytes(3, "big")
                        + bytes((http2.DATA, 0))
                        + stream.to_bytes(4, "big")
                        + piece
                    )
                if at >= len(data):
                    break
            while at < len(data):
                piece, at = data[at : at + 16_384], at + 16_384
                out += (
                    len(piece).to_bytes(3, "big") + bytes((http2.DATA, 0)) + stream.to_bytes(4, "big") + piece
                )
            end = peer.encoder.encode([("grpc-status", "0")])
            out += len(end).to_bytes(3, "big") + bytes((http2.HEADERS, 5)) + stream.to_bytes(4, "big") + end
            at = 0
            for size in cuts:  # TCP segments cut elsewhere than frames
                peer.sock.sendall(out[at : at + size])
                at += size
            peer.sock.sendall(out[at:])

    with scripted(split) as (port, failures):
        t = transport(port)
        for _ in range(calls):
            assert call(t, b"q") == message
    assert not failures


def test_an_idle_connection_the_server_closed_is_not_used_and_costs_no_error() -> None:
    connections: list[int] = []

    def one_call(peer: Peer) -> None:
        connections.append(1)
        peer.handshake()
        stream, _, body = peer.request()
        peer.reply(stream, body)
        peer.send(http2.GOAWAY, 0, 0, struct.pack(">II", stream, 0))  # then the server closes it

    with scripted(one_call) as (port, failures):
        t = transport(port)
        assert call(t, b"1") == b"1"
        time.sleep(0.2)
        assert call(t, b"2") == b"2"
    assert not failures and len(connections) == 2


def test_the_status_table_knows_every_grpc_status_code() -> None:
    assert [code.name for code in sorted(grpc.StatusCode, key=lambda c: c.value[0])] == http2.STATUS_NAMES
    assert {AuthError, Throttled} <= set(ERROR_BY_STATUS.values())


# --------------------------------------------------------------------------------------------------
# what an adversarial review of the first version found, each a case here


def literal(name: str, value: str, first: int = 0x00) -> bytes:
    """An HPACK literal (``0x40``: with incremental indexing, added to the table), built by hand."""
    raw_name, raw_value = name.encode(), value.encode()
    return (
        bytes((first,))
        + http2._integer(len(raw_name), 7, 0)
        + raw_name
        + http2._integer(len(raw_value), 7, 0)
        + raw_value
    )


def test_a_trailer_indexed_after_the_table_was_reset_is_read_fresh_not_from_the_blocks_kept() -> None:
    """The dynamic table emptied (size 0) and refilled with an entry of the same size: index 62 now says
    grpc-status 9, which a block kept from before would read as 0: FAILED_PRECONDITION as OK."""
    head = b"\x88" + literal("content-type", "application/grpc")
    reset = http2._integer(0, 5, 0x20) + http2._integer(4096, 5, 0x20)
    plan = [
        (head, literal("grpc-status", "0", 0x40)),  # the table: [grpc-status 0]
        (head, b"\xbe"),  # index 62: grpc-status 0 (a block kept)
        (reset + literal("grpc-status", "9", 0x40) + head, b"\xbe"),  # index 62: grpc-status 9
    ]

    def script(peer: Peer) -> None:
        peer.handshake()
        for head_block, trailers in plan:
            stream, _, body = peer.request()
            peer.send(http2.HEADERS, http2.END_HEADERS, stream, head_block)
            peer.send(http2.DATA, 0, stream, struct.pack(">BI", 0, len(body)) + body)
            peer.send(http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, stream, trailers)
        with suppress(EOFError):
            peer.frame()

    with scripted(script) as (port, failures):
        t = transport(port)
        assert [call(t, b"a"), call(t, b"b")] == [b"a", b"b"]
        with pytest.raises(Rejected, match="FAILED_PRECONDITION"):
            call(t, b"c")
    assert not failures


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0x00, 0x10, 0x40, 0x80, 0x20]), st.integers(0, 70), st.text(max_size=140)),
        max_size=8,
    )
)
def test_whether_a_block_can_change_the_table_is_read_as_hpack_defines_it(
    fields: list[tuple[int, int, str]],
) -> None:
    block, changes = b"", False
    for kind, index, text in fields:
        if kind == 0x80:
            block += http2._integer(index + 1, 7, 0x80)
        elif kind == 0x20:
            block += http2._integer(index, 5, 0x20)
            changes = True
        else:
            block += (
                literal(text or "x", text, kind)
                if index % 2
                else http2._integer(index % 15 + 1, 4 if kind != 0x40 else 6, kind)
                + http2._integer(len(text.encode()), 7, 0)
                + text.encode()
            )
            changes = changes or kind == 0x40
    assert http2._changes_table(block) is changes


def test_a_status_in_digits_of_another_script_is_unknown_not_a_crash() -> None:
    def script(peer: Peer) -> None:
        peer.handshake()
        for fields in (
            [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", "²")],
            [(":status", "¹")],
        ):
            stream, _, _ = peer.request()
            block = b"".join(
                literal(n, "")[:-1] + http2._integer(len(v.encode("latin-1")), 7, 0) + v.encode("latin-1")
                for n, v in fields
            )
            peer.send(http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, stream, block)
        with suppress(EOFError):
            peer.frame()

    with scripted(script) as (port, failures):
        t = transport(port)
        for _ in range(2):
            with pytest.raises(Unavailable, match="UNKNOWN"):
                call(t, b"x")
    assert not failures


def test_a_server_reading_slowly_cannot_hold_a_send_beyond_the_timeout() -> None:
    def slow(peer: Peer) -> None:
        peer.handshake(
            {http2.SETTINGS_INITIAL_WINDOW_SIZE: (1 << 31) - 1, http2.SETTINGS_MAX_FRAME_SIZE: (1 << 24) - 1}
        )
        peer.send(http2.WINDOW_UPDATE, 0, 0, struct.pack(">I", (1 << 31) - 1 - 65_535))
        while peer.sock.recv(16_384):
            time.sleep(0.005)

    with scripted(slow) as (port, _):
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            call(transport(port), b"\0" * (20 << 20), timeout_s=1.0)
        assert time.monotonic() - started < 1.5


def test_a_goaway_that_came_with_the_last_reply_sends_the_next_call_to_a_new_connection() -> None:
    connections: list[int] = []

    def drain(peer: Peer) -> None:
        connections.append(1)
        peer.handshake()
        stream, _, body = peer.request()
        ok = peer.encoder.encode([(":status", "200"), ("content-type", "application/grpc")])
        end = peer.encoder.encode([("grpc-status", "0")])
        frames = [(http2.HEADERS, http2.END_HEADERS, stream, ok), (http2.DATA, 0, stream, struct.pack(">BI", 0, len(body)) + body),
                  (http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, stream, end), (http2.GOAWAY, 0, 0, struct.pack(">II", stream, 0))]  # fmt: skip
        peer.sock.sendall(
            b"".join(
                len(p).to_bytes(3, "big") + bytes((k, f)) + s.to_bytes(4, "big") + p for k, f, s, p in frames
            )
        )
        time.sleep(1)  # draining: the connection stays open a while

    with scripted(drain) as (port, failures):
        t = transport(port)
        assert [call(t, b"1"), call(t, b"2")] == [b"1", b"2"]
    assert not failures and len(connections) == 2


def test_an_unfinished_header_block_on_an_idle_connection_costs_a_new_connection_not_the_timeout() -> None:
    def late_block(peer: Peer) -> None:
        peer.handshake()
        stream, _, body = peer.request()
        peer.reply(stream, body)
        peer.send(http2.HEADERS, 0, stream, peer.encoder.encode([("x-late", "1")]))  # no END_HEADERS, ever
        with suppress(EOFError, OSError):
            stream, _, body = peer.request()  # (a second connection's script answers the next call)
            peer.reply(stream, body)
        time.sleep(2)

    with scripted(late_block) as (port, failures):
        t = transport(port)
        assert call(t, b"1") == b"1"
        time.sleep(0.2)
        started = time.monotonic()
        assert call(t, b"2", timeout_s=1.0) == b"2"
        assert time.monotonic() - started < 0.5
    assert not failures


def test_a_server_that_does_not_speak_http2_is_a_connect_error_and_its_socket_is_closed() -> None:
    def http1(peer: Peer) -> None:
        peer.exactly(24)
        peer.sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        time.sleep(1)

    with scripted(http1) as (port, _):
        t = transport(port)
        with pytest.raises(ConnectError, match="cannot connect: HTTP/2 settings exchange"):
            call(t, b"x", timeout_s=2)
        assert not t._pool._conns


def test_hpack_stays_silent_after_the_application_configures_logging(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging.config

    def echo_key(peer: Peer) -> None:
        peer.handshake()
        for _ in range(2):
            stream, _, _ = peer.request()
            fields = [
                (":status", "200"),
                ("content-type", "application/grpc"),
                ("grpc-status", "16"),
                ("grpc-message", f"bad key {KEY}"),
            ]
            peer.send(
                http2.HEADERS,
                http2.END_HEADERS | http2.END_STREAM,
                stream,
                b"".join(literal(n, v, 0x40) for n, v in fields),
            )
        with suppress(EOFError):
            peer.frame()

    with scripted(echo_key) as (port, failures):
        t = transport(port)
        for round_ in range(2):
            with pytest.raises(AuthError) as raised:
                call(t, b"x")
            assert KEY not in str(raised.value)
            if round_ == 0:
                caplog.set_level(logging.DEBUG)  # first: caplog restores the root's level it finds, not DEBUG
                logging.config.dictConfig(
                    {"version": 1, "disable_existing_loggers": False, "root": {"level": "DEBUG"}}
                )
                logging.getLogger().addHandler(
                    caplog.handler
                )  # dictConfig removed the root's, the capture's too
    logging.getLogger("tests.probe").debug("probe")  # the capture still sees DEBUG records after dictConfig
    assert [r for r in caplog.records if r.getMessage() == "probe"], "the check below would check nothing"
    assert not [r for r in caplog.records if KEY in r.getMessage()] and not failures


def test_a_forked_child_opens_its_own_connection_and_gets_its_own_reply() -> None:
    import multiprocessing

    connections: list[int] = []

    def echo_all(peer: Peer) -> None:
        connections.append(1)
        peer.handshake()
        while True:
            stream, _, body = peer.request()
            time.sleep(0.05)  # so that a parent and a child sharing a connection would cross replies
            peer.reply(stream, body)

    def child(port: int, out: Any) -> None:
        out.send(call(transport(port), b"child"))

    with scripted(echo_all) as (port, failures):
        t = transport(port)
        assert call(t, b"parent-0") == b"parent-0"
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=child, args=(port, sender))
        process.start()
        assert call(t, b"parent-1") == b"parent-1"
        assert receiver.recv() == b"child"
        process.join(10)
        assert process.exitcode == 0
    assert not failures and len(connections) == 2


def test_a_request_beyond_the_message_limit_is_refused_before_it_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vectordb.connector.transports import grpc as grpc_transport

    monkeypatch.setattr(grpc_transport, "MAX_SEND_BYTES", 10)
    with pytest.raises(Rejected, match="a request of 11 bytes"):
        call(transport(1), b"x" * 11)


def test_a_failed_call_leaves_no_cycle_holding_its_request() -> None:
    import gc
    import weakref

    def refuse(peer: Peer) -> None:
        peer.handshake()
        stream, _, _ = peer.request()
        fields = [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", "3")]
        peer.send(http2.HEADERS, http2.END_HEADERS | http2.END_STREAM, stream, peer.encoder.encode(fields))
        with suppress(EOFError):
            peer.frame()

    class Batch:
        """What a backend builds a request with (``WireRequest.context``): rows, in a real write."""

    with scripted(refuse) as (port, _):
        batch = Batch()
        alive = weakref.ref(batch)
        gc.disable()
        try:
            with pytest.raises(Rejected):
                transport(port).send(WireRequest(METHOD, b"x", context=batch), timeout_s=5)
            del batch
            assert alive() is None
        finally:
            gc.enable()


def test_a_proxy_the_environment_names_carries_the_calls_through_a_tunnel_unless_the_host_is_exempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with grpc_server(echo) as port, connect_proxy() as (proxy_port, heads):
        monkeypatch.setenv("https_proxy", f"http://user:pa%3Ass@127.0.0.1:{proxy_port}")
        assert call(transport(port), b"via the proxy") == b"via the proxy"[::-1]
        assert len(heads) == 1 and heads[0].startswith(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n")
        assert "Proxy-Authorization: Basic dXNlcjpwYTpzcw==" in heads[0]  # user:pa:ss
        forget_shared()
        monkeypatch.setenv("no_proxy", "localhost, 127.0.0.1")
        assert call(transport(port), b"around it") == b"around it"[::-1]
        assert len(heads) == 1
        forget_shared()
        monkeypatch.setenv("no_grpc_proxy", "example.com")  # grpc's own list comes first
        monkeypatch.setenv("grpc_proxy", f"127.0.0.1:{proxy_port}")
        assert call(transport(port), b"again") == b"again"[::-1]
        assert len(heads) == 2


def test_a_proxy_that_refuses_the_tunnel_is_a_connect_error_naming_it_without_its_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with connect_proxy(refuse=True) as (proxy_port, heads):
        monkeypatch.setenv("https_proxy", f"http://user:{KEY}@127.0.0.1:{proxy_port}")
        with pytest.raises(
            ConnectError,
            match=f"through the proxy 127.0.0.1:{proxy_port}: the proxy refused the tunnel: HTTP/1.1 407",
        ) as raised:
            call(transport(1234), b"x", timeout_s=2)
        assert KEY not in str(raised.value) and len(heads) == 1


@pytest.mark.parametrize(
    ("host", "exempt", "expected"),
    [
        ("db.example.com", "example.com", True),
        ("db.example.com", ".example.com", True),
        ("example.com", "example.com", True),
        ("badexample.com", "example.com", False),
        ("10.0.0.1", "*", True),
        ("10.0.0.1", "10.0.0.1:6334", True),
        ("10.0.0.1", "", False),
        ("::1", "[::1]", True),
        ("10.1.2.3", "example.com, 10.0.0.0/8", True),
        ("10.1.2.3", "192.168.0.0/16", False),
        ("db.internal", "10.0.0.0/8", False),
        ("fd00::5", "fd00::/8", True),
    ],
)
def test_no_proxy_lists_exempt_hosts_and_their_domains(host: str, exempt: str, expected: bool) -> None:
    assert http2._exempt(host, exempt) is expected


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"https_proxy": "http://proxy.corp:3128"}, ("proxy.corp", 3128)),
        ({"grpc_proxy": "", "https_proxy": "http://proxy.corp:3128"}, None),  # set but empty: no proxy
        ({"https_proxy": "https://u:p@proxy.corp"}, None),  # not http://: grpc connects directly
        ({"http_proxy": "socks5h://127.0.0.1:1080"}, None),
        ({"HTTPS_PROXY": "http://proxy.corp:3128"}, None),  # upper case: not grpc's
        ({"http_proxy": "proxy.corp"}, ("proxy.corp", 80)),
        (
            {"http_proxy": "http://proxy.corp:3128", "no_grpc_proxy": "", "no_proxy": "db.example"},
            ("proxy.corp", 3128),
        ),
        ({"http_proxy": "http://proxy.corp:3128", "no_proxy": "db.example"}, None),
    ],
)
def test_the_proxy_is_chosen_as_grpc_chooses_it(
    env: dict[str, str], expected: tuple[str, int] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("grpc_proxy", "https_proxy", "http_proxy", "no_grpc_proxy", "no_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    proxy = http2.proxy_for("db.example")
    assert (None if proxy is None else (proxy.host, proxy.port)) == expected


def test_a_ping_while_idle_is_answered_and_the_connection_kept() -> None:
    connections: list[int] = []

    def ping_after_each_reply(peer: Peer) -> None:
        connections.append(1)
        peer.handshake()
        while True:
            stream, _, body = peer.request()
            peer.reply(stream, body)
            peer.send(http2.PING, 0, 0, b"keepaliv")

    with scripted(ping_after_each_reply) as (port, failures):
        t = transport(port)
        for i in range(3):
            assert call(t, b"%d" % i) == b"%d" % i
            time.sleep(0.1)
    assert not failures and len(connections) == 1
