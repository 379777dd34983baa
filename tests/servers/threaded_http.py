"""A ``ThreadingHTTPServer`` on 127.0.0.1 run in a daemon thread, for the project's REST test servers.

It tracks its keep-alive connections so ``stop`` ends them at once (a keep-alive thread blocked on its
socket would otherwise outlive the server), and keeps quiet about clients that go away.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["JsonHandler", "ThreadedServer", "TrackingHTTPServer"]


class JsonHandler(BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1, replies with a length, and no line per request in the test output."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    timeout = 300  # idle keep-alive connections close after this

    def _reply(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: one line per request would flood the test output."""


class TrackingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # many clients connecting at once

    def __init__(self, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Wake every keep-alive thread blocked on its socket: it reads EOF, then closes the socket."""
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client going away is no news
            super().handle_error(request, client_address)


class ThreadedServer:
    """Serves ``httpd`` in a daemon thread from ``start`` to ``stop`` (or as a context manager)."""

    def __init__(self, httpd: TrackingHTTPServer, thread_name: str) -> None:
        self._httpd = httpd
        self.port: int = httpd.server_address[1]
        self._thread_name = f"{thread_name}-{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=self._thread_name,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.close_connections()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
