"""``WriteToVectorDB`` into Qdrant (the Qdrant-protocol gRPC test server): every point read back with the
official qdrant-client and compared exactly; rows the server refuses with a message that names no point
come out of ``.failed`` with Qdrant's reason, and only those."""

from __future__ import annotations

from collections.abc import Iterator

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam import WriteToVectorDB
from vectordb.connector.ids import ORIGINAL_ID_KEY, point_id
from vectordb.connector.transports.base import forget_shared

from . import data
from .conftest import counters

SHARDS = 3


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def test_beam_writes_qdrant_and_isolates_refused_rows(server: QdrantServer) -> None:
    refused = data.rejected_ids(SHARDS, every=401)
    # the server compares the point ids it receives: the UUIDs the rows' ids become
    server.script(reject_ids=frozenset(str(point_id(i)) for i in refused), reject_named=False)
    pipeline = beam.Pipeline(runner=FnApiRunner())
    result = (
        pipeline
        | beam.Create(list(range(SHARDS)))
        | beam.FlatMap(data.records)
        | WriteToVectorDB(
            server.grpc_uri("beam"),
            create=True,
            dimension=data.DIM,
            metric="dotproduct",
            on_error="report",
            batch_size=100,
        )
    )
    reasons = result.failed | beam.Map(lambda d: (d["id"], d["error_type"], d["error"].rsplit(": ", 2)[-2:]))
    assert_that(
        reasons,
        equal_to([(i, "Rejected", ["Wrong input", "a point refused (fault script)"]) for i in refused]),
    )
    run = pipeline.run()
    run.wait_until_finish()

    want = {k: v for k, v in data.expected(SHARDS).items() if k not in refused}
    official = server.client(prefer_grpc=True)
    records = official.retrieve("beam", [point_id(i) for i in want], with_vectors=True, with_payload=True)
    official.close()
    assert len(records) == len(want)
    for record in records:
        payload = dict(record.payload or {})
        raw_id = payload.pop(ORIGINAL_ID_KEY)
        vector, metadata = want[raw_id]
        assert np.asarray(record.vector, dtype=np.float32).tobytes() == vector, raw_id
        assert payload == metadata, raw_id
    assert server.store.count("beam") == len(want)
    found = counters(run)
    assert found["written"] == len(want) and found["failed"] == len(refused)
