"""Bounded input in windows other than the global one: the same id twice in one bundle lands in input
order (README, "What happens to each row": the last occurrence wins, upserts and deletes alike), though
each window gathers its own batch. The read-and-batch step kept a batch per window and sent them in the
order the windows filled or ended, so a row in window B could land after a later row of window A."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms import window

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam import WriteToVectorDB
from vectordb.connector.ids import ORIGINAL_ID_KEY, point_id
from vectordb.connector.transports.base import forget_shared

from .conftest import counters


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _upsert(version: float) -> dict[str, Any]:
    return {"id": "a", "values": [version, 1.0, 1.0, 1.0], "v": version}


DELETE = {"id": "a", "op": "delete"}


def _write(
    server: QdrantServer, collection: str, timed: list[tuple[dict[str, Any], float]]
) -> dict[str, int]:
    """``timed`` (element, event time) in one bundle, in fixed windows of 10 s, to ``collection``."""
    pipeline = beam.Pipeline(runner=FnApiRunner())
    _ = (
        pipeline
        | beam.Create(list(range(len(timed))), reshuffle=False)
        | beam.Map(lambda i: window.TimestampedValue(*timed[i]))
        | beam.WindowInto(window.FixedWindows(10))
        | WriteToVectorDB(
            server.grpc_uri(collection), create=True, dimension=4, metric="dotproduct", on_error="report"
        )
    )
    run = pipeline.run()
    run.wait_until_finish()
    return counters(run)


def _stored(server: QdrantServer, collection: str) -> dict[str, Any] | None:
    official = server.client(prefer_grpc=True)
    try:
        found = official.retrieve(collection, [point_id("a")], with_payload=True)
    finally:
        official.close()
    if not found:
        return None
    payload = dict(found[0].payload or {})
    assert payload.pop(ORIGINAL_ID_KEY) == "a"
    return payload


def test_the_same_id_in_two_windows_lands_in_input_order(server: QdrantServer) -> None:
    # windows [0, 10), [10, 20), [0, 10): v1 and v3 share a batch, v2 has its own
    got = _write(server, "upserts", [(_upsert(1.0), 5), (_upsert(2.0), 15), (_upsert(3.0), 6)])
    assert got["written"] == 3 and got.get("failed", 0) == 0, got
    assert _stored(server, "upserts") == {"v": 3.0}  # the last in input order; v2 on the old code


def test_upsert_delete_upsert_across_windows_ends_with_the_upsert(server: QdrantServer) -> None:
    got = _write(server, "ops", [(_upsert(1.0), 5), (DELETE, 15), (_upsert(3.0), 6)])
    assert got.get("failed", 0) == 0, got
    assert _stored(server, "ops") == {"v": 3.0}  # deleted on the old code


def test_delete_then_upsert_in_another_window_then_delete_ends_deleted(server: QdrantServer) -> None:
    got = _write(server, "deleted", [(_upsert(1.0), 15), (DELETE, 5), (_upsert(2.0), 16), (DELETE, 6)])
    assert got.get("failed", 0) == 0, got
    assert _stored(server, "deleted") is None
