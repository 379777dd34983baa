"""A bundle the runner retries writes the same ids again: upserts, not duplicates.

The ``BundleBasedDirectRunner`` (what the ``DirectRunner`` uses for streaming pipelines) retries
a failed bundle up to four times. The server fails the very first request; with
``max_retries=0`` and ``on_error="fail"`` the sink fails its bundle after the other requests of
that bundle have landed, and the runner runs the bundle again. Ids come from ``id_from``, so the
second attempt upserts the same ids: the server ends with each record exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import numpy as np
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB
from vectordb.connector.rows import derive_id

from .conftest import counters

SHARDS, PER_SHARD, DIM = 4, 500, 8


def chunks(shard: int) -> Iterator[dict[str, Any]]:
    """Records without an id: the sink derives it from (doc, chunk)."""
    vectors = np.random.default_rng(shard).standard_normal((PER_SHARD, DIM)).astype(np.float32)
    for i in range(PER_SHARD):
        yield {"doc": f"doc-{shard}", "chunk": i, "values": vectors[i]}


def test_retried_bundle_upserts_the_same_ids(grpc_server: ServerHandle) -> None:
    grpc_server.script(fail_first=1)
    pipeline = beam.Pipeline(runner=BundleBasedDirectRunner())
    _ = (
        pipeline
        | beam.Create(list(range(SHARDS)))
        | beam.FlatMap(chunks)
        | WriteToVectorDB(grpc_server.uri, id_from="doc,chunk", max_retries=0, rows_per_batch=400)
    )
    result = pipeline.run()
    result.wait_until_finish()

    arrived = grpc_server.arrived()
    assert arrived.count("unavailable") == 1  # the failure that failed the bundle
    sent = sum(r.vector_count for r in arrived.accepted)
    assert sent > SHARDS * PER_SHARD  # the retried bundle sent rows that had landed already ...
    want = {derive_id([f"doc-{s}", i]): (s, i) for s in range(SHARDS) for i in range(PER_SHARD)}
    assert arrived.ids() == set(want)  # ... under the same ids: nothing duplicated, nothing missing
    records = {(r["doc"], r["chunk"]): r for shard in range(SHARDS) for r in chunks(shard)}
    for row_id, (shard, i) in want.items():
        stored = arrived.vector(row_id)
        assert stored.metadata == {"doc": f"doc-{shard}", "chunk": i}
        assert stored.values_f32 == records[f"doc-{shard}", i]["values"].tobytes()
    # this runner keeps the failed bundle's counter increments: the sink makes none until a bundle ends
    got = counters(result)
    assert got["written"] == SHARDS * PER_SHARD and not got.get("failed"), got
