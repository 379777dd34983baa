"""A file load as a Structured Streaming query, run by the resume test in its own process (which it kills).

``python load_driver.py CONFIG.json``: reads the Parquet files of ``input`` as a stream, at most
``max_files`` files a micro-batch, and writes them with ``writeStream.format("vectordb")`` under
``trigger(availableNow=True)`` and a checkpoint: run again after a failure, it starts after the last
micro-batch Spark recorded as done. It ends when every file present at its start is written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from vectordb.spark import register


def main(path: str) -> None:
    config = json.loads(Path(path).read_text())
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("vectordb-resumable-load")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    try:
        schema = spark.read.parquet(config["input"]).schema  # a file stream needs its schema stated
        stream = (
            spark.readStream.schema(schema)
            .option("maxFilesPerTrigger", config["max_files"])
            .parquet(config["input"])
        )
        writer = stream.writeStream.format("vectordb").option("checkpointLocation", config["checkpoint"])
        for key, value in config["sink"].items():
            writer = writer.option(key, value)
        writer.trigger(availableNow=True).start().awaitTermination()
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
