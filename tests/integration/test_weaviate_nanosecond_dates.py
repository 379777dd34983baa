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

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits

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


def _bare_collection(server: WeaviateServer, collection: str) -> None:
    """A collection without properties: each is left to Weaviate's auto-schema."""
    body = {
        "class": collection,
        "vectorConfig": {"default": {"vectorizer": {"none": {}}, "vectorIndexType": "hnsw"}},
    }
    assert server.rest("POST", "/v1/schema", json=body).status_code == 200


@pytest.mark.parametrize("first", [0, 1], ids=["whole_microseconds_first", "nanoseconds_first"])
def test_auto_schema_takes_nanosecond_timestamps_as_utc_dates(
    weaviate_server: WeaviateServer, weaviate_collection: str, first: int
) -> None:
    _bare_collection(weaviate_server, weaviate_collection)
    nanos = NANOS[first:] + NANOS[:first]
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, on_error="report", **options) as client:
        report = client.write(_table(nanos))
    assert report.ok and report.written == 4, report
    assert _types(weaviate_server, weaviate_collection)["ts"] == ["date"]
    expected = {f"r{i}": s for i, s in enumerate(STORED[first:] + STORED[:first])}
    assert _stored(weaviate_server, weaviate_collection) == expected


@pytest.mark.parametrize("zone", [None, "UTC", "Europe/Paris"])
def test_create_declares_a_column_of_nanoseconds_alone_a_date(
    weaviate_server: WeaviateServer, weaviate_collection: str, zone: str | None
) -> None:
    nanos = [1, 1_700_000_000_123_456_789, -1]
    ids = ["a", "b", "c"]
    values = pa.array([[1.0, float(i), 0, 0] for i in range(3)], pa.list_(pa.float32()))
    table = pa.table({"id": ids, "values": values, "ts": pa.array(nanos, pa.timestamp("ns", tz=zone))})
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, create=True, dimension=4, on_error="report", **options) as client:
        report = client.write(table)
    assert report.ok and report.written == 3, report
    assert _types(weaviate_server, weaviate_collection)["ts"] == ["date"]
    stored = {k: v.replace("+00:00", "Z") for k, v in _stored(weaviate_server, weaviate_collection).items()}
    assert stored == {
        "a": "1970-01-01T00:00:00.000000001Z",
        "b": "2023-11-14T22:13:20.123456789Z",
        "c": "1969-12-31T23:59:59.999999999Z",
    }


@pytest.mark.parametrize("create", [False, True], ids=["auto_schema", "create"])
def test_a_list_of_nanosecond_timestamps_is_a_date_list(
    weaviate_server: WeaviateServer, weaviate_collection: str, create: bool
) -> None:
    if not create:
        _bare_collection(weaviate_server, weaviate_collection)
    lists = pa.array([[NANOS[1], NANOS[3]], [NANOS[0], NANOS[1]]], pa.list_(pa.timestamp("ns")))
    values = pa.array([[1.0, float(i), 0, 0] for i in range(2)], pa.list_(pa.float32()))
    table = pa.table({"id": ["a", "b"], "values": values, "ts": lists})
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, create=create, dimension=4, on_error="report", **options) as client:
        report = client.write(table)
    assert report.ok and report.written == 2, report
    assert _types(weaviate_server, weaviate_collection)["ts"] == ["date[]"]
    assert _stored(weaviate_server, weaviate_collection) == {
        "a": [STORED[1], STORED[3]],
        "b": [STORED[0], STORED[1]],
    }


def test_text_that_looks_like_a_timestamp_stays_text(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """A user's string is stored as given, whatever it looks like: only the connector's own text of an
    instant finer than a microsecond is a date."""
    rows = [
        {"id": "a", "values": [1.0, 0, 0, 0], "metadata": {"ts": "2023-11-14T22:13:20.123456789"}},
        {"id": "b", "values": [1.0, 1, 0, 0], "metadata": {"ts": "2023-11-14T22:13:20"}},
    ]
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, create=True, dimension=4, on_error="report", **options) as client:
        report = client.write(rows)
    assert report.ok and report.written == 2, report
    assert _types(weaviate_server, weaviate_collection)["ts"] == ["text"]
    assert _stored(weaviate_server, weaviate_collection) == {
        "a": "2023-11-14T22:13:20.123456789",
        "b": "2023-11-14T22:13:20",
    }
