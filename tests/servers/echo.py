"""Servers that refuse every request and quote the credentials it carried, as servers that echo keys do.

For the redaction tests (tests/e2e/test_secrets.py), where the database's own server does not echo
a key (Weaviate, Chroma, Milvus, PostgreSQL): each fake speaks just enough of one protocol to refuse,
on 127.0.0.1, and quotes what the request carried in every place a reply has text.

- ``EchoHttpServer(status)``: every request, whatever its path, is answered ``status`` with the
  values of its credential headers (``api-key``, ``authorization``, ``x-chroma-token``) in a JSON body
  (``message`` and ``error``, the fields each database's errors use) or, with ``page=True``, in an
  HTML error page, and in the reply header ``x-echo-api-key``.
- ``EchoGrpcServer(code)``: every unary call, whatever its method, is aborted with ``code``, the call's
  credential metadata (``api-key``, ``authorization``, and a base64 one decoded, as Milvus sends its
  token) quoted in the status details and in the trailing metadata ``x-echo-api-key``. With
  ``milvus_status`` set instead, every call succeeds with a Milvus ``common.Status`` of that code
  whose reason quotes them (every Milvus reply holds its status in field 1).
- ``EchoPostgresServer()``: asks each connection for a cleartext password and answers it with
  ``FATAL 28P01`` quoting the password it got.

``seen`` holds what was quoted, so a test can check the secret really went out and came back.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import socket
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Self

import grpc
import orjson

from vectordb.connector import protowire as pw

from .script import ECHO_HEADER
from .threaded_http import JsonHandler, ThreadedServer, TrackingHTTPServer

__all__ = ["EchoGrpcServer", "EchoHttpServer", "EchoPostgresServer"]

CREDENTIAL_HEADERS = ("api-key", "authorization", "x-chroma-token")


def _quoted(values: list[str]) -> str:
    """The credentials as an echoing server quotes them; a base64 value also decoded."""
    shown = list(values)
    for value in values:
        with contextlib.suppress(binascii.Error, UnicodeDecodeError, ValueError):
            shown.append(base64.b64decode(value, validate=True).decode())
    return ", ".join(shown) or "none"


class _EchoHandler(JsonHandler):
    server_version = "echo-test"
    server: _EchoHttpd

    def _refuse(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        values = [v for name in CREDENTIAL_HEADERS for v in self.headers.get_all(name) or ()]
        quoted = _quoted(values)
        self.server.seen.append(quoted)
        message = f"invalid credentials for {self.command} {self.path}: {quoted}"
        extra = {ECHO_HEADER: quoted}
        if self.server.page:
            page = f"<html><body><h1>{self.server.status}</h1><p>{message}</p></body></html>"
            self._reply(self.server.status, page.encode(), "text/html", extra)
        else:
            body = orjson.dumps({"message": message, "error": message, "code": self.server.status})
            self._reply(self.server.status, body, extra=extra)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _refuse


class _EchoHttpd(TrackingHTTPServer):
    def __init__(self, status: int, page: bool) -> None:
        self.status, self.page = status, page
        self.seen: list[str] = []
        super().__init__(0, _EchoHandler)


class EchoHttpServer(ThreadedServer):
    """Answers every request ``status``, quoting its credential headers (see the module docstring)."""

    def __init__(self, status: int, *, page: bool = False) -> None:
        self._echo = _EchoHttpd(status, page)
        super().__init__(self._echo, "echo-http")

    @property
    def seen(self) -> list[str]:
        return self._echo.seen


class _AnyMethod(grpc.GenericRpcHandler):
    def __init__(self, server: EchoGrpcServer) -> None:
        self._server = server

    def service(self, handler_call_details: Any) -> Any:
        return grpc.unary_unary_rpc_method_handler(self._server.call)  # raw bytes in and out


class EchoGrpcServer:
    """Refuses every call with ``code`` (or answers a Milvus status), quoting its credential metadata."""

    def __init__(self, code: grpc.StatusCode = grpc.StatusCode.UNAUTHENTICATED, *, milvus_status: int = 0):
        self.code, self.milvus_status = code, milvus_status
        self.seen: list[str] = []
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="echo-grpc")
        self._server = grpc.server(self._executor, handlers=[_AnyMethod(self)])
        self.port: int = self._server.add_insecure_port("127.0.0.1:0")

    def call(self, body: bytes, context: grpc.ServicerContext) -> bytes:
        metadata = context.invocation_metadata()
        values = [m.value for m in metadata if m.key in CREDENTIAL_HEADERS and isinstance(m.value, str)]
        quoted = _quoted(values)
        self.seen.append(quoted)
        message = f"invalid credentials: {quoted}"
        if self.milvus_status:  # common.Status{code 3, reason 2}, as field 1 of any Milvus reply
            status = pw.varint_field(3, self.milvus_status) + pw.string_field(2, message)
            return pw.len_field(1, status)
        context.set_trailing_metadata(((ECHO_HEADER, quoted),))
        context.abort(self.code, message)
        raise AssertionError("unreachable: abort raises")

    def __enter__(self) -> Self:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None).wait()
        self._executor.shutdown(wait=True)


class EchoPostgresServer:
    """A PostgreSQL server that takes a cleartext password and refuses it, quoting it (FATAL 28P01)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self.seen: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="echo-postgres", daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            with conn, contextlib.suppress(OSError, ValueError):
                conn.settimeout(5)
                self._refuse(conn)

    def _refuse(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        while True:  # SSLRequest / GSSENCRequest first: "N", then the StartupMessage
            (length,) = struct.unpack("!I", reader.read(4))
            payload = reader.read(length - 4)
            if struct.unpack("!I", payload[:4])[0] not in (80877103, 80877104):
                break
            conn.sendall(b"N")
        conn.sendall(b"R" + struct.pack("!II", 8, 3))  # AuthenticationCleartextPassword
        kind, (length,) = reader.read(1), struct.unpack("!I", reader.read(4))
        password = reader.read(length - 4).rstrip(b"\0").decode() if kind == b"p" else ""
        self.seen.append(password)
        message = f'password authentication failed: "{password}" is not the password'.encode()
        fields = b"SFATAL\0VFATAL\0C28P01\0M" + message + b"\0\0"
        conn.sendall(b"E" + struct.pack("!I", len(fields) + 4) + fields)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._listener.close()
