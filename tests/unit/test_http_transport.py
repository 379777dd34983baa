"""HttpTransport sends a request over the process's keep-alive connections (``http1``): what reaches the
server is its own headers (Host, User-Agent, Accept), the transport's over them, a request's over those,
and the body; and a proxy the environment names still carries every request."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers.threaded_http import JsonHandler, ThreadedServer, TrackingHTTPServer
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports.base import WireRequest
from vectordb.connector.transports.http import HttpTransport

HEADERS = (("Api-Key", "k-123"), ("Content-Type", "application/json"))


class Seen(TrackingHTTPServer):
    """Keeps each request's target, headers and body; answers 200 with a body and a header of its own."""

    def __init__(self, port: int, handler: type[JsonHandler]) -> None:
        super().__init__(port, handler)
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()


class Recording(JsonHandler):
    server: Seen

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self._reply(200, b'{"deleted": 2}', extra={"X-Served-By": "recording"})


@pytest.fixture
def server() -> Iterator[Seen]:
    httpd = Seen(0, Recording)
    with ThreadedServer(httpd, "recording"):
        yield httpd


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def url_of(server: Seen) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@pytest.mark.usefixtures("no_proxy_env")
def test_the_server_gets_the_headers_and_body_and_the_caller_the_reply(server: Seen) -> None:
    transport = HttpTransport(url_of(server), secrets=Secrets("k-123"), headers=HEADERS)
    assert transport._pool.direct is not None, "no proxy in the environment: requests go to the pool directly"
    reply = transport.send(WireRequest("POST /vectors/delete", b'{"ids":["a","b"]}'), timeout_s=5.0)
    ((path, ours, body),) = server.requests
    assert (path, body) == ("/vectors/delete", b'{"ids":["a","b"]}')
    assert ours == {
        "host": f"127.0.0.1:{server.server_address[1]}",
        "user-agent": "vectordb-connector",
        "accept": "*/*",
        "api-key": "k-123",
        "content-type": "application/json",
        "content-length": str(len(body)),
    }
    assert (reply.status, reply.body) == (200, b'{"deleted": 2}')
    assert reply.headers["x-served-by"] == "recording"


@pytest.mark.usefixtures("no_proxy_env")
def test_a_requests_own_headers_win_for_that_request_only(server: Seen) -> None:
    transport = HttpTransport(url_of(server), secrets=Secrets("k-123"), headers=HEADERS)
    ndjson = WireRequest("POST /a", b"{}\n", headers=(("Content-Type", "application/x-ndjson"),))
    for request in (ndjson, WireRequest("POST /b?wait=true", b"{}")):
        transport.send(request, timeout_s=5.0)
    (path_a, first, _), (path_b, second, _) = server.requests
    assert (path_a, first["content-type"]) == ("/a", "application/x-ndjson")
    assert (path_b, second["content-type"]) == ("/b?wait=true", "application/json")


def test_a_proxy_named_by_the_environment_carries_the_requests(
    server: Seen, monkeypatch: pytest.MonkeyPatch, no_proxy_env: Any
) -> None:
    proxy = Seen(0, Recording)
    with ThreadedServer(proxy, "proxy"):
        monkeypatch.setenv("HTTP_PROXY", url_of(proxy))
        target = f"http://127.0.0.1:{server.server_address[1]}"
        transport = HttpTransport(target + "/", secrets=Secrets("k-123"), headers=HEADERS)
        assert transport._pool.direct is None
        reply = transport.send(WireRequest("POST /vectors/delete", b"{}"), timeout_s=5.0)
    assert reply.status == 200
    assert [path for path, _, _ in proxy.requests] == [target + "/vectors/delete"]  # absolute form: a proxy's
    assert server.requests == []
