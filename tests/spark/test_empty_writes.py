"""An empty DataFrame written with ``create=true`` leaves the target a non-empty write would have made.

No task of an empty write has a row, so whatever the target needs must be decided on the driver from
the options and the DataFrame's schema: Milvus's key type (option ``id_type=auto``) from the id
column's Spark type. PostgreSQL, Chroma, Weaviate and Qdrant make theirs on the driver from the
options alone; Pinecone makes none (an index is its host, made elsewhere).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401
from tests.servers import qdrant_grpc

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer
    from tests.integration.milvus_server import LiteServer
    from tests.integration.weaviate_server import WeaviateServer
    from tests.servers.qdrant_grpc import QdrantServer

qdrant_session_server = qdrant_grpc.qdrant_session_server  # the fixture
SCHEMA = "id string, values array<float>"


def write(
    spark: Any, rows: list[Any], schema: str, uri: str, collection: str | None = None, **options: str
) -> None:
    """``rows`` of ``schema`` written with ``create=true`` and ``dimension=4``."""
    writer = spark.createDataFrame(rows, schema).write.format("vectordb").option("uri", uri)
    if collection is not None:
        writer = writer.option("collection", collection)
    for key, value in {"create": "true", "dimension": "4", **options}.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def fields(server: LiteServer, collection: str) -> list[dict[str, Any]]:
    """The collection's fields as pymilvus describes them, without the ids the server numbers them by."""
    described = server.client.describe_collection(collection)
    return [{k: v for k, v in f.items() if k != "field_id"} for f in described["fields"]]


@pytest.mark.parametrize(
    ("id_type", "first_id", "key_type"),
    [("string", "a", "VARCHAR"), ("bigint", 7, "INT64"), ("int", 7, "INT64"), ("smallint", 7, "INT64")],
)
def test_an_empty_milvus_write_makes_the_collection_a_non_empty_one_makes(
    spark: Any, milvus_lite: LiteServer, collection_name: str, id_type: str, first_id: Any, key_type: str
) -> None:
    schema = f"id {id_type}, values array<float>, title string"
    empty = f"{collection_name}_empty"
    try:
        write(spark, [], schema, milvus_lite.uri, empty, id_type="auto")
        assert milvus_lite.client.has_collection(empty)
        assert milvus_lite.client.get_collection_stats(empty)["row_count"] == 0
        write(
            spark,
            [(first_id, [1.0, 2.0, 3.0, 4.0], "t")],
            schema,
            milvus_lite.uri,
            collection_name,
            id_type="auto",
        )
        made = fields(milvus_lite, empty)
        assert made == fields(milvus_lite, collection_name)
        key = next(f for f in made if f.get("is_primary"))
        assert (key["name"], key["type"].name) == ("id", key_type)
        vector = next(f for f in made if f["name"] == "vector")
        assert vector["params"]["dim"] == 4
    finally:
        if milvus_lite.client.has_collection(empty):
            milvus_lite.client.drop_collection(empty)


def test_an_empty_milvus_write_of_named_vectors_makes_the_collection_a_non_empty_one_makes(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    schema = "id bigint, title_vec array<float>, body_vec array<float>"
    named = {"vector_columns": "title:title_vec,body:body_vec", "vector_dimensions": "title:3,body:2"}
    empty = f"{collection_name}_empty"
    try:
        write_named = {"create": "true", **named}
        for rows, name in (([], empty), ([(7, [1.0, 2.0, 3.0], [1.0, 2.0])], collection_name)):
            writer = (
                spark.createDataFrame(rows, schema).write.format("vectordb").option("uri", milvus_lite.uri)
            )
            for key, value in {"collection": name, **write_named}.items():
                writer = writer.option(key, value)
            writer.mode("append").save()
        assert milvus_lite.client.get_collection_stats(empty)["row_count"] == 0
        made = fields(milvus_lite, empty)
        assert made == fields(milvus_lite, collection_name)
        assert {f["name"]: f["type"].name for f in made if f["name"] in ("id", "title", "body")} == {
            "id": "INT64",
            "title": "FLOAT_VECTOR",
            "body": "FLOAT_VECTOR",
        }
    finally:
        if milvus_lite.client.has_collection(empty):
            milvus_lite.client.drop_collection(empty)


def test_an_empty_postgres_write_makes_the_table(spark: Any, pg_server: PgServer, pg_table: str) -> None:
    write(spark, [], SCHEMA, pg_server.uri(pg_table))
    with pg_server.connect() as conn:
        columns = conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (f'"{pg_table}"',),
        ).fetchall()
        assert conn.execute(f'SELECT count(*) FROM "{pg_table}"').fetchone() == (0,)
    assert "vector(4)" in {kind for _, kind in columns}, columns


def test_an_empty_chroma_write_makes_the_collection(
    spark: Any, chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    write(spark, [], SCHEMA, chroma_server.uri(chroma_collection))
    assert chroma_client.get_collection(chroma_collection).count() == 0


def test_an_empty_weaviate_write_makes_the_collection(
    spark: Any, weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    write(
        spark, [], SCHEMA, weaviate_server.uri(weaviate_collection), grpc_port=str(weaviate_server.grpc_port)
    )
    client = weaviate_server.client()
    try:
        assert client.collections.exists(weaviate_collection)
        assert len(client.collections.get(weaviate_collection)) == 0
    finally:
        client.close()


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_an_empty_qdrant_write_makes_the_collection(
    spark: Any, qdrant_session_server: QdrantServer, transport: str
) -> None:
    name = f"empty_{transport}"
    qdrant_session_server.store.delete_collection(name)
    write(spark, [], SCHEMA, qdrant_session_server.uri(transport, name))
    made = qdrant_session_server.store.collections[name]
    assert (made.vectors[""][0], made.points) == (4, {})
