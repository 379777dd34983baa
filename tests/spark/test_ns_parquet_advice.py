"""A Parquet file with a nanosecond timestamp column: ``vectordb-load`` advised
``spark.sql.legacy.parquet.nanosAsLong=true``, which makes Spark read the column as bigint nanoseconds, so
``id_from`` hashed an integer and the metadata held one: the same rows loaded by ``vectordb-beam`` (which
reads the instant) were stored a second time under other ids. The advice is only the ways that keep the
instant: write ``timestamp[us]``, or load the file with ``vectordb-beam``."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vectordb.connector.errors import ConfigError
from vectordb.spark.load import read_input


def test_a_nanosecond_timestamp_is_not_advised_to_be_read_as_a_number(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "rows_ns.parquet"
    instants = [dt.datetime(2024, 5, 6, 7, 8, i, tzinfo=dt.UTC) for i in range(3)]
    table = pa.table(
        {
            "ts": pa.array(instants, pa.timestamp("ns", "UTC")),
            "id": ["a", "b", "c"],
            "values": [[1.0, 0.0]] * 3,
        }
    )
    pq.write_table(table, path)
    args = argparse.Namespace(sample=None, input=[str(path)], format="parquet")
    with pytest.raises(ConfigError) as caught:
        read_input(spark, args)
    message = str(caught.value)
    assert "NANOS" in message
    assert "nanosAsLong" not in message and "spark.sql.legacy" not in message
    assert message.endswith("write microsecond timestamps (timestamp[us]); or load it with vectordb-beam")
