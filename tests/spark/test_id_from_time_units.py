"""``id_from`` with Spark's timestamps: the ids Arrow ``timestamp[ns]`` rows of the same values get (a
pandas or Parquet file loaded by ``vectordb-beam`` or ``connect()``), so loading the same rows both ways
stores them once. Spark's own ids (``timestamp`` in UTC, ``timestamp_ntz`` as it is) stay what they were."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

from tests.servers.fixtures import ServerHandle
from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, derive_id, prepare_arrow

MOMENTS = [dt.datetime(2024, 5, 6, 7, 8, 9, 0), dt.datetime(2024, 5, 6, 7, 8, 9, 123456)]


def ns_ids(names: list[str]) -> list[str]:
    """The ids of the rows as an Arrow table with ``timestamp[ns]`` columns (pandas' and Parquet's unit)."""
    n = len(names)
    table = pa.table(
        {
            "at": pa.array(
                [MOMENTS[i % 2].replace(tzinfo=dt.UTC) for i in range(n)], pa.timestamp("ns", "UTC")
            ),
            "local": pa.array([MOMENTS[i % 2] for i in range(n)], pa.timestamp("ns")),
            "name": names,
            "values": pa.array([[1.0, 2.0, 3.0]] * n, pa.list_(pa.float32())),
        }
    )
    prepared = prepare_arrow(
        table.to_batches()[0],
        ColumnSpec(id_from=("at", "local", "name")),
        RowRules(max_id_length=512, max_metadata_bytes=40_960),
        DimensionState(),
    )
    return list(prepared.batches[0].ids)


def test_spark_timestamps_give_the_ids_of_arrow_nanosecond_columns(
    spark: Any, grpc_server: ServerHandle
) -> None:
    grpc_server.script(dimension=3)
    names = [f"n{i}" for i in range(6)]
    rows = [
        (MOMENTS[i % 2].replace(tzinfo=dt.UTC), MOMENTS[i % 2], name, [1.0, 2.0, 3.0])
        for i, name in enumerate(names)
    ]
    frame = spark.createDataFrame(rows, "at timestamp, local timestamp_ntz, name string, values array<float>")
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")  # the instant, not how it is shown
    try:
        (
            frame.repartition(2)
            .write.format("vectordb")
            .option("uri", grpc_server.uri)
            .option("api_key", "k")
            .option("id_from", "at,local,name")
            .mode("append")
            .save()
        )
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    stored = {vid for (_, vid) in grpc_server.arrived().final}
    same_as_before = [derive_id([at, local, name]) for at, local, name, _ in rows]
    assert stored == set(same_as_before)
    assert ns_ids(names) == same_as_before
