"""A Spark driver program for the standalone-cluster test: ``python cluster_driver.py MASTER URI REPORTS``.

It writes with ``format("vectordb")`` and no ``register()`` call: the data source must be found by
Spark's own lookup of ``pyspark_*`` modules, as after ``pip install vectordb-connector``. It prints
one JSON line: the master, how many executors ran, and whether the lookup saw ``pyspark_vectordb``.
"""

from __future__ import annotations

import json
import pkgutil
import sys

from pyspark.sql import SparkSession


def main(master: str, uri: str, reports: str) -> None:
    spark = (
        SparkSession.builder.master(master)
        .appName("vectordb-cluster-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.cores", "1")
        .config("spark.executor.memory", "512m")
        .config("spark.cores.max", "1")
        .getOrCreate()
    )
    try:
        df = spark.range(0, 2000, numPartitions=4).selectExpr(
            "concat('c', cast(id as string)) as id", "array(cast(id as float), 0.5f, -1.0f) as values"
        )
        df.write.format("vectordb").option("uri", uri).option("report_path", reports).mode("append").save()
        status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
        listed = any(m.name == "pyspark_vectordb" for m in pkgutil.iter_modules())
        print(
            json.dumps(
                {"master": spark.sparkContext.master, "executors": status.size() - 1, "listed": listed}
            )
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
