"""An embedding key with surrounding whitespace (read from a file, with its line break) is trimmed where
the options are parsed: sent as it was, every request failed with ``Authorization: a line break ...``,
an error naming a header, not option ``embed_api_key`` (``api_key`` of ``embed()``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.embedding.fixtures import embedding_options, expected_vectors
from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.embedding import EmbeddingClient, EmbedOptions, embed

TEXTS = ["one", "two", "three"]


@pytest.mark.parametrize("pasted", [DEFAULT_KEY + "\n", DEFAULT_KEY + "\r\n", f" {DEFAULT_KEY} "])
def test_embed_with_a_key_read_from_a_file(embeddings_server: EmbeddingsServer, pasted: str) -> None:
    vectors = embed(TEXTS, url=embeddings_server.url, model=DEFAULT_MODEL, api_key=pasted, max_retries=0)
    np.testing.assert_array_equal(vectors, expected_vectors(TEXTS))
    assert embeddings_server.stats.auth_headers == {f"Bearer {DEFAULT_KEY}"}


def test_embed_with_a_variable_holding_a_line_break(
    embeddings_server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY_FILE", DEFAULT_KEY + "\n")
    vectors = embed(TEXTS, url=embeddings_server.url, model=DEFAULT_MODEL, api_key_env="TEST_EMBED_KEY_FILE")
    np.testing.assert_array_equal(vectors, expected_vectors(TEXTS))


def test_options_made_directly_hold_the_trimmed_key(embeddings_server: EmbeddingsServer) -> None:
    options = EmbedOptions(url=embeddings_server.url, model=DEFAULT_MODEL, api_key=DEFAULT_KEY + "\n")
    assert options.api_key == DEFAULT_KEY
    with EmbeddingClient(options) as client:
        assert not client.embed(TEXTS).failures


@pytest.mark.parametrize("option", ["embed_api_key", "embed_api_key_env"])
def test_a_write_with_an_embedding_key_read_from_a_file(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY_FILE", DEFAULT_KEY + "\n")
    given = DEFAULT_KEY + "\n" if option == "embed_api_key" else "TEST_EMBED_KEY_FILE"
    options = embedding_options(embeddings_server, embed_api_key=None) | {option: given}
    with connect(pinecone.uri, max_retries=0, **options) as client:
        assert client.upsert([{"id": "x", "text": "hello"}]).written == 1
    assert pinecone.arrived().ids() == {"x"}
