"""``http1.ConnectionPool``, the HTTP/1.1 client under every REST request: replies framed every way and split
anywhere read back whole, cut ones are errors, connections are reused only when both sides allow it, a
server's idle close costs no error, and failures are the connector's errors with no key in them."""

from __future__ import annotations

import datetime
import hashlib
import itertools
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vectordb.connector.errors import ConnectError, DeadlineExceeded, TransportError
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports import http1
from vectordb.connector.transports.http1 import ConnectionPool, request_head

KEY = "k-live-5ecret"
SECRETS = Secrets(KEY)
Script = Callable[[socket.socket], None]


class Pieces:
    """A socket that gives back ``pieces`` of a reply, one a ``recv``, as a network might split them."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    def recv(self, n: int) -> bytes:
        if not self.pieces:
            return b""
        piece = self.pieces.pop(0)
        if len(piece) > n:
            piece, rest = piece[:n], piece[n:]
            self.pieces.insert(0, rest)
        return piece

    def settimeout(self, timeout_s: float) -> None:
        pass


def read(pieces: list[bytes], verb: str = "POST") -> tuple[http1.Reply, bool]:
    return http1._Reader(Pieces(pieces), time.monotonic() + 60).reply(verb)  # type: ignore[arg-type]


def reply_bytes(status: int, body: bytes, framing: str, chunk_sizes: list[int], interim: bool) -> bytes:
    head = b"HTTP/1.1 100 Continue\r\n\r\n" if interim else b""
    head += b"HTTP/1.1 %d Whatever\r\nX-Served-By: test\r\nretry-after: 2\r\n" % status
    if framing == "length":
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    if framing == "close":
        return head + b"Connection: close\r\n\r\n" + body
    out, at = [head + b"Transfer-Encoding: chunked\r\n\r\n"], 0
    for size in [*chunk_sizes, len(body)]:
        piece = body[at : at + size]
        if piece:
            out.append(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
        at += len(piece)
    out.append(b"0\r\nX-Trailer: t\r\n\r\n")
    return b"".join(out)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


replies = st.tuples(
    st.sampled_from([200, 201, 400, 404, 429, 503]),
    st.binary(max_size=3000),
    st.sampled_from(["length", "chunked", "close"]),
    st.lists(st.integers(1, 700), max_size=6),
    st.booleans(),
    st.lists(st.integers(0, 10_000), max_size=12),
)


@given(replies)
@settings(max_examples=300, deadline=None)
def test_a_reply_framed_any_way_and_split_anywhere_reads_back_whole(case: tuple) -> None:  # type: ignore[type-arg]
    status, body, framing, chunk_sizes, interim, cuts = case
    data = reply_bytes(status, body, framing, chunk_sizes, interim)
    reply, keep = read(split(data, cuts))
    assert (reply.status, reply.body) == (status, body)
    assert reply.headers["x-served-by"] == "test" and reply.headers["retry-after"] == "2"
    assert keep == (framing != "close"), "reused only when the reply's end is known and neither side closes"


@given(replies, st.data())
@settings(max_examples=300, deadline=None)
def test_a_reply_cut_short_is_an_error_never_a_short_body(case: tuple, data: st.DataObject) -> None:  # type: ignore[type-arg]
    status, body, framing, chunk_sizes, interim, cuts = case
    whole = reply_bytes(status, body, framing, chunk_sizes, interim)
    if framing == "close":
        return  # the connection's end is the reply's end: nothing can tell a cut from the end
    cut = data.draw(st.integers(0, len(whole) - 1))
    with pytest.raises(TransportError) as caught:
        read(split(whole[:cut], cuts))
    assert ("without a reply" in str(caught.value)) == (cut == 0)


def test_a_connection_that_ends_after_an_interim_reply_ended_mid_reply() -> None:
    with pytest.raises(TransportError, match="mid-reply"):
        read([b"HTTP/1.1 100 Continue\r\n\r\n"])
    with pytest.raises(TransportError, match="without a reply"):
        read([])


def test_a_reply_to_head_and_a_204_have_no_body_whatever_their_length_says() -> None:
    for verb, data in (
        ("HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"),
        ("POST", b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"),
    ):
        reply, keep = read([data], verb)
        assert (reply.body, keep) == (b"", True)


def test_an_http_1_0_reply_keeps_the_connection_only_when_it_says_keep_alive() -> None:
    for connection, kept in ((b"", False), (b"Connection: keep-alive\r\n", True)):
        data = b"HTTP/1.0 200 OK\r\n%sContent-Length: 2\r\n\r\n{}" % connection
        assert read([data])[1] is kept


def test_a_line_break_in_a_header_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="Api-Key"):
        request_head("POST", "/x", {"Host": "h", "Api-Key": "k\r\nX-Evil: 1"})


# --- against real sockets -------------------------------------------------------------------------------


def read_request(conn: socket.socket) -> bytes | None:
    """One request's body, or None if the client closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return None
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    received = bytearray(body)
    while len(received) < length:
        piece = conn.recv(65536)
        if not piece:
            return None
        received += piece
    return bytes(received)


