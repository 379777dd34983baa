"""Pinecone's 40 KB metadata limit, as the connector checks it before sending, counts a whole float as the
integer it is, as the Pinecone test servers do (and over gRPC the two are the same bytes): a row of 4,000
keys of ``1.0`` is stored, as the official SDK stores it, where the connector refused it as "46891 bytes
as JSON". At the limit both sides agree: a row of whole floats measuring 40,960 bytes is stored, one
measuring 40,961 is refused by the connector, and by the server when the SDK sends it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pinecone import Pinecone
from pinecone.grpc import PineconeGRPC

from tests.servers import pinecone_rules as rules
from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

VALUES = [1.0, 0.5, 0.25]


@pytest.fixture(params=["rest", "grpc"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(request.param) as handle:
        yield handle
    forget_shared()


def _sdk_upsert(server: ServerHandle, vid: str, metadata: dict[str, Any]) -> None:
    index = (
        Pinecone(api_key="k").Index(host=server.url)
        if server.kind == "rest"
        else PineconeGRPC(api_key="k", grpc_scheme="http").Index(host=server.host)
    )
    try:
        index.upsert(vectors=[(vid, VALUES, metadata)])
    finally:
        index.close()


def _sized(size: int) -> dict[str, Any]:
    """3,000 whole floats and a string padding the rows' measure (the servers') to ``size``."""
    floats = {f"k{i:04d}": float(i) for i in range(3000)}
    row = {**floats, "s": "x" * (size - rules.metadata_size({**floats, "s": ""}))}
    assert rules.metadata_size(row) == size
    return row


def test_whole_floats_are_stored_as_the_same_row_of_ints_is(server: ServerHandle) -> None:
    floats = {f"k{i}": 1.0 for i in range(4000)}
    rows = [
        {"id": "ints", "values": VALUES, "metadata": {f"k{i}": 1 for i in range(4000)}},
        {"id": "floats", "values": VALUES, "metadata": floats},
        {"id": "halves", "values": VALUES, "metadata": {f"k{i}": 1.5 for i in range(4000)}},
    ]
    with connect(server.uri, dimension=3, on_error="report") as client:
        report = client.write(rows)
    assert [(f.ids, f.error) for f in report.failures] == [
        (("halves",), "metadata is 46891 bytes as JSON; the limit is 40960")
    ]
    _sdk_upsert(server, "sdk", floats)
    assert sorted(server.arrived().namespaces.get("", {})) == ["floats", "ints", "sdk"]


def test_at_the_limit_the_connector_and_the_server_agree(server: ServerHandle) -> None:
    at, over = _sized(rules.MAX_METADATA_BYTES), _sized(rules.MAX_METADATA_BYTES + 1)
    with connect(server.uri, dimension=3, on_error="report") as client:
        report = client.write(
            [
                {"id": "at", "values": VALUES, "metadata": at},
                {"id": "over", "values": VALUES, "metadata": over},
            ]
        )
    assert [(f.ids, f.error) for f in report.failures] == [
        (("over",), "metadata is 40961 bytes as JSON; the limit is 40960")
    ]
    with pytest.raises(Exception, match="Metadata size is 40961 bytes"):
        _sdk_upsert(server, "over", over)
    assert sorted(server.arrived().namespaces.get("", {})) == ["at"]
