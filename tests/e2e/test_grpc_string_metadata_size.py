"""The gRPC size estimate of a row's metadata counts the values around a string, not the marks in it.

It counted 13 bytes for every ``,`` ``:`` ``[`` ``{`` of the row's JSON, those inside strings too: a 180 KB JSON
document kept as a string was "about 1152113 bytes encoded" and refused under max_batch_bytes=1 MiB (REST
wrote it; its gRPC body is 180 KB), and with no option a 2.8 MB one under the 16 MiB default.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect

MIB = 1 << 20


def _document(items: int) -> str:
    """A JSON document as a payload string: a comma, colon or bracket every 2 or 3 bytes."""
    return json.dumps([{"x": [1, 2, 3], "y": 0}] * items, separators=(",", ":"))


@pytest.mark.parametrize("transport", ["grpc", "rest"])
@pytest.mark.parametrize(
    ("items", "options"),
    [(9000, {"max_batch_bytes": MIB}), (140_000, {})],
    ids=["180KB-1MiB", "2.8MB-default"],
)
def test_qdrant_writes_a_json_document_kept_as_a_string(
    qdrant_server: QdrantServer, transport: str, items: int, options: dict[str, Any]
) -> None:
    document = _document(items)
    rows = [
        {"id": 1, "values": [1.0, 0.5, 0.25], "metadata": {"doc": document}},
        {"id": 2, "values": [1.0, 0.5, 0.25], "metadata": {"doc": "plain"}},
    ]
    with connect(
        qdrant_server.uri(transport, "c"), create=True, dimension=3, on_error="report", **options
    ) as client:
        report = client.write(rows)
    assert (report.written, report.failed) == (2, 0), report.failures
    assert qdrant_server.store.points("c")[1].payload == {"doc": document}
    assert max(entry.size for entry in qdrant_server.store.log) <= options.get("max_batch_bytes", 16 * MIB)


def test_pinecone_grpc_writes_a_string_of_marks(pinecone_grpc_server: ServerHandle) -> None:
    """40,000 commas: estimated at 560 KB, and refused under max_batch_bytes=200000; sent in 40 KB."""
    rows = [
        {"id": "marks", "values": [1.0, 0.5], "metadata": {"doc": "," * 40_000}},
        {"id": "plain", "values": [1.0, 0.5], "metadata": {"doc": "plain"}},
    ]
    with connect(pinecone_grpc_server.uri, on_error="report", max_batch_bytes=200_000) as client:
        report = client.write(rows)
    assert (report.written, report.failed) == (2, 0), report.failures
    assert pinecone_grpc_server.arrived().vector("marks").metadata == {"doc": "," * 40_000}
