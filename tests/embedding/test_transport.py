"""``EmbeddingTransport``: a transport nobody closed still closes its connections when it is collected."""

from __future__ import annotations

import gc
import http.server
import sys
import threading
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest

from vectordb.connector.embedding.transport import EmbeddingTransport
from vectordb.connector.redaction import Secrets


class _Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the transport holds the connection after the reply

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/embeddings"
    server.shutdown()
    server.server_close()


def test_a_transport_dropped_without_close_closes_its_connections(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the socket of a connection left to the collector is an "unclosed socket" ResourceWarning raised where
    # the collector happens to run (a later test, which then failed in CI)
    # this test is about its own server's connections: another's (an earlier test's thread dropping its
    # socket now) goes where it would have gone
    server_port = f"'127.0.0.1', {urlsplit(url).port})"
    unraisable: list[Any] = []
    elsewhere = sys.unraisablehook

    def hook(event: Any) -> None:
        (unraisable.append if server_port in str(event.exc_value) else elsewhere)(event)

    monkeypatch.setattr(sys, "unraisablehook", hook)
    transport = EmbeddingTransport(url, None, secrets=Secrets())
    assert transport.post(b"{}", 5.0) == b"{}"
    del transport
    gc.collect()
    assert [str(u.exc_value) for u in unraisable] == []


class _Proxy(_Echo):
    """A forward proxy that answers itself: records the absolute-form target a proxy is sent."""

    targets: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        type(self).targets.append(self.path)
        super().do_POST()


def test_a_proxy_the_environment_names_carries_the_embedding_requests(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        for name in ("HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "no_proxy", "https_proxy", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
        transport = EmbeddingTransport(url, "sk-proxy", secrets=Secrets("sk-proxy"))
        assert transport.post(b"{}", 5.0) == b"{}"
        transport.close()
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert _Proxy.targets == [url], "the request went to the proxy, naming the endpoint"
