"""Sync benchmark: a Delta table with 1 % of its rows changed per version, end-to-end seconds per version
into Milvus Lite and PostgreSQL through the change feed (``vectordb.spark.changes``).

``python -m jobs.bench.sync [--rows N] [--dim D] [--versions K]`` (the project's environment) starts
the databases as the tests do (Milvus Lite through the connector's embedded server, PostgreSQL with
pgvector from ``tests/integration/pg_server.py``), makes the Delta environment (``tests/sync/delta_env.py``)
and runs this module again there as the Spark driver (``--delta CONFIG``). The driver writes the table
(``--rows`` rows, ``--dim``-dimensional float32 vectors and a title), syncs it into each database once
(the initial load, timed), then ``--versions`` times commits a ``MERGE`` that changes 1 % of the rows
(60 % of them updated, 20 % deleted, 20 % new ids) and runs each database's sync query (the change
feed from its checkpoint, ``trigger(availableNow=True)``, ``changes(batch, table=...)`` into
``format("vectordb")``): the seconds from the start of that query to its end, per version and
database. One JSON line: the figures, their median, and the machine (the issue asks for 1,000,000
rows; the default here is scaled down to what a loaded 2-core machine runs in minutes: say which).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def delta_side(config: dict[str, Any]) -> dict[str, Any]:
    """In the Delta environment: write the table, then time each sync. Returns the figures."""
    import numpy as np
    from delta import configure_spark_with_delta_pip
    from delta.tables import DeltaTable
    from pyspark.sql import SparkSession

    from vectordb.spark import changes, register

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.jars.ivy", config["ivy"])
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    )
    spark = configure_spark_with_delta_pip(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    rows, dim, table, work = config["rows"], config["dim"], config["table"], Path(config["work"])
    rng = np.random.default_rng(0)
    schema = "id string, values array<float>, title string"

    def frame(ids: list[int], version: int) -> Any:
        vectors = rng.standard_normal((len(ids), dim), dtype=np.float32)
        data = [(f"r{i}", v.tolist(), f"row {i} at v{version}") for i, v in zip(ids, vectors, strict=True)]
        return spark.createDataFrame(data, schema)

    frame(list(range(rows)), 0).repartition(4).write.format("delta").option(
        "delta.enableChangeDataFeed", "true"
    ).save(table)

    def sync(name: str, sink: dict[str, str]) -> float:
        def write(batch: Any, batch_id: int) -> None:
            writer = changes(batch, table=table).write.format("vectordb").option("op_column", "_change_type")
            for key, value in sink.items():
                writer = writer.option(key, value)
            writer.mode("append").save()

        started = time.perf_counter()
        (
            spark.readStream.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", 0)
            .load(table)
            .writeStream.foreachBatch(write)
            .option("checkpointLocation", str(work / f"checkpoint-{name}"))
            .trigger(availableNow=True)
            .start()
            .awaitTermination()
        )
        return time.perf_counter() - started

    figures: dict[str, Any] = {
        "initial_s": {},
        "per_version_s": {n: [] for n in config["sinks"]},
        "commit_s": [],
    }
    for name, sink in config["sinks"].items():
        figures["initial_s"][name] = round(sync(name, sink), 2)
    live, next_id = list(range(rows)), rows
    changed = max(1, rows // 100)
    for version in range(1, config["versions"] + 1):
        picked = rng.choice(len(live), size=changed, replace=False)
        n_update, n_delete = int(changed * 0.6), int(changed * 0.2)
        updates = [live[i] for i in picked[:n_update]]
        deletes = [live[i] for i in picked[n_update : n_update + n_delete]]
        inserts = list(range(next_id, next_id + changed - n_update - n_delete))
        next_id += len(inserts)
        gone = set(deletes)
        live = [i for i in live if i not in gone] + inserts
        source = (
            frame(updates + inserts, version)
            .selectExpr("*", "'u' as flag")
            .unionByName(
                spark.createDataFrame([(f"r{i}", None, None, "d") for i in deletes], schema + ", flag string")
            )
        )
        started = time.perf_counter()
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
        figures["commit_s"].append(round(time.perf_counter() - started, 2))
        for name, sink in config["sinks"].items():
            figures["per_version_s"][name].append(round(sync(name, sink), 2))
    figures["rows_at_end"] = len(live)
    spark.stop()
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000, help="rows of the table (the issue: 1,000,000)")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--delta", help=argparse.SUPPRESS)  # the driver side, in the Delta environment
    args = parser.parse_args(argv)
    if args.delta:
        config = json.loads(Path(args.delta).read_text())
        Path(config["out"]).write_text(json.dumps(delta_side(config)))
        return

    from jobs.bench.machine import environment
    from tests.integration.pg_server import postgres_server
    from tests.sync.delta_env import ensure_delta_env, ivy_dir
    from vectordb.connector.backends.milvus import lite

    python = ensure_delta_env()
    with tempfile.TemporaryDirectory(prefix="vectordb-sync-") as tmp, postgres_server() as pg:
        work = Path(tmp)
        with pg.connect() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        milvus = str(work / "milvus.db")
        lite.ensure_server(milvus)
        sinks = {
            "milvus_lite": {"uri": f"milvus+lite://{milvus}", "collection": "sync", "create": "true"},
            "postgresql": {
                "uri": f"postgresql://postgres@/postgres?host={pg.socket_dir}&table=sync",
                "create": "true",
            },
        }
        for sink in sinks.values():
            sink["dimension"] = str(args.dim)
        config = {
            "rows": args.rows,
            "dim": args.dim,
            "versions": args.versions,
            "table": str(work / "table"),
            "work": str(work),
            "ivy": str(ivy_dir(python.parents[1])),
            "sinks": sinks,
            "out": str(work / "figures.json"),
        }
        (work / "config.json").write_text(json.dumps(config))
        keep = {
            k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "VIRTUAL_ENV", "SPARK_HOME"))
        }
        env = {**keep, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": str(python), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [str(python), "-m", "jobs.bench.sync", "--delta", str(work / "config.json")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        lite.stop(milvus)
        if done.returncode != 0:
            sys.exit(f"the Delta driver failed:\n{done.stderr[-4000:]}")
        figures = json.loads((work / "figures.json").read_text())
    medians = {n: statistics.median(v) for n, v in figures["per_version_s"].items() if v}
    print(
        json.dumps(
            {
                "benchmark": "sync",
                "rows": args.rows,
                "dim": args.dim,
                "changed_per_version": max(1, args.rows // 100),
                "versions": args.versions,
                **figures,
                "median_per_version_s": medians,
                "environment": environment("pymilvus", "psycopg"),
                "driver": {"pyspark": "4.0.1", "delta-spark": "4.0.1"},  # the Delta environment's
            }
        )
    )


if __name__ == "__main__":
    main()
