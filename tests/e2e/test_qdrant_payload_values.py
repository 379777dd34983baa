"""Qdrant payload values: REST and gRPC store the same value for the same row, and no value stops a write.

gRPC's ``qdrant.Value`` holds int64 integers and doubles: an integer outside int64 fails its row on both
transports (REST stored it exactly, gRPC as a rounded double); numpy values go as the REST body writes them (a float32 as its shortest repr, a timedelta64 as its
text, which over gRPC raised out of ``Client.write``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

TRANSPORTS = ["rest", "grpc"]


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


def _write(server: QdrantServer, transport: str, collection: str, rows: list[dict[str, Any]]) -> Any:
    with connect(server.uri(transport, collection), create=True, on_error="report") as client:
        return client.write(rows)


# the stored value where it does not depend on the shared row checks (which may turn numpy values into Python
# ones first), else None: then REST and gRPC agree, whatever the value
VALUES: list[tuple[str, Any, Any]] = [
    ("f32", np.float32(0.1), None),
    ("f32s", np.array([0.1, 2.5], dtype=np.float32), None),
    ("td64", np.timedelta64(5, "s"), None),
    ("day", np.datetime64("2024-01-02"), None),
    ("i64", np.int64(-(2**63)), -(2**63)),
    ("nested", {"a": [np.float32(0.5), np.uint8(3)]}, {"a": [0.5, 3]}),
]


@pytest.mark.parametrize(("key", "value", "stored"), VALUES, ids=[v[0] for v in VALUES])
def test_rest_and_grpc_store_the_same_value(server: QdrantServer, key: str, value: Any, stored: Any) -> None:
    got = []
    for transport in TRANSPORTS:
        collection = f"same_{key}_{transport}"
        rows = [{"id": 1, "values": [1.0, 0, 0], "metadata": {key: value}}, {"id": 2, "values": [1.0, 0, 0]}]
        report = _write(server, transport, collection, rows)
        assert report.ok and report.written == 2, report
        got.append(server.store.points(collection)[1].payload[key])
    assert got[0] == got[1]
    if stored is not None:
        assert got[0] == stored


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("value", [2**63, np.uint64(2**64 - 1), [1, 2**64], {"n": -(2**63) - 1}])
def test_an_integer_outside_int64_fails_its_row(server: QdrantServer, transport: str, value: Any) -> None:
    collection = f"wide_{transport}_{abs(hash(str(value))) % 10**6}"
    rows = [{"id": 1, "values": [1.0, 0, 0], "metadata": {"n": value}}, {"id": 2, "values": [1.0, 0, 0]}]
    report = _write(server, transport, collection, rows)
    assert (report.written, report.failed) == (1, 1), report
    (failure,) = report.failures
    assert failure.ids == ("1",) and "64-bit" in failure.error  # the shared checks' words beyond uint64
    assert list(server.store.points(collection)) == [2]
