"""Beam (``check_target=False``, the default: each worker checks the target itself) into a PostgreSQL table
whose named vector has another dimension than most of a bundle's rows: the table's is the write's, so those
rows fail alone and the pipeline writes the row that fits. The dimension the rows gave is no statement
(option ``vector_dimensions`` is): it once failed the whole pipeline with a ConfigError."""

from __future__ import annotations

import apache_beam as beam
import pyarrow as pa

from tests.integration.pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401
from vectordb.beam import WriteToVectorDB
from vectordb.connector import connect

from .conftest import counters


def test_rows_of_another_dimension_than_the_column_fail_alone(pg_server: PgServer, pg_table: str) -> None:
    uri = pg_server.uri(pg_table)
    seed = pa.table({"id": ["z"], "t": pa.array([[0.0, 0.0, 1.0]], pa.list_(pa.float32()))})
    with connect(uri, create=True, vector_columns={"title": "t"}, vector_dimensions={"title": 3}) as client:
        client.upsert(seed)  # the table: title vector(3)
    elements = [{"id": "a", "t": [1.0, 2.0, 3.0, 4.0]}, {"id": "b", "t": [1.0, 2.0, 3.0, 4.0]}]
    elements.append({"id": "c", "t": [1.0, 2.0, 3.0]})
    pipeline = beam.Pipeline(runner="DirectRunner")
    _ = (
        pipeline
        | beam.Create(elements, reshuffle=False)
        | WriteToVectorDB(uri, vector_columns="title:t", on_error="report")
    )
    result = pipeline.run()
    result.wait_until_finish()
    assert counters(result)["written"] == 1 and counters(result)["failed"] == 2
    with pg_server.connect() as conn:
        assert conn.execute(f'SELECT id FROM "{pg_table}" ORDER BY id').fetchall() == [("c",), ("z",)]
