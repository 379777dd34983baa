"""Network helpers for tests: a port that never answers, a port that refuses, a server coming up, a
CONNECT proxy."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import httpx

__all__ = ["answers_200", "closed_port", "connect_proxy", "full_listener", "silent_listener"]


@contextlib.contextmanager
def full_listener(port: int = 0) -> Iterator[int]:
    """A listener on ``port`` (0: any) whose accept queue is full and never drained: the kernel drops new
    SYNs, so a connect gets no answer at all and times out, as to a host frozen or gone behind a firewall
    that drops packets; yields the port."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(0)
    port = listener.getsockname()[1]
    queued: list[socket.socket] = []
    try:
        while True:  # fill the queue until a connect gets no answer
            sock = socket.socket()
            sock.settimeout(0.3)
            try:
                sock.connect(("127.0.0.1", port))
            except OSError:
                sock.close()
                break
            queued.append(sock)
        yield port
    finally:
        for sock in queued:
            sock.close()
        listener.close()


@contextlib.contextmanager
def silent_listener() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never answers (a PostgreSQL client's startup
    message, an HTTP request and a gRPC handshake alike go unanswered); yields the port."""
    server = _unanswered_socket()
    server.listen(64)
    server.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, name="silent-listener", daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def closed_port() -> int:
    """A port nothing listens on: connecting is refused (never one that answered before: ``_unanswered_socket``)."""
    with _unanswered_socket() as probe:
        return int(probe.getsockname()[1])


def _unanswered_socket() -> socket.socket:
    """A socket bound to a port on 127.0.0.1 that no server of an earlier test in this process answered
    on: the connector remembers, per process, the addresses that have answered (``transports.base.Host``),
    and waits for one that refuses or stays silent as for a server restarting."""
    from vectordb.connector.transports.base import host_of

    while True:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        if not host_of(f"127.0.0.1:{sock.getsockname()[1]}").answered:
            return sock
        sock.close()


def answers_200(proc: subprocess.Popen[bytes], url: str, timeout_s: float) -> bool | None:
    """Poll ``url`` until it answers 200 (``True``); ``False`` if ``proc`` exited first (a port was
    taken), ``None`` when ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            try:
                if client.get(url).status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    return None


@contextlib.contextmanager
def connect_proxy(*, refuse: bool = False, to_port: int | None = None) -> Iterator[tuple[int, list[str]]]:
    """An HTTP proxy on 127.0.0.1 that opens tunnels (``CONNECT``) and relays their bytes both ways; yields
    its port and the heads of the requests it was sent. ``to_port``: every tunnel leads to 127.0.0.1 on
    that port, whatever host it names (an index host such as ``namespace-…svc.pinecone.io`` then reaches
    a test server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    heads: list[str] = []
    stop = threading.Event()

    def relay(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65_536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def serve(client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                head += client.recv(4096)
            text = head.decode("latin-1")
            heads.append(text)
            if refuse:
                client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                return
            host, _, port = text.split(" ")[1].rpartition(":")
            where = ("127.0.0.1", to_port) if to_port is not None else (host.strip("[]"), int(port))
            with socket.create_connection(where) as upstream:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                back = threading.Thread(target=relay, args=(upstream, client), daemon=True)
                back.start()
                relay(client, upstream)
                back.join(5)

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(client,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], heads
    finally:
        stop.set()
        thread.join()
        listener.close()
