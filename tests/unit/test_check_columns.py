"""``Client.check_columns``: the one driver-side check of an input's columns, which Spark's plan and
``vectordb-beam``'s Parquet check both call, refuses what every worker's reader would refuse."""

from __future__ import annotations

import pyarrow as pa
import pytest

from vectordb.connector import ConfigError, connect


def empty(**columns: pa.DataType) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=pa.schema(columns))


def test_an_input_the_readers_take_passes() -> None:
    with connect("qdrant://127.0.0.1:1/docs", dimension=3) as client:
        client.check_columns(empty(id=pa.string(), values=pa.list_(pa.float32()), tag=pa.string()))


@pytest.mark.parametrize(
    ("batch", "options", "match"),
    [
        (empty(key=pa.string(), values=pa.list_(pa.float32())), {}, "option id_column: no column 'id'"),
        (empty(id=pa.string(), values=pa.int64()), {}, "option vector_column"),
        (
            empty(id=pa.string(), values=pa.list_(pa.float32()), op=pa.int64()),
            {"op_column": "op"},
            "op_column",
        ),
    ],
)
def test_what_no_reader_takes_is_a_config_error_naming_the_option(
    batch: pa.RecordBatch, options: dict[str, str], match: str
) -> None:
    with (
        connect("qdrant://127.0.0.1:1/docs", dimension=3, **options) as client,
        pytest.raises(ConfigError, match=match),
    ):
        client.check_columns(batch)
