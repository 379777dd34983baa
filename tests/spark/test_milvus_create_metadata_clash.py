"""create=true into Milvus makes the collection pymilvus's quick setup makes (key ``id``, vector ``vector``)
whatever options id_column and vector_column say, so a metadata column of one of those names is refused
before anything is made. In Spark the check saw option ``metadata_columns`` alone, empty by default (every
other column is metadata): the DataFrame's ``vector`` column passed, the driver made the collection, and
every row failed in every task. The driver now checks the columns each task's reader takes as metadata:
a ``ConfigError`` naming the column and the option, no job, no collection. Milvus Lite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from vectordb.connector import ConfigError

from .conftest import job_ids

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

VECTORS = pa.list_(pa.float32())


def frame(spark: Any, **extra: pa.Array) -> Any:
    columns = {"doc_id": pa.array(["a", "b"]), "emb": pa.array([[1.0, 2.0], [3.0, 4.0]], VECTORS)}
    return spark.createDataFrame(pa.table({**columns, "title": pa.array(["t1", "t2"]), **extra}).to_pandas())


def save(df: Any, uri: str, collection: str, **options: str) -> None:
    writer = df.write.format("vectordb").option("uri", uri).option("collection", collection)
    options = {"create": "true", "dimension": "2", "id_column": "doc_id", "vector_column": "emb", **options}
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


@pytest.mark.parametrize("id_type", ["auto", "varchar"])
def test_a_metadata_column_named_like_a_field_create_makes_fails_before_any_job(
    spark: Any, milvus_lite: LiteServer, collection_name: str, id_type: str
) -> None:
    df = frame(spark, vector=pa.array(["x", "y"]), id=pa.array([10, 11]))
    before = job_ids(spark)
    with pytest.raises(
        Exception, match=r"option metadata_columns: columns 'vector', 'id' would be metadata"
    ) as exc:
        save(df, milvus_lite.uri, collection_name, id_type=id_type)
    assert ConfigError.__name__ in str(exc.value) and "key 'id', vector 'vector'" in str(exc.value)
    assert job_ids(spark) == before
    assert not milvus_lite.client.has_collection(collection_name)


def test_columns_of_other_names_are_written_as_metadata(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    save(frame(spark, n=pa.array([1, 2])), milvus_lite.uri, collection_name)
    milvus_lite.client.load_collection(collection_name)
    rows = milvus_lite.client.query(collection_name, filter="", output_fields=["*"], limit=10)
    assert sorted((r["id"], r["title"], r["n"]) for r in rows) == [("a", "t1", 1), ("b", "t2", 2)]


def test_an_explicit_metadata_columns_leaving_the_clash_out_writes(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    df = frame(spark, vector=pa.array(["x", "y"]))
    save(df, milvus_lite.uri, collection_name, metadata_columns="title")
    milvus_lite.client.load_collection(collection_name)
    rows = milvus_lite.client.query(collection_name, filter="", output_fields=["*"], limit=10)
    got = sorted((r["id"], r["title"], [float(x) for x in r["vector"]]) for r in rows)
    assert got == [("a", "t1", [1.0, 2.0]), ("b", "t2", [3.0, 4.0])]  # the field holds emb, not the text
