"""Set-up shared by the contract tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector.transports.base import forget_shared


@pytest.fixture(scope="module")
def qdrant() -> Iterator[QdrantServer]:
    """The Qdrant-protocol server (REST and gRPC), one a test module."""
    with QdrantServer() as s:
        yield s
    forget_shared()
