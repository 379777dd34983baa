"""Beam's ``.failed`` holds exactly the rows a server refuses, when its refusals name no row.

The isolation case, at scale: 20,000 records, 100 a request, about one bad id in 100, one message
for every refusal.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

from . import data

SHARDS = 20


def test_failed_holds_exactly_the_refused_rows(grpc_server: ServerHandle) -> None:
    bad = data.rejected_ids(SHARDS, every=97)
    grpc_server.script(reject_ids=bad, reject_named=False)
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        records = pipeline | beam.Create(list(range(SHARDS))) | beam.FlatMap(data.records)
        result = records | WriteToVectorDB(grpc_server.uri, batch_size=100, on_error="report")
        failed = result.failed | beam.Map(lambda d: (d["id"], d["error_type"], d["error"]))
        reason = (
            f"{grpc_server.uri} /VectorService/Upsert: INVALID_ARGUMENT: Invalid vector: request rejected"
        )
        assert_that(failed, equal_to([(i, "Rejected", reason) for i in bad]))
    want = data.expected(SHARDS)
    arrived = grpc_server.arrived()
    assert arrived.ids() == set(want) - bad
    assert all(arrived.vector(i).values_f32 == want[i][0] for i in list(arrived.ids())[:500])
