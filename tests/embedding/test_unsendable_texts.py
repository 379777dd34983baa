"""A text holding a lone surrogate (a JSON ``"\\ud800"``, a file read with ``surrogateescape``) is a Python
string UTF-8 cannot carry: it fails alone, as invalid input naming its row, and every other text is
embedded and written. orjson's ``TypeError`` on a sender thread stopped the whole write before (0 of
2,000 rows written, ``on_error="report"`` ignored)."""

from __future__ import annotations

import json

import pytest

from tests.embedding.fixtures import embedding_options, expected_vectors
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.errors import Rejected

BAD = json.loads('"broken \\ud800 text"')
REASON = "not valid UTF-8: a lone surrogate at position 7"


def client_for(server: EmbeddingsServer) -> EmbeddingClient:
    options = {"url": server.url, "model": "test-embed-64", "api_key": DEFAULT_KEY, "batch_size": 4}
    return EmbeddingClient(parse_embed_options(options))


def test_the_client_fails_the_text_alone_unsent(embeddings_server: EmbeddingsServer) -> None:
    texts = ["ok 0", BAD, "ok 2", "ok 3", "ok 4", "ok 5"]
    with client_for(embeddings_server) as client:
        result = client.embed(texts)
    [failure] = result.failures
    assert (failure.index, failure.error_type, failure.retryable, failure.attempts) == (
        1,
        "InvalidInput",
        False,
        0,
    )
    assert failure.message == f"input 1 is {REASON}"
    good = [i for i in range(len(texts)) if i != 1]
    assert (result.vectors[good] == expected_vectors([texts[i] for i in good], 64, "test-embed-64")).all()
    assert embeddings_server.stats.inputs == 5


def test_a_request_that_cannot_be_encoded_is_a_refusal_not_a_crash(
    embeddings_server: EmbeddingsServer,
) -> None:
    with client_for(embeddings_server) as client, pytest.raises(Rejected, match=REASON) as caught:
        client._send(["fine", BAD])  # past the batcher's check: refused as the server would, never sent
    assert not caught.value.fatal
    assert embeddings_server.stats.requests == 0


def test_the_write_fails_that_row_alone_and_writes_the_others(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    n = 2000
    texts = [BAD if i == 500 else f"hello {i}" for i in range(n)]
    ids = [f"r{i}" for i in range(n)]
    data = [{"id": id_, "text": text} for id_, text in zip(ids, texts, strict=True)]
    with connect(
        pinecone.uri,
        **embedding_options(embeddings_server),
        on_error="report",
    ) as client:
        report = client.upsert(data)
    assert (report.written, report.failed) == (n - 1, 1)
    [failure] = report.failures
    assert (failure.ids, failure.positions, failure.error_type) == (("r500",), (500,), "InvalidInput")
    assert failure.error == f"text not embedded: column 'text' holds a text that is {REASON}"
    assert len(pinecone.arrived().ids()) == n - 1
