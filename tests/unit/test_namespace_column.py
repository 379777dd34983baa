"""Option ``namespace_column`` must name a column of text: the core's input check says so, naming the
option and the column's type, for every engine (Spark's driver runs the same check on an empty batch)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow


def test_a_namespace_column_of_numbers_is_refused_naming_the_option() -> None:
    table = pa.table(
        {
            "id": ["a", "b"],
            "values": pa.array([[0.1, 0.2], [0.3, 0.4]], pa.list_(pa.float32())),
            "tenant": [1, 2],
        }
    )
    with (
        connect(
            "pinecone+grpc://127.0.0.1:1", verify=False, namespace_column="tenant", on_error="report"
        ) as client,
        pytest.raises(ConfigError, match=r"option namespace_column: column 'tenant' has type int64"),
    ):
        client.upsert(table)


@pytest.mark.parametrize(
    "column",
    [
        pa.array(["x", None], pa.string()),
        pa.array(["x", "y"], pa.large_string()),
        pa.array(["x", "x"]).dictionary_encode(),
        pa.nulls(2),  # every row in the default namespace
    ],
)
def test_a_namespace_column_of_text_gives_each_row_its_namespace(column: pa.Array) -> None:
    batch = pa.RecordBatch.from_pydict(
        {"id": ["a", "b"], "values": pa.array([[0.1, 0.2], [0.3, 0.4]], pa.list_(pa.float32())), "ns": column}
    )
    prepared = prepare_arrow(batch, ColumnSpec(namespace_column="ns"), RowRules(), DimensionState())
    assert not prepared.refused
    assert {b.namespace for b in prepared.batches} == set(column.to_pylist())
