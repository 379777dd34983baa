"""Set-up every embedding test may take by name: the embeddings server (``fixtures.embeddings_server``)
and a Pinecone-protocol REST server to write into. The writer's embedding options are
``fixtures.embedding_options``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.embedding.fixtures import embeddings_server
from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector.transports.base import forget_shared

__all__ = ["embeddings_server", "pinecone"]


@pytest.fixture
def pinecone() -> Iterator[ServerHandle]:
    """The project's Pinecone-protocol REST server, for one test; the transports the test's clients
    shared are forgotten after it, so the next test's connect to another port starts afresh."""
    with start_server("rest") as handle:
        yield handle
        forget_shared()
