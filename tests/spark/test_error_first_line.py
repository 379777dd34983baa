"""A configuration error through ``df.write.format("vectordb")…save()`` is the first line the user reads.

Spark's driver calls the data source in a Python worker and puts what that worker sends back into its
own ``PYTHON_DATA_SOURCE_ERROR``: by default a traceback of the connector's frames with the reason last,
14-19 lines down. For a ``ConnectorError`` the worker sends the exception alone (``_reason_first`` in
``spark/datasource.py``), so the first line of ``str(exception)`` is Spark's prefix and then the reason;
any other exception keeps its traceback.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.connector.errors import ConfigError

from .conftest import job_ids, vectors_table

PREFIX = "[PYTHON_DATA_SOURCE_ERROR] "

CASES = {  # options: the first line of the error after Spark's words
    "misspelled option": (
        {"batchsize": "10"},
        "vectordb.connector.errors.ConfigError: invalid options: unknown option 'batchsize' "
        "(did you mean 'batch_size'?)",
    ),
    "misspelled scheme": (
        {"uri": "milvus+lyte://./vectors.db"},
        "vectordb.connector.errors.ConfigError: option uri: milvus has no transport 'lyte' "
        "(did you mean 'milvus+lite'?)",
    ),
    "missing uri": ({"uri": None}, "vectordb.connector.errors.ConfigError: option uri is required"),
}


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    return spark.createDataFrame(vectors_table(10, 4))


def save(frame: Any, options: dict[str, str | None], *, uri: str) -> Exception:
    writer = frame.write.format("vectordb").mode("append")
    for key, value in {"uri": uri, **options}.items():
        if value is not None:
            writer = writer.option(key, value)
    with pytest.raises(Exception) as caught:
        writer.save()
    return caught.value


@pytest.mark.parametrize("case", list(CASES))
def test_a_config_error_is_the_first_line_without_our_frames(
    spark: Any, frame: Any, grpc_server: ServerHandle, case: str
) -> None:
    options, reason = CASES[case]
    before = job_ids(spark)
    error = save(frame, options, uri=grpc_server.uri)
    text = str(error)
    first = text.splitlines()[0]
    assert first.startswith(PREFIX), text
    assert reason in first, text
    # the whole message: Spark's words and the reason, then Spark's SQLSTATE line; no traceback of ours
    assert "Traceback" not in text and "datasource.py" not in text and len(text.splitlines()) <= 2, text
    assert job_ids(spark) == before
    assert grpc_server.arrived().requests == []


def test_a_failed_job_says_why_in_its_first_line(spark: Any, frame: Any, grpc_server: ServerHandle) -> None:
    """``on_error=fail`` raises ``WriteFailed`` in ``commit()``, in another of Spark's driver-side workers."""
    grpc_server.script(reject_ids=frozenset({"v5"}))
    text = str(save(frame, {}, uri=grpc_server.uri))
    first = text.splitlines()[0]
    assert first.startswith(PREFIX), text
    assert (
        f"vectordb.connector.errors.WriteFailed: {grpc_server.uri}: 1 of 10 rows failed (first ids: v5)"
        in first
    )
    assert "Traceback" not in text, text


def test_a_streams_config_error_is_the_first_line_after_sparks_stream_words(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    """``writeStream``: ``streamWriter()`` fails in the query's first micro-batch."""
    stream = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 1).load()
    stream = stream.selectExpr("cast(value as string) as id", "array(cast(value as float), 1.0f) as values")
    query = (
        stream.writeStream.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("batchsize", "10")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        with pytest.raises(Exception) as caught:
            query.awaitTermination(120)
    finally:
        query.stop()
    text = str(caught.value)
    first = text.splitlines()[0]
    assert "[STREAM_FAILED]" in first and PREFIX in first, text
    assert first.endswith(CASES["misspelled option"][1]), text
    assert "Traceback" not in text, text


def test_an_error_that_is_not_the_connectors_keeps_its_traceback(
    spark: Any, frame: Any, grpc_server: ServerHandle
) -> None:
    """A bug needs its frames; and the worker that sent a reason alone was not reused for this one."""
    from pyspark.sql.datasource import DataSource

    class BrokenSource(DataSource):  # local, so Spark's workers get it by value
        @classmethod
        def name(cls) -> str:
            return "vectordb_test_broken"

        def writer(self, schema: Any, overwrite: bool) -> Any:
            raise ZeroDivisionError("a bug in writer()")

    spark.dataSource.register(BrokenSource)
    assert "ConfigError" in str(save(frame, CASES["misspelled option"][0], uri=grpc_server.uri))
    with pytest.raises(Exception) as caught:
        frame.write.format("vectordb_test_broken").mode("append").save()
    text = str(caught.value)
    assert "Traceback (most recent call last)" in text and "ZeroDivisionError: a bug in writer()" in text, (
        text
    )


def test_outside_sparks_workers_nothing_is_hidden(monkeypatch: pytest.MonkeyPatch, frame: Any) -> None:
    """Called in the user's own process, the data source leaves its environment alone (a JVM started
    from it later would hide every worker's traceback)."""
    from vectordb.spark.datasource import VectorDataSource

    monkeypatch.delenv("SPARK_HIDE_TRACEBACK", raising=False)
    with pytest.raises(ConfigError, match="option uri is required"):
        VectorDataSource(options={}).writer(frame.schema, False)
    assert "SPARK_HIDE_TRACEBACK" not in os.environ
