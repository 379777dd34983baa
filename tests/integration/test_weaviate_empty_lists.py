"""Weaviate with create=true: a list column whose first rows hold only empty lists does not let
auto-schema declare its property ``text[]`` (every later row of numbers would fail); the empty lists
are left out until a value types the property. Against the real server the fixtures start."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from vectordb.connector import connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits

SCHEMA = pa.schema([("id", pa.string()), ("values", pa.list_(pa.float32())), ("tags", pa.list_(pa.int64()))])


def _table(ids: list[str], tags: list[list[int]]) -> pa.Table:
    return pa.table({"id": ids, "values": [[1.0, 0.0, 0.0, 0.0]] * len(ids), "tags": tags}, schema=SCHEMA)


def _types(server: WeaviateServer, collection: str) -> dict[str, list[str]]:
    schema = server.rest("GET", f"/v1/schema/{collection}").json()
    return {p["name"]: p["dataType"] for p in schema["properties"]}


def _stored(server: WeaviateServer, collection: str) -> dict[str, Any]:
    objects = server.rest("GET", f"/v1/objects?class={collection}&limit=100").json()["objects"]
    return {o["properties"]["original_id"]: o["properties"].get("tags") for o in objects}


def test_a_first_batch_of_empty_lists_leaves_the_property_for_the_first_numbers_to_type(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, create=True, on_error="report", **options) as client:
        assert client.write(_table(["a"], [[]])).ok
        assert "tags" not in _types(weaviate_server, weaviate_collection)
        later = client.write(_table(["b", "c"], [[1, 2], []]))
    assert later.ok and later.written == 2, later
    assert _types(weaviate_server, weaviate_collection)["tags"] == ["int[]"]
    stored = _stored(weaviate_server, weaviate_collection)
    # the empty list sent before the property was typed is not stored; those sent after it was are
    assert stored["b"] == [1, 2] and stored["a"] is None and stored["c"] == []
    with connect(uri, on_error="report", **options) as client:  # a later write of numbers
        assert client.write(_table(["d"], [[7]])).ok
    assert _stored(weaviate_server, weaviate_collection)["d"] == [7]


def test_empty_lists_and_numbers_in_one_batch_type_the_property_from_the_numbers(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, create=True, on_error="report", **options) as client:
        report = client.write(_table(["a", "b"], [[], [3]]))
    assert report.ok, report
    assert _types(weaviate_server, weaviate_collection)["tags"] == ["int[]"]
    assert _stored(weaviate_server, weaviate_collection)["b"] == [3]
