"""A Spark driver with Delta Lake, run by the change-feed tests in the Delta environment (``delta_env.py``).

``python delta_driver.py CONFIG.json`` does one of two things, as the config says:

- ``make``: writes a Delta table with the change data feed on, one commit per listed version: the
  first creates it, each later one is a ``MERGE`` of upserts and deletes (``merge``, which
  ``jobs/bench/sync.py`` commits too), an overwrite of the whole table (which the feed shows as a
  delete and an insert of every row, in one version), or an ``UPDATE`` of one row's id (``rename``:
  the old id's pre-image and the new id's post-image);
- ``sink``: streams the table's change feed (``readChangeFeed``, ``trigger(availableNow=True)``, a
  checkpoint, ``maxFilesPerTrigger``) through ``vectordb.spark.changes`` into ``format("vectordb")``
  inside ``foreachBatch`` (``table=``: exact even where a micro-batch ends inside a commit). After each micro-batch is written, and before Spark records it as done,
  the driver writes ``batch-K.json`` in the control folder (the versions the batch held, its change
  rows per version and every version's total, and the table's rows as of the last version, read
  from Delta) and waits for the test to answer ``go-K``:
  the test compares the database with those rows, and may kill this process (and its JVM) instead.
  With ``totals``, the table's versions are past its retention (``retention`` in ``make``), which Delta
  refuses to read: the versions' totals come from that file, and no rows are read.

The rows are ``id`` (string), ``values`` (``array<float>``) and ``title``; values and titles in
the config are exact float32s and strings.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from delta import configure_spark_with_delta_pip
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from vectordb.spark import changes, register

SCHEMA = "id string, values array<float>, title string"
GO_TIMEOUT_S = 600


def session(ivy: str) -> SparkSession:
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("vectordb-delta-sync")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")  # 50 tasks a snapshot on 2 cores otherwise
        .config("spark.jars.ivy", ivy)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    )
    spark = configure_spark_with_delta_pip(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def make(spark: SparkSession, table: str, versions: list[dict[str, Any]]) -> None:
    for number, version in enumerate(versions):
        if "rename" in version:
            old, new = version["rename"]
            spark.sql(f"UPDATE delta.`{table}` SET id = '{new}' WHERE id = '{old}'")
            continue
        rows = [tuple(r) for r in version.get("upserts", [])]
        if number == 0 or version.get("overwrite"):
            df = spark.createDataFrame(rows, SCHEMA).coalesce(1)
            writer = df.write.format("delta").mode("overwrite")
            if number == 0:
                writer = writer.option("delta.enableChangeDataFeed", "true")
            writer.save(table)
            continue
        deletes = [(i, None, None) for i in version.get("deletes", [])]
        source = spark.createDataFrame(
            [(*r, "u") for r in rows] + [(*d, "d") for d in deletes], SCHEMA + ", flag string"
        )
        merge(spark, table, source)


def age(spark: SparkSession, table: str, retention: str, totals: Path) -> None:
    """Records every version's change rows in ``totals`` while Delta still reads them, then sets the
    table's ``delta.deletedFileRetentionDuration`` to ``retention`` (one more version, with no change rows):
    once that has passed, Delta 4.1 and later refuse to read every earlier version, as they refuse a
    version older than 7 days of a table left at the default."""
    totals.write_text(json.dumps(version_totals(spark, table)))
    spark.sql(
        f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('delta.deletedFileRetentionDuration' = '{retention}')"
    )


def version_totals(spark: SparkSession, table: str) -> dict[int, int]:
    """Change rows per version of the table's whole change feed."""
    whole = (
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(table)
    )
    return {r[0]: r[1] for r in whole.groupBy("_commit_version").count().collect()}


def merge(spark: SparkSession, table: str, source: DataFrame) -> None:
    """Commit one ``MERGE`` by id into the Delta table at ``table``: ``source`` has the table's columns
    and ``flag``: ``'u'`` upserts the row (updates or inserts it), ``'d'`` deletes the id (its other
    columns are not read). Used by the tests and by ``jobs/bench/sync.py``."""
    (
        DeltaTable.forPath(spark, table)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedDelete(condition="s.flag = 'd'")
        .whenMatchedUpdate(condition="s.flag = 'u'", set={"values": "s.values", "title": "s.title"})
        .whenNotMatchedInsert(
            condition="s.flag = 'u'", values={"id": "s.id", "values": "s.values", "title": "s.title"}
        )
        .execute()
    )


def stream(spark: SparkSession, config: dict[str, Any]) -> None:
    table, control = config["table"], Path(config["control"])
    sink: dict[str, str] = config["sink"]

    # every version's number of change rows: the test tells a batch that ends inside a commit
    totals = (
        json.loads(Path(config["totals"]).read_text())
        if config.get("totals")
        else version_totals(spark, table)
    )

    def write(batch: DataFrame, batch_id: int) -> None:
        batch.persist()
        try:
            counts = {r[0]: r[1] for r in batch.groupBy("_commit_version").count().collect()}
            versions = sorted(counts)
            writer = changes(batch, table=table).write.format("vectordb").option("op_column", "_change_type")
            for key, value in sink.items():
                writer = writer.option(key, value)
            writer.mode("append").save()
        finally:
            batch.unpersist()
        rows: dict[str, Any] | None = None if config.get("totals") else {}
        if versions and rows is not None:
            current = spark.read.format("delta").option("versionAsOf", versions[-1]).load(table)
            rows = {r["id"]: [r["id"], list(r["values"]), r["title"]] for r in current.collect()}
        said = control / f"batch-{batch_id}.json"
        told = {"batch": batch_id, "versions": versions, "counts": counts, "totals": totals, "rows": rows}
        said.with_suffix(".tmp").write_text(json.dumps(told))
        said.with_suffix(".tmp").rename(said)  # whole, or not there
        go, deadline = control / f"go-{batch_id}", time.monotonic() + GO_TIMEOUT_S
        while not go.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {go.name} from the test in {GO_TIMEOUT_S} s")
            time.sleep(0.05)

    feed = (
        spark.readStream.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .option("maxFilesPerTrigger", config["max_files"])
        .load(table)
    )
    query = (
        feed.writeStream.foreachBatch(write)
        .option("checkpointLocation", config["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def main(path: str) -> None:
    config = json.loads(Path(path).read_text())
    spark = session(config["ivy"])
    register(spark)
    try:
        if config.get("make"):
            make(spark, config["table"], config["make"])
        if config.get("retention"):
            age(spark, config["table"], config["retention"], Path(config["totals"]))
        if config.get("sink"):
            stream(spark, config)
        Path(config["control"], "done").write_text("ok")
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
