"""Qdrant runs the behavioural suite every backend runs, over REST and gRPC, against the project's
Qdrant-protocol servers (checked with the official qdrant-client in test_qdrant_servers.py), and reads
every point back with qdrant-client's scroll."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.contract.suite import BackendContract, StoredRow, Target
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector.ids import ORIGINAL_ID_KEY
from vectordb.connector.transports.base import forget_shared

COLLECTION = "contract"


def read_back(client: Any) -> dict[str, StoredRow]:
    """Every point, keyed by the id the suite wrote (the payload keeps ids that became UUIDs)."""
    if not client.collection_exists(COLLECTION):
        return {}
    rows: dict[str, StoredRow] = {}
    offset = None
    while True:
        points, offset = client.scroll(COLLECTION, limit=16, offset=offset, with_vectors=True)
        for point in points:
            payload = dict(point.payload or {})
            key = str(payload.pop(ORIGINAL_ID_KEY, point.id))
            rows[key] = StoredRow(vector=np.asarray(point.vector, dtype=np.float32), metadata=payload)
        if offset is None:
            return rows


class QdrantContract(BackendContract):
    transport = "grpc"

    @pytest.fixture
    def target(self) -> Iterator[Target]:
        with QdrantServer() as server:
            client = server.client(prefer_grpc=self.transport == "grpc")
            options = {"create": True, "metric": "dotproduct"}
            yield Target(
                uri=server.uri(self.transport, COLLECTION),
                read_back=lambda: read_back(client),
                options=options,
            )
            client.close()
            forget_shared()


class TestQdrantGrpcContract(QdrantContract):
    transport = "grpc"


class TestQdrantRestContract(QdrantContract):
    transport = "rest"
