"""Named dense vectors through Beam (``pyarrow.RecordBatch`` elements) into Milvus Lite and PostgreSQL, read back
per name with pymilvus and psycopg; an existing target lacking a name is refused where the pipeline is built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pytest

from tests.integration.pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401
from vectordb.beam import WriteToVectorDB
from vectordb.connector import ConfigError

from .conftest import counters

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

DIMS = {"title": 8, "body": 5}
NAMES = {"title": "title_vec", "body": "body_vec"}


def batches(
    n_batches: int, rows: int, seed: int = 21
) -> tuple[list[pa.RecordBatch], dict[str, dict[str, bytes]]]:
    """Arrow batches of ``rows`` rows each, and each id's vector bytes per name."""
    rng = np.random.default_rng(seed)
    out, want = [], {}
    for b in range(n_batches):
        ids = [f"b{b}-{i}" for i in range(rows)]
        columns: dict[str, Any] = {"id": ids}
        mats = {name: rng.standard_normal((rows, dim), dtype=np.float32) for name, dim in DIMS.items()}
        for name, matrix in mats.items():
            columns[NAMES[name]] = pa.FixedSizeListArray.from_arrays(
                pa.array(matrix.reshape(-1)), matrix.shape[1]
            )
        columns["part"] = [b] * rows
        out.append(pa.RecordBatch.from_pydict(columns))
        for i, row_id in enumerate(ids):
            want[row_id] = {name: mats[name][i].tobytes() for name in DIMS}
    return out, want


def run(elements: list[pa.RecordBatch], sink: WriteToVectorDB) -> dict[str, int]:
    pipeline = beam.Pipeline(runner="DirectRunner")
    _ = pipeline | beam.Create(elements, reshuffle=False) | sink
    result = pipeline.run()
    result.wait_until_finish()
    return counters(result)


def test_arrow_batches_land_in_milvus_per_name(milvus_lite: LiteServer, collection_name: str) -> None:
    elements, want = batches(3, 150)
    sink = WriteToVectorDB(
        milvus_lite.uri,
        collection=collection_name,
        create=True,
        check_target=True,
        vector_columns=NAMES,
        vector_dimensions=DIMS,
    )
    assert run(elements, sink)["written"] == 450
    milvus_lite.client.load_collection(collection_name)
    rows = milvus_lite.client.query(collection_name, filter='id != ""', output_fields=["*"], limit=1000)
    assert len(rows) == 450
    for row in rows:
        for name in DIMS:
            assert np.asarray(row[name], np.float32).tobytes() == want[row["id"]][name], (row["id"], name)


def test_arrow_batches_land_in_postgres_per_name(pg_server: PgServer, pg_table: str) -> None:
    elements, want = batches(3, 150, seed=22)
    sink = WriteToVectorDB(
        pg_server.uri(pg_table), create=True, check_target=True, vector_columns=NAMES, vector_dimensions=DIMS
    )
    assert run(elements, sink)["written"] == 450
    with pg_server.connect() as conn:
        rows = conn.execute(f'SELECT id, title::real[], body::real[], metadata FROM "{pg_table}"').fetchall()
    assert len(rows) == 450
    for row_id, title, body, metadata in rows:
        assert np.asarray(title, np.float32).tobytes() == want[row_id]["title"], row_id
        assert np.asarray(body, np.float32).tobytes() == want[row_id]["body"], row_id
        assert metadata == {"part": int(row_id[1])}


def test_a_table_without_a_name_is_refused_while_the_pipeline_is_built(
    pg_server: PgServer, pg_table: str
) -> None:
    with pg_server.connect() as conn:
        conn.execute(f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, title vector(8), metadata jsonb)')
    with pytest.raises(
        ConfigError, match=r"option vector_columns: name 'body': table \w+ has no column 'body'"
    ):
        WriteToVectorDB(pg_server.uri(pg_table), check_target=True, vector_columns=NAMES)
