"""Run by ``test_stream_reload.py`` with the project's Python: ``python stream_files_driver.py CONFIG``.

Streams a folder of Parquet files (``maxFilesPerTrigger`` from the config, ``trigger(availableNow=True)``)
through ``writeStream.format("vectordb")`` into PostgreSQL with ``on_error=dead_letter`` and a
``report_path``, as the README's large loads do; writes the query's id to ``config["query_id"]`` when it
starts (the test may kill the process at any point after).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from vectordb.spark import register


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("vectordb-stream-reload")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    schema = spark.read.parquet(config["input"]).schema
    writer = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", config["max_files"])
        .parquet(config["input"])
        .writeStream.format("vectordb")
        .option("checkpointLocation", config["checkpoint"])
        .trigger(availableNow=True)
    )
    for key, value in config["sink"].items():
        writer = writer.option(key, value)
    query = writer.start()
    Path(config["query_id"]).write_text(str(query.id))
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
