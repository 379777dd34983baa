"""No frame on the traceback of a failed write holds a credential outside the database transports' sends:
the embedding endpoint's key, PostgreSQL's password, a Pinecone key gRPC metadata cannot carry.

As ``test_traceback_locals`` (whose check this reuses) for the database transports: tools that print a
traceback's locals (``capture_locals``, pytest ``--showlocals``, rich, Sentry) show every frame on the
error's traceback and on its ``__cause__``/``__context__`` chain. Against the project's embeddings server
and an echo server refusing the key, a port that refuses connections, one that never answers, a proxy; a
real PostgreSQL refusing the password; the Pinecone gRPC server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from tests.e2e.test_traceback_locals import KEY, assert_no_key_in_locals, failed_write
from tests.integration.pg_server import LOADER, PgServer, pg_server_fixture, pg_table_fixture
from tests.net import closed_port, silent_listener
from tests.servers.echo import EchoHttpServer
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import start_server
from vectordb.connector import AuthError, ConfigError, ConnectorError, connect
from vectordb.connector.embedding import embed
from vectordb.connector.transports.base import forget_shared

__all__ = ["pg_server_fixture", "pg_table_fixture"]  # fixtures, used by name

TEXTS = pa.table({"id": ["a", "b"], "text": ["one", "two"]})


@pytest.fixture(autouse=True)
def fresh_connections() -> Iterator[None]:
    yield
    forget_shared()


def failed_embedding_write(embed_url: str, key_suffix: str = "") -> ConnectorError:
    """The error a write embedding its texts with ``KEY`` (and ``key_suffix``) raises."""
    with start_server("rest") as pinecone:
        try:
            with connect(
                pinecone.uri,
                api_key="the-database-key",
                verify=False,
                text_column="text",
                embed_url=embed_url,
                embed_model="test-embed-64",
                embed_api_key=KEY + key_suffix,
            ) as client:
                client.upsert(TEXTS)
        except ConnectorError as exc:
            return exc
    raise AssertionError(f"the write embedding with {embed_url} succeeded")


def failed_embed(url: str, **options: Any) -> ConnectorError:
    """The error ``embed`` raises given ``KEY``: its own frame holds the key it was given."""
    try:
        embed(["one", "two"], url=url, model="test-embed-64", api_key=KEY, max_retries=0, **options)
    except ConnectorError as exc:
        return exc
    raise AssertionError(f"embedding with {url} succeeded")


def test_an_embedding_key_refused_and_echoed_is_in_no_frame_of_the_traceback() -> None:
    with EmbeddingsServer(echo_key=True) as server:  # refuses our key and quotes it back
        for error in (failed_embedding_write(server.url), failed_embed(server.url)):
            assert isinstance(error, AuthError)
            assert_no_key_in_locals(error)
        assert f"Bearer {KEY}" in server.stats.auth_headers  # it went out


def test_an_echo_server_refusing_the_embedding_key_leaves_no_key_in_the_traceback() -> None:
    with EchoHttpServer(401) as server:
        url = f"http://127.0.0.1:{server.port}"
        for error in (failed_embedding_write(url), failed_embed(url)):
            assert isinstance(error, AuthError)
            assert_no_key_in_locals(error)
        assert any(KEY in seen for seen in server.seen)


def test_an_embedding_endpoint_refusing_or_not_answering_leaves_no_key_in_the_traceback() -> None:
    """The pool's errors are raised in frames holding the request's head, the key in it."""
    assert_no_key_in_locals(failed_embed(f"http://127.0.0.1:{closed_port()}"))
    with silent_listener() as port:
        assert_no_key_in_locals(failed_embed(f"http://127.0.0.1:{port}", timeout_s=0.3))


def test_a_proxy_refusing_the_embedding_request_leaves_no_key_in_the_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through a proxy the environment names, the request goes through httpx: its failures too."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port()}")
    with EmbeddingsServer() as server:
        error = failed_embed(server.url)
        assert server.stats.requests == 0  # refused by the proxy, not the server
    assert "cannot connect" in str(error)
    assert_no_key_in_locals(error)


def test_an_embedding_key_http_cannot_carry_is_refused_with_no_key_in_the_traceback() -> None:
    with EmbeddingsServer() as server:
        error = failed_embedding_write(server.url, key_suffix="\x00")
        assert server.stats.requests == 0
    assert isinstance(error, ConfigError)
    assert_no_key_in_locals(error)


def failed_pg_write(pg_server: PgServer, pg_table: str, *, in_uri: bool) -> ConnectorError:
    """The error a write as ``LOADER`` with the password ``KEY`` (in the URI, or as ``api_key``) raises;
    this frame holds no password itself."""
    try:
        with connect(
            pg_server.uri(pg_table, user=LOADER, password=KEY if in_uri else None),
            max_retries=0,
            **({} if in_uri else {"api_key": KEY}),
        ) as client:
            client.upsert([{"id": "a", "values": [0.1, 0.2, 0.3]}])
    except ConnectorError as exc:
        return exc
    raise AssertionError("the password was taken")


@pytest.mark.parametrize("in_uri", [True, False], ids=["in-uri", "as-api-key"])
def test_a_refused_postgresql_password_is_in_no_frame_or_context_of_the_error(
    pg_server: PgServer, pg_table: str, in_uri: bool
) -> None:
    """psycopg's error, raised in frames holding the conninfo and the password, is not kept as context."""
    error = failed_pg_write(pg_server, pg_table, in_uri=in_uri)
    assert isinstance(error, AuthError) and "password authentication failed" in str(error)
    assert_no_key_in_locals(error)


@pytest.mark.parametrize("suffix", ["\x00", "\u00e9"])
def test_a_pinecone_key_grpc_metadata_cannot_carry_leaves_no_key_in_the_traceback(suffix: str) -> None:
    """Refused as the transport is built, from frames holding the key and the metadata made of it."""
    with start_server("grpc") as server:
        error = failed_write(server.uri, key_suffix=suffix)
        assert not server.arrived().requests
    assert isinstance(error, ConfigError) and "gRPC metadata api-key" in str(error)
    assert_no_key_in_locals(error)
