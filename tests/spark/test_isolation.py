"""Spark dead letters hold exactly the rows a server refuses, when its refusals name no row.

The isolation case, at scale: 20,000 rows, 100 a request, about one bad id in 100, one message for
every refusal.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tests.servers.fixtures import ServerHandle

from .conftest import float32_rows, vectors_table


def test_dead_letters_are_exactly_the_refused_rows(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    n = 20_000
    rng = random.Random(3)
    bad = {f"v{i}" for i in range(n) if rng.random() < 0.01}
    grpc_server.script(reject_ids=frozenset(bad), reject_named=False)
    table = vectors_table(n, 8)
    dead = tmp_path / "dead"
    (
        spark.createDataFrame(table)
        .repartition(4)
        .write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("batch_size", "100")
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(dead))
        .mode("append")
        .save()
    )
    letters = spark.read.parquet(str(dead)).collect()
    assert sorted(r["id"] for r in letters) == sorted(bad)
    assert {r["error"] for r in letters} == {
        f"Rejected: {grpc_server.uri} /VectorService/Upsert: INVALID_ARGUMENT: Invalid vector: request rejected"
    }
    arrived = grpc_server.arrived()
    want = float32_rows(table)
    assert {vid: v.values_f32 for (_, vid), v in arrived.final.items()} == {
        k: v for k, v in want.items() if k not in bad
    }
