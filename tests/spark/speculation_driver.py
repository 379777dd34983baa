"""A Spark driver with ``spark.speculation=true`` for the speculation test: ``python speculation_driver.py URI [PORT]``.

A session with another conf needs a JVM, hence a process, of its own. It tries a batch write (upserts
and a delete of one id in one partition, with ``op_column``), a streaming write, and, given ``PORT``, a
Spark Connect client's write through the Connect plugin it starts there (``connect URL URI``: the client
in a process of its own, see connect_client.py). It prints one JSON line: each write's error text.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from typing import Any

STREAM_WAIT_S = 120


def rows(spark: Any) -> Any:
    """One partition of 700 rows; row 60 deletes the id row 30 upserts."""
    return spark.range(0, 700, numPartitions=1).selectExpr(
        "concat('r', cast(case when id = 60 then 30 else id end as string)) as id",
        "array(cast(id as float), 0.5f, -1.0f) as values",
        "case when id = 60 then 'delete' else 'upsert' end as op",
    )


def error_of(write: Any) -> str:
    try:
        write()
    except Exception as exc:
        return str(exc)
    return ""


def classic(uri: str, port: str | None) -> None:
    from pyspark.sql import SparkSession

    from vectordb.spark import register

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("vectordb-speculation-test")
        .config("spark.speculation", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
    )
    if port:
        builder = (
            builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
            .config("spark.connect.grpc.binding.address", "127.0.0.1")
            .config("spark.connect.grpc.binding.port", port)
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    said: dict[str, str] = {}
    try:
        said["batch"] = error_of(
            lambda: (
                rows(spark)
                .write.format("vectordb")
                .option("uri", uri)
                .option("op_column", "op")
                .option("on_error", "report")
                .mode("append")
                .save()
            )
        )
        said["stream"] = error_of(lambda: stream(spark, uri))
        said["set"] = error_of(lambda: spark.conf.set("spark.speculation", "false"))
        if port:
            client = subprocess.run(
                [sys.executable, __file__, "connect", f"sc://127.0.0.1:{port}", uri],
                capture_output=True,
                text=True,
                timeout=300,
            )
            said["connect"] = (
                client.stdout.strip().splitlines()[-1] if client.stdout.strip() else client.stderr
            )
    finally:
        spark.stop()
    print(json.dumps(said))


def stream(spark: Any, uri: str) -> None:
    with tempfile.TemporaryDirectory() as checkpoint:
        query = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", 20)
            .option("numPartitions", 2)
            .load()
            .selectExpr(
                "concat('s', cast(value as string)) as id",
                "array(cast(value as float), 0.5f, -1.0f) as values",
            )
            .writeStream.format("vectordb")
            .option("uri", uri)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="0 seconds")
            .start()
        )
        deadline = time.monotonic() + STREAM_WAIT_S
        while query.isActive and not query.recentProgress and time.monotonic() < deadline:
            time.sleep(0.5)  # until the first micro-batch failed or committed
        error = query.exception()
        query.stop()
        if error is not None:
            raise error


def connect(url: str, uri: str) -> None:
    from pyspark.sql import SparkSession

    from vectordb.spark import register

    spark = SparkSession.builder.remote(url).create()
    try:
        register(spark)
        error = error_of(
            lambda: (
                rows(spark)
                .write.format("vectordb")
                .option("uri", uri)
                .option("op_column", "op")
                .mode("append")
                .save()
            )
        )
        print(json.dumps(error))
    finally:
        spark.stop()


if __name__ == "__main__":
    if sys.argv[1] == "connect":
        connect(sys.argv[2], sys.argv[3])
    else:
        classic(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
