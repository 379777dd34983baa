"""Weaviate: zone-less timestamps finer than a microsecond (pandas' ``datetime64[ns]``, Arrow's
``timestamp("ns")``) into a ``date`` property. A ``datetime`` cannot hold them, so they arrive as ISO
text without a zone, which Weaviate's RFC 3339 dates refuse: rows failed by their nanoseconds. They go
as UTC, as a whole-microsecond timestamp without a zone does. Against the real server the fixtures start."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from vectordb.connector import connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120)

NANOS = [
    1_700_000_000_000_000_000,
    1_700_000_000_123_456_789,
    1_700_000_000_000_001_000,
    1_700_000_000_000_000_001,
]
STORED = [
    "2023-11-14T22:13:20Z",
    "2023-11-14T22:13:20.123456789Z",
    "2023-11-14T22:13:20.000001Z",
    "2023-11-14T22:13:20.000000001Z",
]


def _table(nanos: list[int], prefix: str = "r") -> pa.Table:
    ids = [f"{prefix}{i}" for i in range(len(nanos))]
    values = pa.array([[1.0, float(i), 0, 0] for i in range(len(nanos))], pa.list_(pa.float32()))
    return pa.table({"id": ids, "values": values, "ts": pa.array(nanos, pa.timestamp("ns"))})


def _stored(server: WeaviateServer, collection: str) -> dict[str, str]:
    objects = server.rest("GET", f"/v1/objects?class={collection}&limit=100").json()["objects"]
    return {o["properties"]["original_id"]: o["properties"]["ts"] for o in objects}


def _types(server: WeaviateServer, collection: str) -> dict[str, list[str]]:
    schema = server.rest("GET", f"/v1/schema/{collection}").json()
    return {p["name"]: p["dataType"] for p in schema["properties"]}


def test_nanosecond_timestamps_into_a_declared_date_property_are_utc(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    body = {
        "class": weaviate_collection,
        "vectorConfig": {"default": {"vectorizer": {"none": {}}, "vectorIndexType": "hnsw"}},
        "properties": [{"name": "ts", "dataType": ["date"]}],
    }
    assert weaviate_server.rest("POST", "/v1/schema", json=body).status_code == 200
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, on_error="report", **options) as client:
        report = client.write(_table(NANOS))
    assert report.ok and report.written == 4, report
    assert _stored(weaviate_server, weaviate_collection) == {f"r{i}": s for i, s in enumerate(STORED)}


@pytest.mark.parametrize("first", [0, 1], ids=["whole_microseconds_first", "nanoseconds_first"])
def test_create_declares_a_nanosecond_column_a_date(
    weaviate_server: WeaviateServer, weaviate_collection: str, first: int
) -> None:
    nanos = NANOS[first:] + NANOS[:first]
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, create=True, dimension=4, on_error="report", **options) as client:
        report = client.write(_table(nanos))
        assert report.ok and report.written == 4, report
        assert client.write(_table(NANOS[1:2], prefix="later")).ok  # nanoseconds alone, once typed
    assert _types(weaviate_server, weaviate_collection)["ts"] == ["date"]
    expected = {f"r{i}": s for i, s in enumerate(STORED[first:] + STORED[:first])}
    assert _stored(weaviate_server, weaviate_collection) == {**expected, "later0": STORED[1]}
