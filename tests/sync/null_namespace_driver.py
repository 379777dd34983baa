"""Run in the Delta environment (``delta_env.py``): ``python null_namespace_driver.py CONFIG``. A table of rows
of the null namespace (``tenant`` null: the write's namespace) and of ``t1``, overwritten at v1 (``a`` kept,
``b`` changed, ``c`` gone, ``d`` of ``t1`` kept), and the micro-batch that holds only v1's deletes (its inserts
came in the micro-batch before). Writes to ``config["out"]`` what ``changes(batch, table=...,
namespace_column="tenant")`` makes of it, for ``table`` as the path (the feed of v1 is read), as its SQL name
(``delta.`PATH` ``) and as a function from a version to the table (the table as of v1 is read): ``[id, tenant,
change type, values]`` each.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from delta_driver import session
from pyspark.sql import functions as F

from vectordb.spark import changes

SCHEMA = "id string, values array<float>, tenant string"


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    spark = session(config["ivy"])
    table = config["table"]

    def write(rows: list[tuple[Any, ...]], **options: str) -> None:
        writer = spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta").mode("overwrite")
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save(table)

    v0 = [("a", [1.0, 2.0], None), ("b", [3.0, 4.0], None), ("c", [5.0, 6.0], None), ("d", [7.0, 8.0], "t1")]
    write(v0, **{"delta.enableChangeDataFeed": "true"})
    write([("a", [1.0, 2.0], None), ("b", [3.5, 4.5], None), ("d", [7.0, 8.0], "t1")])
    feed = (
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1).load(table)
    )
    deletes = feed.filter(F.col("_change_type") == "delete")

    def as_of(version: int) -> Any:
        return spark.read.format("delta").option("versionAsOf", version).load(table)

    out: dict[str, Any] = {}
    sql_name = "delta.`" + table.replace("`", "``") + "`"  # the path table's SQL name, as spark.sql reads it
    for name, source in (("path", table), ("function", as_of), ("sql name", sql_name)):
        resolved = changes(deletes, table=source, namespace_column="tenant")
        out[name] = sorted(
            [r["id"], r["tenant"], r["_change_type"], list(r["values"])] for r in resolved.collect()
        )
    Path(config["out"]).write_text(json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
