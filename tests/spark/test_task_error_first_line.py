"""A fatal connector error raised inside a Spark task is the reason, not a traceback of the connector's frames.

A key revoked after the driver's check (here: ``verify=false``, so the driver never asks, and a key the
server refuses) fails every task with ``AuthError``. The executor's Python worker sends Spark the
formatted exception: by default 50-60 lines of our frames with the reason last. ``_reason_first`` in
``spark/datasource.py`` has it send the exception alone, as on the driver, so what the caller catches is
Spark's words and then the reason; the key never shows, even from a server that quotes it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle

from .conftest import connect_missing, vectors_table

KEY = "pk-TASKFATAL-7e6d5c4b3a"
REASON = "vectordb.connector.errors.AuthError: "
CLIENT = Path(__file__).with_name("connect_task_error_client.py")


# The tests whose jobs fail take a server of their own (``own_server``): when a stage fails, a task attempt
# Spark is still cancelling can send its rows seconds later, into the next test's shared server.


def refusing(server: ServerHandle) -> ServerHandle:
    """The server wants another key and quotes the one it got in its refusal."""
    server.script(api_key="pk-the-right-one", echo_key=True)
    return server


def options(server: ServerHandle) -> dict[str, str]:
    return {"uri": server.uri, "api_key": KEY, "verify": "false", "max_retries": "0"}


def reason_line(text: str, server: ServerHandle) -> int:
    """Where the reason is; none of our frames and no key anywhere."""
    lines = text.splitlines()
    line = next((n for n, s in enumerate(lines) if REASON in s), None)
    assert line is not None, text
    assert server.uri in lines[line] and "UNAUTHENTICATED" in lines[line], text
    assert "vectordb/spark/" not in text and "vectordb/connector/" not in text, text
    assert KEY not in text, text
    return line


def assert_reason_first(text: str, server: ServerHandle) -> None:
    """The reason within Spark's first lines, and no traceback."""
    assert reason_line(text, server) <= 3, text
    assert "Traceback" not in text, text


def test_a_fatal_error_in_a_task_reaches_the_caller_as_its_reason(
    spark: Any, own_server: ServerHandle
) -> None:
    df = spark.createDataFrame(vectors_table(40, 4)).repartition(2)
    writer = df.write.format("vectordb").mode("append")
    for key, value in options(refusing(own_server)).items():
        writer = writer.option(key, value)
    with pytest.raises(Exception) as caught:
        writer.save()
    text = str(caught.value)
    assert_reason_first(text, own_server)
    assert len(text.splitlines()) <= 3, text


def test_in_foreach_batch_too(spark: Any, own_server: ServerHandle, tmp_path: Path) -> None:
    refusing(own_server)

    def write(batch: Any, batch_id: int) -> None:
        writer = batch.write.format("vectordb").mode("append")
        for key, value in options(own_server).items():
            writer = writer.option(key, value)
        writer.save()

    stream = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
    stream = stream.selectExpr("cast(value as string) as id", "array(cast(value as float), 1.0f) as values")
    query = (
        stream.writeStream.foreachBatch(write)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        with pytest.raises(Exception) as caught:
            query.awaitTermination(250)  # returns False without raising when it runs out
    finally:
        query.stop()
    # Spark shows the user's function's frames (py4j formats them in the caller's process), then the
    # task's error as the batch write shows it: Spark's words, and the reason on the next line
    text = str(caught.value)
    lines = text.splitlines()
    line = reason_line(text, own_server)
    assert lines[line - 1].endswith("PythonException: An exception was thrown from the Python worker:"), text


def test_in_a_stream_written_to_vectordb(spark: Any, own_server: ServerHandle, tmp_path: Path) -> None:
    """``writeStream.format("vectordb")``: the task runs ``VectorStreamWriter.write``."""
    stream = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
    stream = stream.selectExpr("cast(value as string) as id", "array(cast(value as float), 1.0f) as values")
    writer = stream.writeStream.format("vectordb").option("checkpointLocation", str(tmp_path / "checkpoint"))
    for key, value in options(refusing(own_server)).items():
        writer = writer.option(key, value)
    query = writer.start()
    try:
        with pytest.raises(Exception) as caught:
            query.awaitTermination(250)  # returns False without raising when it runs out
    finally:
        query.stop()
    assert_reason_first(str(caught.value), own_server)


def test_through_spark_connect(spark: Any, own_server: ServerHandle) -> None:
    missing = connect_missing()
    if missing:
        pytest.skip(missing)
    port = spark.conf.get("spark.connect.grpc.binding.port")
    result = subprocess.run(
        [sys.executable, str(CLIENT), f"sc://127.0.0.1:{port}", json.dumps(options(refusing(own_server)))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    said = json.loads(result.stdout.strip().splitlines()[-1])
    assert said["frame"].startswith("pyspark.sql.connect")
    assert_reason_first(said["error"], own_server)


def test_a_bug_in_a_task_keeps_its_traceback(spark: Any, grpc_server: ServerHandle) -> None:
    """Only the connector's own errors lose their frames; and a worker that sent a reason alone was not
    reused for this task (the failure above ran first)."""
    from vectordb.spark.datasource import VectorDataSource

    class BrokenPlanSource(VectorDataSource):  # local, so Spark's workers get it by value
        @classmethod
        def name(cls) -> str:
            return "vectordb_test_task_bug"

        def writer(self, schema: Any, overwrite: bool) -> Any:
            writer = super().writer(schema, overwrite)
            writer.plan = None  # write_task fails on it in the task, with an AttributeError
            return writer

    spark.dataSource.register(BrokenPlanSource)
    df = spark.createDataFrame(vectors_table(10, 4)).repartition(2)
    with pytest.raises(Exception) as caught:
        df.write.format("vectordb_test_task_bug").option("uri", grpc_server.uri).mode("append").save()
    text = str(caught.value)
    assert "Traceback (most recent call last)" in text and "AttributeError" in text, text
    assert "in write_task" in text, text  # the task's own error, not one from abort()
    assert grpc_server.arrived().requests == []
