"""A Chroma server whose pre-flight max_batch_size is below the connector's default of 256 records a request
(Chroma Cloud's, or a configured one): a write without option batch_size still lands; only a batch_size the
user chose above the limit is a ``ConfigError``. A loopback proxy in front of the real server reports the
smaller limit and refuses larger upserts as the server words it."""

from __future__ import annotations

import http.server
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.transports.base import forget_shared

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer

LIMIT = 100


class _Proxy(http.server.BaseHTTPRequestHandler):
    upstream: str
    upserts: list[tuple[int, int]]  # (rows, status) per upsert

    def _forward(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else None
        status, payload = 200, b""
        if self.path.endswith("/pre-flight-checks"):
            payload = orjson.dumps({"max_batch_size": LIMIT, "supports_base64_encoding": True})
        elif body and self.path.endswith("/upsert") and len(orjson.loads(body)["ids"]) > LIMIT:
            status = 400
            payload = orjson.dumps(
                {
                    "error": "InvalidArgumentError",
                    "message": f"Cannot submit more than {LIMIT} embeddings at once.",
                }
            )
        else:
            request = urllib.request.Request(
                self.upstream + self.path,
                data=body,
                method=method,
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as reply:
                    status, payload = reply.status, reply.read()
            except urllib.error.HTTPError as exc:
                status, payload = exc.code, exc.read()
        if body and self.path.endswith("/upsert"):
            self.upserts.append((len(orjson.loads(body)["ids"]), status))
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")

    def log_message(self, *args: Any) -> None:
        """Quiet: the test reads ``upserts``."""


@pytest.fixture
def proxy(chroma_server: ChromaServer) -> Iterator[tuple[str, list[tuple[int, int]]]]:
    upserts: list[tuple[int, int]] = []
    handler = type("Handler", (_Proxy,), {"upstream": chroma_server.url, "upserts": upserts})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}", upserts
    forget_shared()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def rows(n: int) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "values": [float(i), 1.0, -0.25, 0.125]} for i in range(n)]


def test_a_write_without_batch_size_lands_on_a_server_taking_fewer_than_256(
    proxy: tuple[str, list[tuple[int, int]]], chroma_client: Any, chroma_collection: str
) -> None:
    address, upserts = proxy
    chroma_client.create_collection(chroma_collection)
    with connect(f"chroma://{address}/{chroma_collection}", on_error="report") as client:
        report = client.write(rows(300))
    assert report.ok and report.written == 300, report
    assert chroma_client.get_collection(chroma_collection).count() == 300
    assert upserts == [(LIMIT, 200)] * 3  # split at the server's limit: no request refused, upserts


def test_a_driver_hands_its_tasks_the_servers_limit(
    proxy: tuple[str, list[tuple[int, int]]], chroma_client: Any, chroma_collection: str
) -> None:
    address, upserts = proxy
    chroma_client.create_collection(chroma_collection)
    uri = f"chroma://{address}/{chroma_collection}"
    with connect(uri) as driver:  # a Spark driver checks the target once...
        prepared = driver.prepare_target()
    assert prepared.resolved["batch_size"] == LIMIT
    with connect(uri, on_error="report", **prepared.resolved) as task:  # ...and a task splits at its limit
        report = task.write(rows(250))
    assert report.ok and report.written == 250, report
    assert upserts == [(LIMIT, 200), (LIMIT, 200), (50, 200)]


def test_a_batch_size_above_the_servers_limit_is_a_config_error(
    proxy: tuple[str, list[tuple[int, int]]], chroma_client: Any, chroma_collection: str
) -> None:
    address, upserts = proxy
    chroma_client.create_collection(chroma_collection)
    with (
        pytest.raises(
            ConfigError, match=f"option batch_size: the chroma server takes at most {LIMIT} records"
        ),
        connect(f"chroma://{address}/{chroma_collection}", batch_size=LIMIT + 1) as client,
    ):
        client.write(rows(3))
    assert upserts == []
