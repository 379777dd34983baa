"""``WriteToVectorDB`` into a real PostgreSQL + pgvector (embedded, unix socket), read back with psycopg."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms.display import DisplayData

from tests.integration.pg_server import (  # noqa: F401 - fixtures, requested by name
    LOADER,
    LOADER_PASSWORD,
    PgServer,
    pg_server_fixture,
    pg_table_fixture,
)
from vectordb.beam import WriteToVectorDB

from . import data
from .conftest import counters

SHARDS = 5  # 5,000 records


def test_records_land_in_postgres_exactly(pg_server: PgServer, pg_table: str) -> None:
    uri = pg_server.uri(pg_table, user=LOADER, password=LOADER_PASSWORD)
    sink = WriteToVectorDB(uri, create=True, dimension=data.DIM, max_concurrency=2)
    shown = {item.key: item.value for item in DisplayData.create_from(sink).items}
    assert pg_table in str(shown["target"])
    assert LOADER_PASSWORD not in repr(shown) and "s3cret" not in repr(shown)

    pipeline = beam.Pipeline(runner=FnApiRunner())
    _ = pipeline | beam.Create(list(range(SHARDS))) | beam.FlatMap(data.records) | sink
    run = pipeline.run()
    run.wait_until_finish()

    with pg_server.connect() as conn:
        stored = conn.execute(f'SELECT id, embedding::real[], metadata FROM "{pg_table}"').fetchall()
    want = data.expected(SHARDS)
    assert len(stored) == len(want)
    for row_id, vector, metadata in stored:
        assert np.asarray(vector, dtype=np.float32).tobytes() == want[row_id][0], row_id
        assert metadata == want[row_id][1], row_id
    assert counters(run)["written"] == len(want) and "failed" not in counters(run)
