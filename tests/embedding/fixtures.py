"""Fixtures for the embeddings test server, shared by the client, writer, Spark and Beam tests.

Import them by name where needed (``from tests.embedding.fixtures import embeddings_server``);
the server runs in a thread of the test process and listens on 127.0.0.1, so Spark executors and
Beam workers reach it like any HTTP endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, MODELS, EmbeddingsServer, Fault, vectors_for
from vectordb.connector import Client, WriteReport, connect
from vectordb.connector.errors import AuthError

__all__ = ["EMBED_MODEL", "embedding_options", "embeddings_server", "expected_vectors", "too_long", "words"]

CONTEXT_TOKENS = 512
EMBED_MODEL = "test-embed-64"  # the server's 64-dimensional model: vectors a Pinecone test index takes


@pytest.fixture
def embeddings_server() -> Iterator[EmbeddingsServer]:
    """A fresh server (default key and models, a 512-token context) for one test."""
    with EmbeddingsServer(api_key=DEFAULT_KEY, context_tokens=CONTEXT_TOKENS) as server:
        yield server


def embedding_options(server: EmbeddingsServer, **extra: Any) -> dict[str, Any]:
    """A write's options that embed column ``text`` with ``server``'s ``EMBED_MODEL`` (``extra`` added,
    or in place of these)."""
    return {
        "text_column": "text",
        "embed_url": server.url,
        "embed_model": EMBED_MODEL,
        "embed_api_key": DEFAULT_KEY,
    } | extra


def expected_vectors(texts: Sequence[str], dim: int | None = None, model: str = DEFAULT_MODEL) -> np.ndarray:
    """What the server must answer for ``texts``: computed here from each text, not asked of it."""
    return vectors_for(list(texts), dim or MODELS[model], model)


def words(i: int, n: int = 20) -> str:
    """A short text of about ``n`` words, different for each ``i``."""
    return " ".join(f"w{(i * 7919 + k * 104729) % 100_003}" for k in range(n)) + f" #{i}"


def too_long(i: int) -> str:
    """A text over the server's context limit (more than 512 tokens of four bytes), different for each ``i``."""
    return f"long {i} " + "x" * (4 * CONTEXT_TOKENS + 8 * (i % 13))


def write_until_key_revoked(uri: str, data: Any, **options: Any) -> tuple[Client, WriteReport]:
    """``data`` written to ``uri`` with the embedding stage, whose key is revoked after 39 requests (a
    401): the write stops with ``AuthError``. The client (closed) and the stopped write's report."""
    with EmbeddingsServer() as server:
        server.script(*[Fault.slow(0.0)] * 39, Fault.error(401))
        with (
            connect(
                uri,
                on_error="report",
                **embedding_options(server),
                embed_batch_size=20,
                embed_max_concurrency=4,
                **options,
            ) as client,
            pytest.raises(AuthError) as caught,
        ):
            client.upsert(data)
    report = caught.value.report
    assert report is not None
    return client, report
