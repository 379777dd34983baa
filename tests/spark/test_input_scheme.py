"""An ``--input`` of a scheme Spark has no file system for (a typo: ``s4://``), or a Parquet file of a type
Spark cannot read, is one line naming it, not Spark's page of Java trace."""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vectordb.connector.errors import ConfigError
from vectordb.spark.load import read_input


def test_load_names_a_scheme_spark_cannot_read(spark: Any) -> None:
    args = argparse.Namespace(sample=None, input=["s4://bucket/x.parquet"], format="parquet")
    with pytest.raises(ConfigError) as caught:
        read_input(spark, args)
    assert str(caught.value).startswith(
        "--input 's4://bucket/x.parquet': Spark has no file system for s4:// here"
    )


@pytest.mark.parametrize(
    ("column", "said", "advice"),
    [
        (
            pa.array([uuid.uuid4().bytes], pa.uuid()),
            "FIXED_LEN_BYTE_ARRAY (UUID)",
            "write the UUIDs as strings",
        ),
        (pa.array([1_700_000_000_000_000_001], pa.timestamp("ns", "UTC")), "NANOS", "timestamp[us]"),
    ],
)
def test_a_parquet_type_spark_cannot_read_is_one_line_naming_the_way_round(
    spark: Any, tmp_path: Path, column: pa.Array, said: str, advice: str
) -> None:
    """pyarrow writes both by default (``arrow.uuid`` ids, pandas' ``timestamp[ns]``); Spark's refusal
    was 118 lines of trace and exit status 1, as for a bug."""
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": ["a"], "values": [[1.0, 2.0]], "c": column}), path)
    args = argparse.Namespace(sample=None, input=[str(path)], format="parquet")
    with pytest.raises(ConfigError) as caught:
        read_input(spark, args)
    message = str(caught.value)
    assert message.startswith(f"--input {str(path)!r}: Spark cannot read it: Illegal Parquet type: ")
    assert said in message and advice in message and message.endswith("or load it with vectordb-beam")
