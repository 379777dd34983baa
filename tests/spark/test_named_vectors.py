"""Several vectors a row in Spark: the driver refuses them for a database that stores one vector a record,
naming the option and the database, before any job; the column checks take ``array<array<float>>``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.connector.backends.registry import backend_class
from vectordb.connector.errors import ConfigError
from vectordb.spark.plan import plan_write

from .conftest import job_ids


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    table = pa.table(
        {
            "id": ["a", "b"],
            "title_vec": pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32())),
            "tokens": pa.array([[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]]], pa.list_(pa.list_(pa.float32()))),
        }
    )
    return spark.createDataFrame(table)


def test_pinecone_refuses_named_vectors_on_the_driver(
    spark: Any, frame: Any, grpc_server: ServerHandle
) -> None:
    before = job_ids(spark)
    with pytest.raises(Exception, match=r"PYTHON_DATA_SOURCE_ERROR") as caught:
        (
            frame.write.format("vectordb")
            .mode("append")
            .option("uri", grpc_server.uri)
            .option("vector_columns", "title:title_vec")
            .option("multi_vector_columns", "colbert:tokens")
            .save()
        )
    message = str(caught.value)
    assert "ConfigError" in message
    assert "option vector_columns: pinecone stores one dense vector a record" in message
    assert job_ids(spark) == before
    assert grpc_server.arrived().requests == []


@pytest.mark.parametrize(
    ("uri", "option", "database"),
    [
        ("pinecone+grpc://127.0.0.1:1", "multi_vector_columns", "pinecone"),
        ("chroma://127.0.0.1:1/docs", "multi_vector_columns", "chroma"),
        ("chroma://127.0.0.1:1/docs", "vector_columns", "chroma"),
    ],
)
def test_plan_write_names_the_option_and_the_database(
    frame: Any, uri: str, option: str, database: str
) -> None:
    value = {"vector_columns": "title:title_vec", "multi_vector_columns": "colbert:tokens"}[option]
    with pytest.raises(ConfigError, match=f"option {option}: {database} stores one dense vector a record"):
        plan_write({"uri": uri, "api_key": "k", option: value}, frame.schema, overwrite=False)


def test_the_driver_reads_array_of_array_columns(frame: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a database that stores them, Spark's array<array<float>> passes the driver's column check and
    the wrong shape is a ConfigError naming the option."""
    qdrant = backend_class("qdrant")
    asked: list[dict[str, int | None]] = []

    def check_named_target(self: Any, transport: Any, dimensions: dict[str, int | None]) -> dict[str, int]:
        asked.append(dict(dimensions))
        return {"title": 2, "colbert": 2}

    monkeypatch.setattr(qdrant, "named_vectors", "yes")
    monkeypatch.setattr(qdrant, "multi_vectors", "yes")
    monkeypatch.setattr(qdrant, "check_named_target", check_named_target)
    uri = "qdrant://127.0.0.1:1/docs"
    plan = plan_write(
        {"uri": uri, "vector_columns": "title:title_vec", "multi_vector_columns": "colbert:tokens"},
        frame.schema,
        overwrite=False,
    )
    assert asked == [{"title": None, "colbert": None}]
    assert plan.options.vector_dimensions == {"title": 2, "colbert": 2}  # for every task alike
    with pytest.raises(ConfigError, match="option multi_vector_columns: column 'title_vec' has type"):
        plan_write({"uri": uri, "multi_vector_columns": "colbert:title_vec"}, frame.schema, overwrite=False)