@contextmanager
def scripted(script: Script) -> Iterator[tuple[int, list[socket.socket]]]:
    """A server on 127.0.0.1 that runs ``script`` on each connection; yields its port and its connections."""
    listener = socket.create_server(("127.0.0.1", 0))
    connections: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            connections.append(conn)
            threading.Thread(target=_run, args=(script, conn), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1], connections
    finally:
        with suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accept: a closed port refuses at once
        listener.close()
        for conn in connections:
            conn.close()


def _run(script: Script, conn: socket.socket) -> None:
    with conn, suppress(OSError):
        script(conn)


def answer_each(reply: bytes, *, close_after: int = 0) -> Script:
    def script(conn: socket.socket) -> None:
        served = 0
        while read_request(conn) is not None:
            conn.sendall(reply)
            served += 1
            if served == close_after:
                conn.close()
                return

    return script


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


def send(pool: ConnectionPool, body: bytes = b"{}", timeout_s: float = 5.0) -> http1.Reply:
    head = request_head("POST", "/vectors/upsert", {"Host": "test", "Api-Key": KEY})
    return pool.request(
        head, body, verb="POST", where="test POST /vectors/upsert", timeout_s=timeout_s, secrets=SECRETS
    )


def test_keep_alive_reuses_one_connection_and_a_close_opens_another() -> None:
    with scripted(answer_each(OK)) as (port, connections):
        pool = ConnectionPool("http", "127.0.0.1", port)
        assert [send(pool).body for _ in range(5)] == [b"{}"] * 5
        assert len(connections) == 1
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    with scripted(answer_each(closing)) as (port, connections):
        pool = ConnectionPool("http", "127.0.0.1", port)
        assert [send(pool).status for _ in range(3)] == [200] * 3
        assert len(connections) == 3


def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error() -> None:
    with scripted(answer_each(OK, close_after=1)) as (port, connections):
        pool = ConnectionPool("http", "127.0.0.1", port)
        send(pool)
        time.sleep(0.2)  # the server's keep-alive timeout: it closes the connection the pool holds
        assert send(pool).status == 200
        assert len(connections) == 2


def test_a_reused_connection_closed_after_the_request_went_out_is_an_error_never_a_second_send() -> None:
    applied: list[bytes] = []

    def apply_then_hang_up(conn: socket.socket) -> None:
        while (got := read_request(conn)) is not None:
            applied.append(got)
            if len(applied) == 2:  # read and applied, then closed without a reply
                conn.close()
                return
            conn.sendall(OK)

    with scripted(apply_then_hang_up) as (port, connections):
        pool = ConnectionPool("http", "127.0.0.1", port)
        send(pool)
        with pytest.raises(TransportError, match="closed the connection without a reply"):
            send(pool)
        assert len(applied) == 2 and len(connections) == 1, "the engine retries it, seeing a failure"


def test_a_server_that_closes_without_a_reply_is_a_transport_error_naming_where() -> None:
    def hang_up(conn: socket.socket) -> None:
        read_request(conn)
        conn.close()

    with (
        scripted(hang_up) as (port, _),
        pytest.raises(TransportError, match="test POST /vectors/upsert: the server closed the connection"),
    ):
        send(ConnectionPool("http", "127.0.0.1", port))


