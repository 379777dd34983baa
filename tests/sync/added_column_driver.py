"""Run in the Delta environment (``delta_env.py``): ``python added_column_driver.py CONFIG``. A table of
``id``, ``values`` and ``title``, three files a version: v1 inserts a, b, c; v2 overwrites them (new
titles); v3 adds a column (``ALTER TABLE ADD COLUMNS (lang string)``); v4 inserts d with a ``lang``; v5
updates a (its title and ``lang``); v6 deletes c. Only then is the feed streamed, one file a micro-batch,
so the query reads v1 and v2 with ``lang`` (null) and v2's overwrite is cut between micro-batches,
through ``changes(batch, table=...)`` into PostgreSQL: once with the table's path, once with a function
from a version to the table as of it (which looks the ids a batch deletes up in that version, without
``lang``). Writes to ``config["out"]``: each query's micro-batches (their versions and change types, and
the error of one that failed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from delta_driver import session

from vectordb.spark import changes, register


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    spark = session(config["ivy"])
    register(spark)
    table = config["table"]
    ref = f"delta.`{table}`"

    def append(rows: list[tuple[Any, ...]], mode: str = "append") -> None:
        df = spark.createDataFrame(rows, "id string, values array<float>, title string").repartition(3)
        df.write.format("delta").mode(mode).save(table)

    spark.sql(
        f"CREATE TABLE {ref} (id string, values array<float>, title string) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    append([("a", [1.0, 1.0], "a1"), ("b", [2.0, 2.0], "b1"), ("c", [3.0, 3.0], "c1")])
    append([("a", [1.0, 2.0], "a2"), ("b", [2.0, 3.0], "b2"), ("c", [3.0, 4.0], "c2")], "overwrite")
    spark.sql(f"ALTER TABLE {ref} ADD COLUMNS (lang string)")
    spark.sql(f"INSERT INTO {ref} VALUES ('d', array(4.0f, 4.0f), 'd4', 'fr')")
    spark.sql(f"UPDATE {ref} SET title = 'a5', lang = 'en' WHERE id = 'a'")
    spark.sql(f"DELETE FROM {ref} WHERE id = 'c'")

    def as_of(version: int) -> Any:
        return spark.read.format("delta").option("versionAsOf", version).load(table)

    out: dict[str, list[dict[str, Any]]] = {}
    for name, lookup in (("path", table), ("function", as_of)):
        batches: list[dict[str, Any]] = []
        out[name] = batches

        def write(
            batch: Any,
            batch_id: int,
            lookup: Any = lookup,
            uri: str = config["sink"][name],
            batches: Any = batches,
        ) -> None:
            seen = sorted({(r[0], r[1]) for r in batch.select("_commit_version", "_change_type").collect()})
            said: dict[str, Any] = {"batch": batch_id, "changes": seen}
            batches.append(said)
            try:
                (
                    changes(batch, table=lookup)
                    .write.format("vectordb")
                    .option("uri", uri)
                    .option("op_column", "_change_type")
                    .option("create", "true")
                    .option("dimension", "2")
                    .mode("append")
                    .save()
                )
            except Exception as exc:
                said["error"] = str(exc)[-20000:]
                raise

        query = (
            spark.readStream.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", 0)
            .option("maxFilesPerTrigger", 1)
            .load(table)
            .writeStream.foreachBatch(write)
            .option("checkpointLocation", f"{config['checkpoint']}-{name}")
            .trigger(availableNow=True)
            .start()
        )
        try:
            query.awaitTermination()
        except Exception as exc:  # the batch that failed says why; the test shows it
            batches.append({"query": str(exc)[:300]})
    Path(config["out"]).write_text(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
