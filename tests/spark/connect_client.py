"""A Spark Connect client program for the Connect tests: ``python connect_client.py sc://HOST:PORT URI [API_KEY]``.

Run in a process of its own: a Connect session changes process-wide state (``SPARK_CONNECT_MODE_ENABLED``,
the shared builder's options) that would turn later classic sessions of the test process remote.
It writes 500 rows, then tries a write with a missing column, and prints one JSON line: the module
of its DataFrame class and the error message of the failed write. Given ``API_KEY``, it writes 300 rows
with ``option("api_key", API_KEY)`` instead, as a notebook does, for the test that looks for the key
in the server's UI and event log.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession

from vectordb.spark import register


def table(n: int, dim: int) -> pa.Table:
    matrix = np.arange(n * dim, dtype=np.float32).reshape(n, dim) / 8
    offsets = pa.array(np.arange(0, n * dim + 1, dim, dtype=np.int32))
    return pa.table(
        {
            "id": [f"k{i}" for i in range(n)],
            "values": pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1))),
        }
    )


def main(url: str, uri: str) -> None:
    spark = SparkSession.builder.remote(url).create()
    try:
        register(spark)  # a Connect client registers explicitly: the lookup runs in the server's JVM
        df = spark.createDataFrame(table(500, 8))
        df.write.format("vectordb").option("uri", uri).option("namespace", "connect").mode("append").save()
        try:
            df.write.format("vectordb").option("uri", uri).option("vector_column", "embedding").mode(
                "append"
            ).save()
            error = ""
        except Exception as exc:
            error = str(exc)
        print(json.dumps({"frame": type(df).__module__, "error": error}))
    finally:
        spark.stop()


def write_with_key(url: str, uri: str, key: str) -> None:
    spark = SparkSession.builder.remote(url).create()
    try:
        register(spark)  # also has the server blank credentials in the statement text it shows
        df = spark.createDataFrame(table(300, 8))
        df.write.format("vectordb").option("uri", uri).option("api_key", key).mode("append").save()
    finally:
        spark.stop()


if __name__ == "__main__":
    if len(sys.argv) > 3:
        write_with_key(sys.argv[1], sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1], sys.argv[2])
