"""Option ``max_batch_bytes`` holds for every request body the Qdrant test servers receive: over gRPC a payload
of small numbers (11 bytes a double, 13 a negative integer, for JSON's 2 to 4) was estimated at twice its JSON
and sent at up to 2.1 times the option; over REST, floats longer than the estimate's sample showed were sent
at about 3 times it, as the engine split an encoded body only above the database's own limit (32 MiB)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

LIMIT = 1 << 20


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _sizes(server: QdrantServer) -> list[int]:
    return [entry.size for entry in server.store.log]


@pytest.mark.parametrize("payload", [[0.5] * 25_000, [-1] * 30_000], ids=["doubles", "negative-ints"])
def test_grpc_payloads_of_small_numbers_stay_under_the_option(
    server: QdrantServer, payload: list[object]
) -> None:
    rows = [{"id": i, "values": [1.0, 0.5, 0.25], "metadata": {"f": payload}} for i in range(30)]
    with connect(server.grpc_uri("c"), create=True, dimension=3, max_batch_bytes=LIMIT) as client:
        report = client.write(rows)
    assert report.ok and report.written == 30, report
    sizes = _sizes(server)
    assert max(sizes) <= LIMIT, sizes
    assert len(server.store.points("c")) == 30
    assert sum(sizes) / len(sizes) > LIMIT / 5  # not cut to a row a request


def test_a_rest_body_the_estimate_undercounts_is_split_under_the_option(server: QdrantServer) -> None:
    """The JSON estimate samples 16 rows of a batch: here those hold 0.5 (3 characters a float) and the
    rest 0.12345679 (10), so bodies came out about three times the estimate."""
    n, dim = 320, 512
    vectors = np.full((n, dim), 0.12345679, np.float32)
    vectors[:: n // 16] = 0.5
    rows = [{"id": i, "values": vectors[i]} for i in range(n)]
    with connect(server.uri("rest", "c"), create=True, dimension=dim, max_batch_bytes=LIMIT) as client:
        report = client.write(rows)
    assert report.ok and report.written == n, report
    sizes = _sizes(server)
    assert max(sizes) <= LIMIT, sizes
    assert len(server.store.points("c")) == n
