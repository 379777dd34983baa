"""Bounded input is read and batched in one step: batches of ``rows_per_batch`` rows (the last one smaller),
one window each, every row written once and exactly; the rows of a batch become one float32 buffer, the
same however the vectors came (numpy arrays, lists, a strided view, rows of different lengths)."""

from __future__ import annotations

from typing import Any

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms.window import FixedWindows, TimestampedValue

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB
from vectordb.beam.batch import assemble
from vectordb.beam.elements import ElementReader
from vectordb.connector.options import BackendOptions

from . import data
from .test_direct import assert_stored, check_equals


def sizes_of(result: Any) -> Any:
    return result.written | beam.Map(lambda report: report.written)


def test_bounded_rows_go_in_batches_of_rows_per_batch(grpc_server: ServerHandle) -> None:
    pipeline = beam.Pipeline(runner=FnApiRunner())
    records = pipeline | beam.Create([0, 1, 2]) | beam.FlatMap(data.records)
    result = records | WriteToVectorDB(grpc_server.uri, rows_per_batch=700)
    sizes = sizes_of(result)
    _ = (
        sizes
        | "sorted" >> beam.combiners.ToList()
        | beam.Map(lambda found: check_equals(sorted(found)[-1], 700) or check_equals(sum(found), 3000))
    )
    pipeline.run().wait_until_finish()
    assert_stored(grpc_server, data.expected(3))


def test_windowed_bounded_rows_are_batched_per_window(grpc_server: ServerHandle) -> None:
    pipeline = beam.Pipeline(runner=FnApiRunner())
    records = (
        pipeline
        | beam.Create([0, 1])
        | beam.FlatMap(data.records)
        | "in 4 windows" >> beam.Map(lambda r: TimestampedValue(r, int(r["id"].rsplit("-")[1]) % 4 * 10))
        | beam.WindowInto(FixedWindows(10))
    )
    result = records | WriteToVectorDB(grpc_server.uri, rows_per_batch=300)
    counted = (
        result.written
        | beam.Map(lambda report: report.written)
        | beam.CombineGlobally(sum).without_defaults()  # per window: 2 shards × 250 rows
        | beam.Map(check_equals, 500)
    )
    _ = counted
    pipeline.run().wait_until_finish()
    assert_stored(grpc_server, data.expected(2))


READER = ElementReader.from_options(BackendOptions(uri="pinecone://index.svc.pinecone.io"))


@pytest.mark.parametrize(
    "vectors",
    [
        [np.arange(4, dtype=np.float32) + i for i in range(5)],
        [[0.5, 1.5, -0.0, 1e-45], [1.0, 2.0, 3.0, 4.0]],
        [np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1], np.ones(3, dtype=np.float32)],  # strided
        [np.ones(3, dtype=np.float32), None, np.arange(5, dtype=np.float32)],  # lengths differ, none
        [np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)],
    ],
)
def test_one_buffer_whatever_the_vectors(vectors: list[Any]) -> None:
    rows = [READER.read({"id": f"r{i}", "values": v}) for i, v in enumerate(vectors)]
    batch = assemble(rows)  # type: ignore[arg-type]
    present = [np.asarray(v, dtype=np.float32) for v in vectors if v is not None]
    want = np.concatenate(present) if present else np.zeros(0, np.float32)
    assert batch.flat.dtype == np.float32 and batch.flat.tobytes() == want.tobytes()
    lengths = [0 if v is None else len(v) for v in vectors]
    assert batch.offsets.tolist() == np.concatenate(([0], np.cumsum(lengths))).tolist()
    nulls = [v is None for v in vectors]
    assert (batch.nulls.tolist() if batch.nulls is not None else [False] * len(vectors)) == nulls
    assert batch.ids == [f"r{i}" for i in range(len(vectors))]


def test_no_rows_no_floats() -> None:
    batch = assemble([])
    assert batch.ids == [] and batch.flat.size == 0 and batch.offsets.tolist() == [0]
