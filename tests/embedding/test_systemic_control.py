"""Texts a server refuses one by one for one constant reason at the start of a stream (Ollama's "the
input length exceeds the context length", the same long text many times) looked systemic: the stream
stopped with ``SystemicRejection`` ("The cause is the request itself") and the good texts after them
were never sent. Before concluding so, the client sends its probe text alone: accepted, the refusals
are about the inputs, and the watch is disarmed; refused too, the stream stops as before."""

from __future__ import annotations

import pytest

from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.errors import SystemicRejection

LONG = "x" * 3000  # 750 tokens, over a 512-token context: the same refusal every time


def client_for(server: EmbeddingsServer, model: str = "test-embed-64", **extra: object) -> EmbeddingClient:
    options = {
        "url": server.url,
        "model": model,
        "api_key": DEFAULT_KEY,
        "batch_size": 64,
        "max_concurrency": 4,
    }
    return EmbeddingClient(parse_embed_options(options | extra))


def test_over_long_texts_at_the_start_fail_alone_and_the_rest_is_embedded() -> None:
    texts = [LONG] * 300 + [f"text {i}" for i in range(500)]
    with EmbeddingsServer(context_tokens=512) as server, client_for(server) as client:
        result = client.embed(texts)
    assert sorted(f.index for f in result.failures) == list(range(300))
    assert {f.error_type for f in result.failures} == {"Rejected"}
    assert client.stats.embedded == 500


def test_a_refusal_of_the_request_itself_still_stops_the_stream() -> None:
    texts = [f"text {i}" for i in range(2000)]
    with (
        EmbeddingsServer() as server,
        client_for(server, model="text-embedding-ada-002", dimensions=256) as client,
        pytest.raises(SystemicRejection, match="does not support specifying dimensions"),
    ):
        client.embed(texts)
    # stopped early: not about two requests for every input (4,000). The refused requests are split to single
    # texts, 4 at a time, before 32 single refusals conclude: 180-200 requests in runs here, so the bound leaves
    # room for the senders' timing
    assert server.stats.requests < 400
