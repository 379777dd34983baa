"""The Databricks notebook (``examples/databricks/ingest_vectors.py``) writes a table, then writes its retryable
dead letters again. The second write dropped only ``error``, ``retryable`` and ``attempts`` and took no
``metadata_columns``: every other column of the letters was stored, also those the first write left out. Its
cells run here as they are (Spark local, the project's Pinecone gRPC test server standing for the index): the
first write meets an index that answers UNAVAILABLE until its retries run out, the second a healthy one."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import start_server_process
from tests.servers.pinecone_rules import dense
from tests.servers.script import FaultScript

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "databricks" / "ingest_vectors.py"
DIMENSION = 1536  # the notebook's option dimension
STORED = {"title", "url", "updated_at"}  # the notebook's metadata_columns


def cells(*words: str) -> list[str]:
    """The notebook's code cells, in order, that hold any of ``words``."""
    found = [c for c in NOTEBOOK.read_text().split("# COMMAND ----------") if "MAGIC" not in c]
    return [c for c in found if any(w in c for w in words)]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("notebook-retry")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def test_the_retried_rows_store_the_columns_the_first_write_stores(spark: Any, tmp_path: Path) -> None:
    rows = [
        (f"doc-{i}", [float(i + 1)] * DIMENSION, f"title {i}", f"https://x/{i}", f"internal note {i}")
        for i in range(3)
    ]
    table = spark.createDataFrame(
        rows, "id string, embedding array<float>, title string, url string, internal string"
    ).selectExpr("*", "timestamp'2026-01-02 03:04:05' AS updated_at")
    table.createOrReplaceTempView("doc_embeddings")
    with start_server_process("grpc", index=dense(DIMENSION)) as server:
        notebook: dict[str, Any] = {
            "spark": spark,
            "source_table": "doc_embeddings",
            "uri": server.uri,
            "namespace": "docs",
            "volume": str(tmp_path),
            "api_key": "k",
            "display": lambda df: df.collect(),  # Databricks' display: the cell's query runs
        }
        (write,) = cells("spark.table(source_table)")
        (read_letters,) = cells('spark.read.parquet(f"{volume}/dead_letters")')
        (retry,) = cells('dead.where("retryable")')
        server.script(fail_first=1_000)  # every request of the first write: UNAVAILABLE, retryable
        exec(write, notebook)
        exec(read_letters, notebook)
        letters = notebook["dead"]
        assert sorted(r["id"] for r in letters.where("retryable").collect()) == ["doc-0", "doc-1", "doc-2"]
        assert "internal" in letters.columns  # a letter holds every column of its row
        server.script(FaultScript())
        exec(retry, notebook)
        final = server.arrived().final
    assert sorted(i for _, i in final) == ["doc-0", "doc-1", "doc-2"]
    for (ns, vector_id), vector in final.items():
        assert ns == "docs"
        assert set(vector.metadata or {}) == STORED, (vector_id, vector.metadata)
        assert vector.metadata["title"] == f"title {vector_id[-1]}"
