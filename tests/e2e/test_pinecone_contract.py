"""Pinecone runs the behavioural suite every backend runs, over gRPC and REST, against the project's
Pinecone-protocol servers (checked with the official SDK in tests/test_servers_with_official_sdk.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tests.contract.suite import BackendContract, StoredRow, Target
from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector.transports.base import forget_shared


def read_back(server: ServerHandle) -> dict[str, StoredRow]:
    """Every vector the index holds, in every namespace (the suite's ids do not repeat across them)."""
    return {
        vid: StoredRow(vector=np.frombuffer(v.values_f32, dtype="<f4"), metadata=v.metadata or {})
        for (_, vid), v in server.arrived().final.items()
    }


class PineconeContract(BackendContract):
    kind = "grpc"

    @pytest.fixture
    def target(self) -> Iterator[Target]:
        with start_server(self.kind) as server:  # type: ignore[arg-type]
            yield Target(uri=server.uri, read_back=lambda: read_back(server))
            forget_shared()


class TestPineconeGrpcContract(PineconeContract):
    kind = "grpc"


class TestPineconeRestContract(PineconeContract):
    kind = "rest"
