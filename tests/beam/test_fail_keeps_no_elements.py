"""With ``on_error="fail"`` no dead letter is ever built (a failed row fails the bundle), so the sink does
not keep each row's element beside it: unbounded input pickled every element into ``GroupIntoBatches``
for nothing, about a quarter of the write's CPU a row. Other policies keep them (their letters are the
elements as they came); every policy still writes, and "fail" still fails."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam import WriteToVectorDB
from vectordb.beam.elements import ElementReader, Row
from vectordb.beam.sink import _ReadAndBatchFn, _ReadFn
from vectordb.connector.transports.base import forget_shared

ELEMENTS = [{"id": f"r{i}", "values": [0.5, 0.25, float(i + 1), 1.0], "k": i} for i in range(30)]


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


@pytest.mark.parametrize(("on_error", "kept"), [("fail", False), ("report", True), ("dead_letter", True)])
def test_the_read_step_keeps_elements_only_for_letters(on_error: str, kept: bool) -> None:
    read = _ReadFn(ElementReader(), on_error, "t", 10)
    read.start_bundle()
    (out,) = read.process(ELEMENTS[0])
    assert (type(out) is tuple and type(out[1]) is bytes) is kept and (type(out) is Row) is not kept
    batcher = _ReadAndBatchFn(ElementReader(), on_error, "t", 10)
    batcher.start_bundle()
    batches = [b for e in ELEMENTS[:10] for b in batcher.process(e)]
    assert len(batches) == 1
    assert batches[0].value.records == (ELEMENTS[:10] if kept else None)


def _write(server: QdrantServer, collection: str, elements: list[dict[str, Any]], batching: str) -> None:
    pipeline = beam.Pipeline(runner=FnApiRunner())
    _ = (
        pipeline
        | beam.Create(elements, reshuffle=False)
        | WriteToVectorDB(
            server.grpc_uri(collection), create=True, dimension=4, metric="dotproduct", on_error="fail",
            batching=batching, max_buffering_s=0.5,
        )
    )  # fmt: skip
    pipeline.run().wait_until_finish()


@pytest.mark.parametrize("batching", ["bounded", "unbounded"])
def test_fail_writes_every_row_without_the_elements(server: QdrantServer, batching: str) -> None:
    _write(server, batching, ELEMENTS, batching)
    assert server.store.count(batching) == len(ELEMENTS)


@pytest.mark.parametrize("batching", ["bounded", "unbounded"])
def test_fail_still_fails_at_a_row_the_database_refuses(server: QdrantServer, batching: str) -> None:
    bad = [*ELEMENTS[:5], {"id": "short", "values": [0.5, 0.5]}]  # 2 dimensions where 4 are
    with pytest.raises(Exception, match=r"WriteFailed.*1 of 6 rows failed"):
        _write(server, "bad", bad, batching)