def test_a_reply_cut_mid_body_is_an_error_and_its_connection_is_not_reused() -> None:
    def cut(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"upserted')
        conn.close()

    with scripted(cut) as (port, _):
        pool = ConnectionPool("http", "127.0.0.1", port)
        with pytest.raises(TransportError, match="after 10 of 100 body bytes"):
            send(pool)
        assert pool._idle == [] and pool._conns == set()


def test_a_silent_server_is_a_deadline_and_a_closed_port_a_connect_error() -> None:
    with scripted(lambda conn: (read_request(conn), time.sleep(3))) as (port, _):  # type: ignore[func-returns-value]
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match=r"no reply within 0\.3 s"):
            send(ConnectionPool("http", "127.0.0.1", port), timeout_s=0.3)
        assert time.monotonic() - started < 2
    with pytest.raises(ConnectError, match="cannot connect"):
        send(ConnectionPool("http", "127.0.0.1", port))


def test_a_large_body_reaches_a_slow_reader_whole() -> None:
    body = os.urandom(24 << 20)  # more than the two sockets' buffers hold
    seen: list[str] = []

    def slow(conn: socket.socket) -> None:
        time.sleep(0.3)  # the body fills the socket's buffers: the first send takes only part of it
        got = read_request(conn)
        assert got is not None
        seen.append(hashlib.sha256(got).hexdigest())
        conn.sendall(OK)

    with scripted(slow) as (port, _):
        assert send(ConnectionPool("http", "127.0.0.1", port), body).status == 200
    assert seen == [hashlib.sha256(body).hexdigest()]


def test_a_connection_on_a_descriptor_above_1023_is_reused() -> None:
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1030)]
    try:
        with scripted(answer_each(OK)) as (port, connections):
            pool = ConnectionPool("http", "127.0.0.1", port)
            send(pool)
            assert pool._idle[0].fileno() > 1023
            send(pool)
            assert len(connections) == 1
    finally:
        for fd in held:
            os.close(fd)


