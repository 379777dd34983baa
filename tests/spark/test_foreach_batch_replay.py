"""The first micro-batch of a ``foreachBatch`` query into an empty index, run again after a restart, replaces
its report and dead letters.

The job of a write inside ``foreachBatch`` is named after the micro-batch, the query and a hash of the target
and the options. That hash took the options as the driver completed them from the target (Pinecone's
dimension, ``verify``): the first run, against an index with no dimension yet, and its replay, against the
dimension the first run's rows gave it, hashed apart, so the replay left a second report and a second set of
dead letters beside the first (``test_foreach_batch.py`` replays a later micro-batch, whose two runs both
found the dimension).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tests.servers.fixtures import ServerHandle

from .test_foreach_batch import SCHEMA, _put


def test_the_first_micro_batch_run_again_after_the_index_learnt_its_dimension_replaces_its_files(
    spark: Any, rest_server: ServerHandle, tmp_path: Path
) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    _put(incoming, 0, [{"id": i, "values": [1.0, 2.0, 0.5]} for i in ("a", "b", "")])  # "" is refused
    reports, dead = tmp_path / "reports", tmp_path / "dead"

    def write(batch: Any, batch_id: int) -> None:
        (
            batch.write.format("vectordb")
            .option("uri", rest_server.uri)
            .option("on_error", "dead_letter")
            .option("dead_letter_path", str(dead))
            .option("report_path", str(reports))
            .mode("append")
            .save()
        )

    def run() -> str:
        query = (
            spark.readStream.schema(SCHEMA)
            .json(str(incoming))
            .writeStream.foreachBatch(write)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return str(query.id)

    query_id = run()  # into the fresh server, which has no dimension until these rows
    first = sorted(p.name for p in reports.iterdir())
    assert [n.split("-")[:3] for n in first] == [["batch", "000000", query_id[:8]]]
    # the driver stopped after batch 0 wrote, before Spark recorded it: the restart runs it again
    for name in ("0", ".0.crc"):
        (tmp_path / "checkpoint" / "commits" / name).unlink()
    assert run() == query_id

    assert sorted(p.name for p in reports.iterdir()) == first
    report = json.loads((reports / first[0]).read_text())
    assert (report["written"], report["failed"]) == (2, 1)
    letters = sorted(dead.glob("*.parquet"))
    assert [r["id"] for f in letters for r in pq.read_table(f).to_pylist()] == [""], letters
