"""Weaviate: nested objects (Arrow structs and maps, dict values) whose fields hold nulls, and empty
objects. A null sent inside an object made auto-schema type that nested property ``text``, so every
later object with a number there failed; an empty object failed its row. Both are left out, as a
property's null is. Against the real server the fixtures start, read back with weaviate-client."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from vectordb.connector import connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits

N = 40
INFO = pa.struct([("source", pa.string()), ("score", pa.int64())])


def _make(server: WeaviateServer, collection: str) -> None:
    body = {
        "class": collection,
        "vectorConfig": {"default": {"vectorizer": {"none": {}}, "vectorIndexType": "hnsw"}},
    }
    assert server.rest("POST", "/v1/schema", json=body).status_code == 200


def _stored(server: WeaviateServer, collection: str) -> dict[str, dict[str, Any]]:
    """Every object's properties by original id, through weaviate-client's iterator (which fails on an
    object whose values do not match its schema)."""
    client = server.client()
    try:
        view = client.collections.get(collection)
        return {o.properties["original_id"]: o.properties for o in view.iterator()}
    finally:
        client.close()


@pytest.mark.parametrize("create", [False, True])
def test_a_null_in_a_struct_field_leaves_every_row_writable(
    weaviate_server: WeaviateServer, weaviate_collection: str, create: bool
) -> None:
    if not create:
        _make(weaviate_server, weaviate_collection)
    info = pa.array(
        [{"source": "web", "score": None}] + [{"source": "web", "score": i} for i in range(1, N)], INFO
    )
    values = pa.array([[1.0, float(i), 0.0, 0.0] for i in range(N)], pa.list_(pa.float32()))
    data = pa.table({"id": [f"doc-{i}" for i in range(N)], "values": values, "info": info})
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, create=create, dimension=4, on_error="report", **options) as client:
        report = client.write(data)
    assert report.ok and report.written == N, report
    stored = _stored(weaviate_server, weaviate_collection)
    assert len(stored) == N
    assert stored["doc-0"]["info"]["source"] == "web" and stored["doc-0"]["info"].get("score") is None
    assert [stored[f"doc-{i}"]["info"]["score"] for i in range(1, N)] == list(range(1, N))


def test_a_null_deep_in_a_dict_value_is_left_out(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    first = {
        "id": "a",
        "values": [1.0, 0, 0, 0],
        "metadata": {"st": {"p": None, "q": "u", "in": {"r": None, "s": 1}}},
    }
    second = {
        "id": "b",
        "values": [0, 1.0, 0, 0],
        "metadata": {"st": {"p": 2.5, "q": "v", "in": {"r": 3.5, "s": 2}}},
    }
    with connect(uri, create=True, on_error="report", **options) as client:
        assert client.write([first]).ok
        report = client.write([second])
    assert report.ok, report
    stored = _stored(weaviate_server, weaviate_collection)
    assert stored["b"]["st"]["p"] == 2.5 and stored["b"]["st"]["in"]["r"] == 3.5
    assert stored["a"]["st"].get("p") is None and stored["a"]["st"]["in"]["s"] == 1


@pytest.mark.parametrize("create", [False, True])
def test_an_empty_map_before_any_entries_is_left_out(
    weaviate_server: WeaviateServer, weaviate_collection: str, create: bool
) -> None:
    if not create:
        _make(weaviate_server, weaviate_collection)
    data = pa.table(
        {
            "id": ["empty", "entries", "null", "empty_again", "all_null"],
            "values": pa.array([[1.0, float(i), 0, 0] for i in range(5)], pa.list_(pa.float32())),
            "tags": pa.array([[], [("k", "v")], None, [], [("k", None)]], pa.map_(pa.string(), pa.string())),
        }
    )
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    # one row a request: the empty map reaches the server before any entry has made the property
    with connect(uri, create=create, dimension=4, batch_size=1, on_error="report", **options) as client:
        report = client.write(data)
    assert report.ok and report.written == 5, report
    stored = _stored(weaviate_server, weaviate_collection)
    assert stored["entries"]["tags"] == {"k": "v"}
    assert {k: stored[k].get("tags") for k in ("empty", "null", "empty_again", "all_null")} == dict.fromkeys(
        ("empty", "null", "empty_again", "all_null")
    )


def test_create_declares_a_structs_fields_with_their_arrow_types(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    kind = pa.struct(
        [
            ("source", pa.string()),
            ("score", pa.int64()),
            ("when", pa.timestamp("us")),
            ("inner", pa.struct([("n", pa.float64()), ("ok", pa.bool_())])),
        ]
    )
    when = dt.datetime(2024, 5, 6, 7, 8, 9)
    info = pa.array(
        [{"source": "web", "score": None, "when": None, "inner": {"n": None, "ok": True}}]
        + [
            {"source": "web", "score": i, "when": when, "inner": {"n": i / 2, "ok": False}}
            for i in range(1, N)
        ],
        kind,
    )
    values = pa.array([[1.0, float(i), 0.0, 0.0] for i in range(N)], pa.list_(pa.float32()))
    data = pa.table({"id": [f"doc-{i}" for i in range(N)], "values": values, "info": info})
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, create=True, dimension=4, on_error="report", **options) as client:
        report = client.write(data)
    assert report.ok and report.written == N, report
    schema = weaviate_server.rest("GET", f"/v1/schema/{weaviate_collection}").json()
    (prop,) = [p for p in schema["properties"] if p["name"] == "info"]
    nested = {p["name"]: (p["dataType"], p.get("nestedProperties")) for p in prop["nestedProperties"]}
    assert {k: v[0] for k, v in nested.items()} == {
        "source": ["text"],
        "score": ["int"],  # auto-schema would make a whole number "number"
        "when": ["date"],
        "inner": ["object"],
    }
    assert {p["name"]: p["dataType"] for p in nested["inner"][1]} == {"n": ["number"], "ok": ["boolean"]}
    stored = _stored(weaviate_server, weaviate_collection)
    assert stored["doc-3"]["info"]["score"] == 3 and isinstance(stored["doc-3"]["info"]["score"], int)
    assert stored["doc-3"]["info"]["inner"] == {"n": 1.5, "ok": False}
    assert stored["doc-3"]["info"]["when"] == when.replace(tzinfo=dt.UTC)
    assert stored["doc-0"]["info"]["inner"] == {"ok": True}
