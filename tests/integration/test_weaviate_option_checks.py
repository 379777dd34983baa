"""Weaviate options checked against the collection before any row is sent: a single vector aimed at a
multi-vector index, and an ``original_id_key`` that is no property name Weaviate takes. Against the
real server the fixtures start."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits


def _count(server: WeaviateServer, collection: str) -> int:
    return len(server.rest("GET", f"/v1/objects?class={collection}&limit=100").json()["objects"])


@pytest.mark.parametrize("vector_name", [None, "default"])
def test_a_single_vector_into_a_multi_vector_index_is_a_config_error(
    weaviate_server: WeaviateServer, weaviate_collection: str, vector_name: str | None
) -> None:
    index = {"vectorizer": {"none": {}}, "vectorIndexType": "hnsw"}
    multi = {**index, "vectorIndexConfig": {"multivector": {"enabled": True}}}
    body = {"class": weaviate_collection, "vectorConfig": {"default": multi}}
    assert weaviate_server.rest("POST", "/v1/schema", json=body).status_code == 200
    rows = [{"id": "a", "values": [1.0, 0, 0, 0]}, {"id": "b", "values": [0, 1.0, 0, 0]}]
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    option = "vector_name" if vector_name else "vector_column"
    with (
        connect(uri, vector_name=vector_name, on_error="report", **options) as client,
        pytest.raises(
            ConfigError,
            match=rf"^option {option}: vector 'default' of collection '\w+' has a multi-vector index .*"
            "multi_vector_columns",
        ),
    ):
        client.write(rows)
    assert (
        _count(weaviate_server, weaviate_collection) == 0
    )  # before, the objects were stored, reported failed


@pytest.mark.parametrize("key", ["orig id", "", "id", "Id", "_id", "_additional", "Ünï", "x" * 232])
def test_an_original_id_key_weaviate_cannot_name_is_a_config_error(
    weaviate_server: WeaviateServer, weaviate_collection: str, key: str
) -> None:
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with (
        pytest.raises(ConfigError, match=r"^option original_id_key: .*" + re.escape(repr(key))),
        connect(uri, original_id_key=key, create=True, dimension=4, **options) as client,
    ):
        client.write([{"id": "doc-1", "values": [1.0, 0, 0, 0]}])
    assert weaviate_server.rest("GET", f"/v1/schema/{weaviate_collection}").status_code == 404  # none made


@pytest.mark.parametrize("key", ["source_id", "_orig", "X" * 231])
def test_an_original_id_key_weaviate_takes_keeps_the_ids(
    weaviate_server: WeaviateServer, weaviate_collection: str, key: str
) -> None:
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, original_id_key=key, create=True, dimension=4, on_error="report", **options) as client:
        report = client.write([{"id": "doc-1", "values": [1.0, 0, 0, 0]}])
    assert report.ok, report
    (stored,) = weaviate_server.rest("GET", f"/v1/objects?class={weaviate_collection}").json()["objects"]
    assert stored["properties"] == {key[:1].lower() + key[1:]: "doc-1"}
