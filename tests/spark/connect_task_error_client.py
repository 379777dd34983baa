"""A Spark Connect client for ``test_task_error_first_line``: ``python connect_task_error_client.py sc://HOST:PORT OPTIONS``.

Run in a process of its own (a Connect session changes process-wide state). It writes 40 rows with the
options given as a JSON object, which make every task fail, and prints one JSON line: the module of its
DataFrame class and the error message of the failed write.
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

from tests.spark.connect_client import table
from vectordb.spark import register


def main(url: str, options: dict[str, str]) -> None:
    spark = SparkSession.builder.remote(url).create()
    try:
        register(spark)
        df = spark.createDataFrame(table(40, 4))
        writer = df.write.format("vectordb").mode("append")
        for key, value in options.items():
            writer = writer.option(key, value)
        try:
            writer.save()
            error = ""
        except Exception as exc:
            error = str(exc)
        print(json.dumps({"frame": type(df).__module__, "error": error}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
