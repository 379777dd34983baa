"""End-to-end set-up shared by several files: a Qdrant-protocol server (REST and gRPC) and its rows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector.transports.base import forget_shared

QDRANT_TRANSPORTS = ["rest", "grpc"]


@pytest.fixture(scope="module")
def qdrant_module_server() -> Iterator[QdrantServer]:
    """One Qdrant-protocol server for a module's tests; the connector's shared channels to it are
    forgotten afterwards (a later module's server may take its port)."""
    with QdrantServer() as server:
        yield server
    forget_shared()


def three_d_rows(n: int) -> list[dict[str, object]]:
    """``n`` rows with integer ids 0..n-1, each the 3-d vector [1, 0, 0]."""
    return [{"id": i, "values": [1.0, 0, 0]} for i in range(n)]
