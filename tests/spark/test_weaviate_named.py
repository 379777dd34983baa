"""Several vectors a row through Spark into a real Weaviate (weaviate-server v1.35.2): ``array<float>`` columns
as named dense vectors and an ``array<array<float>>`` column as a multi-vector, written by the executors over
gRPC and read back exactly per name with weaviate-client; a bad row becomes a dead letter naming its vector;
an existing collection that lacks a name, or has it single where the write's is multi, fails on the driver with
a ConfigError before any job."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration.test_weaviate_named import Rows, stored

from .conftest import job_ids

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer


def frame(spark: Any, table: pa.Table) -> Any:
    """The table as Spark has it: ``array<float>`` and ``array<array<float>>`` columns."""
    columns = {
        name: table[name].cast(pa.list_(pa.float32())) if name.endswith("_vec") else table[name]
        for name in table.column_names
    }
    return spark.createDataFrame(pa.table(columns))


def save(df: Any, server: WeaviateServer, name: str, **options: str) -> None:
    writer = df.write.format("vectordb").mode("append")
    options = {
        "uri": server.uri(name),
        "grpc_port": str(server.grpc_port),
        "vector_columns": "title:title_vec,body:body_vec",
        "multi_vector_columns": "colbert:tokens",
        **options,
    }
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


def test_spark_writes_every_name_exactly_and_a_bad_row_is_a_dead_letter(
    spark: Any, weaviate_server: WeaviateServer, weaviate_collection: str, tmp_path: Path
) -> None:
    rows = Rows([f"s{i}" for i in range(300)], seed=11)
    table = rows.table(n=list(range(300)))
    tokens = table["tokens"].to_pylist()
    tokens[7] = [
        [1.0, 2.0, 3.0, 4.0],
        [1.0, 2.0, 3.0],
    ]  # vectors of different lengths: refused before sending
    table = table.set_column(
        table.column_names.index("tokens"), "tokens", pa.array(tokens, table["tokens"].type)
    )
    save(
        frame(spark, table).repartition(3),
        weaviate_server,
        weaviate_collection,
        create="true",
        vector_dimensions="title:8,body:5,colbert:4",
        metric="euclidean",
        on_error="dead_letter",
        dead_letter_path=str(tmp_path / "dead"),
    )
    expected = rows.expected()
    del expected["s7"]
    assert stored(weaviate_server, weaviate_collection) == expected
    letters = pq.read_table(tmp_path / "dead").to_pylist()
    assert [(d["id"], d["error"]) for d in letters] == [
        ("s7", "Invalid: multi-vector 'colbert' holds vectors of different lengths (3 to 4)")
    ]
    assert letters[0]["tokens"] == tokens[7]  # the whole row


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ({"title": False, "colbert": True}, "option vector_columns: collection '\\w+' has no vector 'body'"),
        (
            {"title": False, "body": False, "colbert": False},
            "option multi_vector_columns: vector 'colbert' of collection '\\w+' has a single-vector index",
        ),
    ],
)
def test_an_existing_collection_is_checked_on_the_driver_before_any_job(
    spark: Any,
    weaviate_server: WeaviateServer,
    weaviate_collection: str,
    vectors: dict[str, bool],
    message: str,
) -> None:
    config = {
        name: {
            "vectorizer": {"none": {}},
            "vectorIndexType": "hnsw",
            "vectorIndexConfig": {"multivector": {"enabled": True}} if multi else {},
        }
        for name, multi in vectors.items()
    }
    made = weaviate_server.rest(
        "POST", "/v1/schema", json={"class": weaviate_collection, "vectorConfig": config}
    )
    assert made.status_code == 200, made.text
    df = frame(spark, Rows(["a", "b"], seed=12).table())
    before = job_ids(spark)
    with pytest.raises(Exception, match="PYTHON_DATA_SOURCE_ERROR") as caught:
        save(df, weaviate_server, weaviate_collection)
    first = str(caught.value)
    assert "ConfigError" in first
    assert re.search(message, first), first
    assert job_ids(spark) == before
    assert stored(weaviate_server, weaviate_collection) == {}
