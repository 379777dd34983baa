"""Run in the Delta environment (``delta_env.py``): ``python schema_driver.py CONFIG``. A table of three
files a version, an overwrite of every row at v1, and at v2, committed while the stream is still reading
v0 (from inside its first micro-batch, as a writer elsewhere would), an overwrite that drops a column. The
feed is streamed one file a micro-batch, so v1's overwrite is cut between micro-batches, through
``changes(batch, table=path)`` into a dict. Writes to ``config["out"]``: each micro-batch's outcome and,
for the last version the stream reached, the dict against the table as of that version.

A batch read of the feed of v1 takes the table's latest schema (without ``extra``), which no longer fits
the batch: ``changes()`` must fall back to the table as of the batch's version, not fail.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from delta_driver import session

from vectordb.spark import changes

SCHEMA = "id string, val int, extra string"


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    spark = session(config["ivy"])
    table = config["table"]

    def overwrite(rows: list[tuple[Any, ...]], schema: str, **options: str) -> None:
        writer = spark.createDataFrame(rows, schema).repartition(3).write.format("delta").mode("overwrite")
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save(table)

    overwrite([(i, 0, "x") for i in "abcdef"], SCHEMA, **{"delta.enableChangeDataFeed": "true"})
    overwrite([(i, 1, "y") for i in "abcdef"], SCHEMA)
    index: dict[str, int] = {}
    outcomes: list[dict[str, Any]] = []

    def write(batch: Any, batch_id: int) -> None:
        if batch_id == 0:
            overwrite([(i, 2) for i in "abcdef"], "id string, val int", overwriteSchema="true")
        versions = sorted({r[0] for r in batch.select("_commit_version").distinct().collect()})
        try:
            for r in changes(batch, table=table).collect():
                if r["_change_type"] == "delete":
                    index.pop(r["id"], None)
                else:
                    index[r["id"]] = r["val"]
            outcomes.append({"batch": batch_id, "versions": versions, "ok": True})
        except Exception as exc:  # reported, not raised: the test names the batch that failed
            outcomes.append({"batch": batch_id, "versions": versions, "ok": False, "error": str(exc)[:500]})

    query = (
        spark.readStream.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .option("maxFilesPerTrigger", 1)
        .load(table)
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", config["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    as_of_v1 = spark.read.format("delta").option("versionAsOf", 1).load(table)
    result = {
        "outcomes": outcomes,
        "index": index,
        "table_v1": {r["id"]: r["val"] for r in as_of_v1.collect()},
    }
    Path(config["out"]).write_text(json.dumps(result))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