def make_ca_and_server_cert(where: Path) -> tuple[Path, Path, Path]:
    """A CA certificate, and a server certificate for 127.0.0.1 and localhost that it signed, with its key."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = (where / "ca.pem", where / "server.pem", where / "server.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


@pytest.fixture
def server_tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    """A server's TLS context, with a certificate of a CA the client trusts (``SSL_CERT_FILE``: the trust
    httpx reads, one trust for both paths)."""
    ca, cert, key = make_ca_and_server_cert(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    return context


def test_tls_to_a_server_the_trusted_ca_signed_works_and_to_one_it_did_not_is_refused(
    server_tls: ssl.SSLContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = os.urandom(1 << 20)
    seen: list[bytes] = []

    def tls(conn: socket.socket) -> None:
        with server_tls.wrap_socket(conn, server_side=True) as wrapped:
            while (got := read_request(wrapped)) is not None:  # type: ignore[arg-type]
                seen.append(got)
                wrapped.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")

    with scripted(tls) as (port, connections):
        pool = ConnectionPool("https", "localhost", port)
        assert [send(pool, b).body for b in (b"{}", body)] == [b"{}", b"{}"]
        assert seen == [b"{}", body] and len(connections) == 1
        monkeypatch.delenv("SSL_CERT_FILE")
        with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            send(ConnectionPool("https", "localhost", port))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=40_000), min_size=1, max_size=24), st.integers(1, 8))
def test_requests_from_many_threads_each_get_their_own_reply(bodies: list[bytes], threads: int) -> None:
    def echo(conn: socket.socket) -> None:
        while (got := read_request(conn)) is not None:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(got), got))

    with scripted(echo) as (port, connections):
        pool = ConnectionPool("http", "127.0.0.1", port)
        results: dict[int, bytes] = {}

        def worker(k: int) -> None:
            for i in range(k, len(bodies), threads):
                results[i] = send(pool, bodies[i]).body

        workers = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert [results[i] for i in range(len(bodies))] == bodies
        assert len(connections) <= threads, "a connection is opened only when none is idle"


@pytest.mark.parametrize(
    "length",
    [b"-2", b"+5", b"0_5", b" 5x", b"9" * 19, b"\xb2", b"5, 5", b"5, 6"],
    ids=["negative", "plus", "underscore", "junk", "beyond-int64", "superscript", "repeated", "disagreeing"],
)
def test_a_content_length_that_is_not_plain_digits_is_an_error_not_a_short_body(length: bytes) -> None:
    data = b'HTTP/1.1 200 OK\r\nContent-Length: %s\r\n\r\n{"ok": true, "n": 5}' % length
    with pytest.raises(TransportError, match="Content-Length is not a length"):
        read([data])


@pytest.mark.parametrize("size", [b"-5", b"0x5", b"+5", b"f" * 16, b"5 5"])
def test_a_chunk_size_that_is_not_plain_hex_is_an_error(size: bytes) -> None:
    data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%s\r\nhello\r\n0\r\n\r\n" % size
    with pytest.raises(TransportError, match="chunk size is not hex"):
        read([data])


def test_a_status_line_with_other_digits_or_a_switch_of_protocols_is_an_error() -> None:
    with pytest.raises(TransportError, match=r"not an HTTP/1\.x reply"):
        read(["HTTP/1.1 2\u00b200 OK\r\n\r\n".encode("latin-1")])
    with pytest.raises(TransportError, match="switched protocols"):
        read([b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"])
    with pytest.raises(TransportError, match="interim"):
        read([b"HTTP/1.1 100 Continue\r\n\r\n" * 40])


def test_a_length_claimed_but_not_sent_reserves_no_memory_for_it() -> None:
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(TransportError, match="after 2 of 800000000 body bytes"):
            read([b"HTTP/1.1 200 OK\r\nContent-Length: 800000000\r\n\r\n{}"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 << 20


def test_framing_the_reply_does_not_state_clearly_is_not_reused() -> None:
    both = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    reply, keep = read([both])
    assert (reply.body, keep) == (b"{}", False)
    gzip_only = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw bytes to the end"
    reply, keep = read([gzip_only])
    assert (reply.body, keep) == (b"raw bytes to the end", False)


@pytest.mark.parametrize(
    ("sent", "says"),
    [
        (f"XTTP/9 200 {KEY}\r\n\r\n", "not an HTTP/1.x reply"),
        (f"HTTP/1.1 200 OK\r\n{'x' * 60}{KEY * 3}\r\n\r\n", "header without a colon"),  # long: cut after
    ],
    ids=["status-line", "long-header-line"],
)
def test_what_a_broken_server_sends_back_reaches_no_message_with_any_of_the_key(sent: str, says: str) -> None:
    def garbage(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(sent.encode())

    with scripted(garbage) as (port, _), pytest.raises(TransportError) as caught:
        send(ConnectionPool("http", "127.0.0.1", port))
    message = str(caught.value)
    assert says in message
    assert not any(KEY[:k] in message for k in range(6, len(KEY) + 1)), message


def test_a_reply_that_drips_is_cut_at_the_timeout_not_at_its_pace() -> None:
    def drip(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
        for _ in range(100):
            conn.sendall(b"x")
            time.sleep(0.1)

    with scripted(drip) as (port, _):
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            send(ConnectionPool("http", "127.0.0.1", port), timeout_s=0.5)
        assert time.monotonic() - started < 1.5


def test_a_header_that_cannot_travel_is_a_config_error_naming_it_not_its_value() -> None:
    from vectordb.connector.errors import ConfigError

    for value in ("k\r\nX-Evil: 1", "key\u200bwith-a-zero-width-space", "k\0"):
        with pytest.raises(ConfigError, match="Api-Key") as caught:
            request_head("POST", "/x", {"Host": "h", "Api-Key": value})
        assert value not in repr(caught.value) and caught.value.__context__ is None


def test_a_refusal_sent_before_the_body_was_read_reaches_the_caller_over_tls_too(
    server_tls: ssl.SSLContext,
) -> None:
    too_large = b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\nConnection: close\r\n\r\ntoo large"

    def refuse_early(conn: socket.socket) -> None:
        with server_tls.wrap_socket(conn, server_side=True) as wrapped:
            data = b""
            while b"\r\n\r\n" not in data:
                data += wrapped.recv(65536)
            wrapped.sendall(too_large)
            time.sleep(0.5)  # then closed with the body unread: the client's send fails (a reset)

    for scheme, script in (("https", refuse_early), ("http", answer_each(too_large, close_after=1))):
        with scripted(script) as (port, _):
            reply = send(ConnectionPool(scheme, "localhost", port), os.urandom(8 << 20))
        assert (reply.status, reply.body) == (413, b"too large"), scheme
