"""An account out of quota (OpenAI's 429 ``insufficient_quota``) is no rate limit: it stops at once, as a
fatal ``AuthError`` naming the key's option, where it was retried like a throttle (220 requests for
2,000 inputs, each failed ``Throttled``, retryable)."""

from __future__ import annotations

import pytest

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.errors import AuthError

OUT_OF_QUOTA = "the account of this key is out of quota"


def test_an_account_out_of_quota_stops_the_stream_at_once() -> None:
    with EmbeddingsServer(out_of_quota=True) as server:
        options = {"url": server.url, "model": "test-embed-64", "api_key": DEFAULT_KEY}
        client = EmbeddingClient(parse_embed_options(options | {"batch_size": 10, "max_concurrency": 4}))
        with client, pytest.raises(AuthError, match=OUT_OF_QUOTA) as caught:
            client.embed([f"text {i}" for i in range(2000)])
        assert server.stats.requests <= 4  # those in flight when the first answer came; none retried
    error = caught.value
    assert str(error).startswith("option api_key: ") and not error.retryable and error.fatal
    assert "exceeded your current quota" in str(error)


def test_a_write_out_of_quota_names_the_embedding_key(pinecone: ServerHandle) -> None:
    rows = [{"id": f"r{i}", "text": f"hello {i}"} for i in range(100)]
    with (
        EmbeddingsServer(out_of_quota=True) as server,
        connect(
            pinecone.uri,
            on_error="report",
            **embedding_options(server),
        ) as client,
        pytest.raises(AuthError, match=f"^option embed_api_key: .*{OUT_OF_QUOTA}"),
    ):
        client.upsert(rows)
