"""Writes inside ``foreachBatch`` (the README's change-feed recipe) name their job after the micro-batch.

A micro-batch Spark runs again after a restart (it wrote, and the driver stopped before Spark recorded
the batch) must replace its dead letters and report, as ``writeStream.format("vectordb")`` does: batch
writes were named after a random token, so the earlier run's files stayed beside the new ones, and
sums over ``report_path`` and ``dead_letter_path`` counted the batch twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tests.servers.fixtures import ServerHandle

SCHEMA = "id string, values array<float>"


def _put(folder: Path, n: int, rows: list[dict[str, Any]]) -> None:
    staged = folder.parent / "staged.json"
    staged.write_text("".join(json.dumps(r) + "\n" for r in rows))
    staged.rename(folder / f"part-{n:02d}.json")


def test_a_micro_batch_run_again_replaces_its_dead_letters_and_report(
    spark: Any, rest_server: ServerHandle, tmp_path: Path
) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    for n in range(2):  # each batch: two rows written, one refused (an empty id)
        ids = [f"a{n}", f"b{n}", ""]
        _put(incoming, n, [{"id": i, "values": [1.0, float(n), 0.5]} for i in ids])
    reports, dead = tmp_path / "reports", tmp_path / "dead"

    def write(batch: Any, batch_id: int) -> None:
        for namespace in (
            "n1",
            "n2",
        ):  # two writes of one micro-batch into one report_path: each keeps its files
            (
                batch.write.format("vectordb")
                .option("uri", rest_server.uri)
                .option("namespace", namespace)
                .option("on_error", "dead_letter")
                .option("dead_letter_path", str(dead))
                .option("report_path", str(reports))
                .mode("append")
                .save()
            )

    def run() -> str:
        query = (
            spark.readStream.schema(SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(str(incoming))
            .writeStream.foreachBatch(write)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return str(query.id)

    query_id = run()
    first = sorted(p.name for p in reports.iterdir())
    assert len(first) == 4, first
    # the driver stopped after batch 1 wrote, before Spark recorded it: the restart runs it again
    for name in ("1", ".1.crc"):
        (tmp_path / "checkpoint" / "commits" / name).unlink()
    assert run() == query_id

    names = sorted(p.name for p in reports.iterdir())
    assert names == first
    assert [n.split("-")[:3] for n in names] == [["batch", f"{b:06d}", query_id[:8]] for b in (0, 0, 1, 1)]
    summed = [json.loads((reports / n).read_text()) for n in names]
    assert [(r["written"], r["failed"]) for r in summed] == [(2, 1)] * 4
    letters = sorted(dead.glob("*.parquet"))
    assert len(letters) == 4, letters
    assert sorted(r["id"] for f in letters for r in pq.read_table(f).to_pylist()) == [""] * 4


def test_a_write_outside_a_micro_batch_is_named_after_its_token(
    spark: Any, rest_server: ServerHandle, tmp_path: Path
) -> None:
    df = spark.createDataFrame([("a", [1.0, 2.0, 3.0])], SCHEMA)
    df.write.format("vectordb").option("uri", rest_server.uri).option("report_path", str(tmp_path)).mode(
        "append"
    ).save()
    (report,) = [p.name for p in tmp_path.iterdir()]
    assert report.startswith("job-") and report.endswith(".json")
