"""The embedding stage's key stays out of the logs when its requests go through a proxy (httpx, then):
httpcore's trace logs a reply's headers whole (a server that echoes the key in one) and httpx logs each
request's URL (a gateway's key in its query). Only the database's HTTP transport blanked those loggers,
so with a gRPC database, or a key only in the embedding URL, the key was logged."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pyarrow as pa
import pytest

import tests.servers.embeddings as embeddings
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import start_server
from vectordb.connector import ConnectorError, connect

KEY = "sk-wrongembedKKKK1111LLLL2222"
QUERY_KEY = "gw-querykeyGGGG7777HHHH8888"
TEXTS = pa.table({"id": ["a", "b"], "text": ["hello", "world"]})


@pytest.fixture
def all_logged(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    # the keys of clients earlier tests left to the collector are blanked while they live: a key "k" made
    # the header below read 'x-echo-api-***ey' (once, in a full run)
    gc.collect()
    names = ("", "httpx", "httpcore")
    previous = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    with caplog.at_level(logging.DEBUG):
        yield caplog
    for name, level in previous.items():
        logging.getLogger(name).setLevel(level)


def proxied_through(server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests go through ``HTTP_PROXY``: the embeddings server itself, which takes absolute-form targets."""
    monkeypatch.setattr(embeddings, "EMBEDDINGS_PATH", f"{server.url}/v1/embeddings".encode())
    monkeypatch.setenv("HTTP_PROXY", server.url)
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)


def logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)


def test_a_key_echoed_in_a_reply_header_is_not_logged_with_a_grpc_database(
    all_logged: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EmbeddingsServer(echo_key=True) as server, start_server("grpc") as database:
        proxied_through(server, monkeypatch)
        options = {"embed_url": server.url, "embed_model": "test-embed-64", "embed_api_key": KEY}
        with pytest.raises(ConnectorError), connect(database.uri, text_column="text", **options) as client:
            client.write(TEXTS)
        assert server.stats.statuses.get(401) == 1  # the key reached the server, which echoed it
    text = logged(all_logged)
    assert "x-echo-api-" in text  # the header was logged, its value blanked
    assert KEY not in text


@pytest.mark.parametrize("name", ["api_key", "code", "gateway"])  # a name that says nothing: a long value
def test_a_key_in_the_embedding_urls_query_is_not_logged(
    name: str, all_logged: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EmbeddingsServer(api_key=None) as server, start_server("grpc") as database:
        proxied_through(server, monkeypatch)
        key = f"{QUERY_KEY}{name.upper()}"  # its own: blank_logs keeps an earlier test's keys while they are used
        url = f"{server.url}/v1/embeddings?api-version=2024-02-01&{name}={key}"
        with connect(database.uri, text_column="text", embed_url=url, embed_model="test-embed-64") as client:
            assert client.write(TEXTS).written == 2
    text = logged(all_logged)
    assert "HTTP Request: POST" in text  # httpx logged the request, its URL's key blanked
    assert key not in text and QUERY_KEY not in text
    assert "api-version=2024-02-01" in text  # not a key: shown
