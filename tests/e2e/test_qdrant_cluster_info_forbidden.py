"""A collection key for points only may not read the cluster info (Qdrant asks more access for
``GET /collections/{c}/cluster`` than for the collection: 403 "Only points access is allowed"). Reading the shard
keys' kind (text or numbers) there made every shard_key write with such a key fail whole (``AuthError``), where
it wrote before that read came: the keys are taken for text, as before, and the log says how to say otherwise.
A proxy answers the 403 on ``/cluster`` only; everything else goes to the project's Qdrant server."""

from __future__ import annotations

import http.server
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from qdrant_client.http import models

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

FORBIDDEN = b'{"status":{"error":"Forbidden: Only points access is allowed for collection c"},"time":0.0}'


def _proxy(upstream: str) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _relay(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else None
            if self.path.split("?")[0].endswith("/cluster"):
                code, data, kind = 403, FORBIDDEN, "application/json"
            else:
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")
                }
                request = urllib.request.Request(
                    upstream + self.path, data=body, method=self.command, headers=headers
                )
                try:
                    with urllib.request.urlopen(request) as reply:
                        code, data, kind = reply.status, reply.read(), reply.headers.get("content-type")
                except urllib.error.HTTPError as exc:
                    code, data, kind = exc.code, exc.read(), exc.headers.get("content-type")
            self.send_response(code)
            self.send_header("content-type", kind or "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _relay

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def proxied() -> Iterator[tuple[QdrantServer, str]]:
    with QdrantServer() as server:
        client = server.client()
        client.create_collection(
            "c",
            vectors_config=models.VectorParams(size=2, distance=models.Distance.DOT),
            sharding_method=models.ShardingMethod.CUSTOM,
        )
        client.create_shard_key("c", "us")
        rest = server.uri("rest", "c")
        hostport = rest.split("://", 1)[1].split("/", 1)[0]
        proxy = _proxy(f"http://{hostport}")
        try:
            yield server, rest.replace(hostport, f"127.0.0.1:{proxy.server_address[1]}")
        finally:
            proxy.shutdown()
            proxy.server_close()
            forget_shared()


def test_a_key_that_cannot_read_the_cluster_info_writes_text_shard_keys(
    proxied: tuple[QdrantServer, str], caplog: pytest.LogCaptureFixture
) -> None:
    server, uri = proxied
    with caplog.at_level(logging.WARNING), connect(uri, namespace_mode="shard_key", namespace="us") as client:
        assert client.upsert([{"id": 1, "values": [1.0, 2.0]}]).written == 1
    assert "cannot read the collection's shard keys" in caplog.text and "shard_key_type=number" in caplog.text
    assert set(server.store.points_by_shard("c")) == {("us", 1)}
