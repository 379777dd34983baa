"""``WriteToVectorDB`` into a real Weaviate (weaviate-server v1.35.2): every object read back with the official
weaviate-client and compared exactly; rows Weaviate refuses (a property of the wrong type) come out of
``.failed`` with Weaviate's own reason, and only those."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import apache_beam as beam
import numpy as np
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from vectordb.beam import WriteToVectorDB
from vectordb.connector.ids import ORIGINAL_ID_KEY

from . import data
from .conftest import counters

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer


SHARDS = 2


def spoil(record: dict[str, Any], refused: frozenset[str]) -> dict[str, Any]:
    """A title that is a number where the collection's ``title`` is text: Weaviate refuses the object."""
    return {**record, "title": 13} if record["id"] in refused else record


def test_beam_writes_weaviate_and_fails_exactly_the_rows_it_refuses(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    from weaviate.classes.config import Configure, DataType, Property

    client = weaviate_server.client()
    try:
        client.collections.create(
            weaviate_collection,
            vector_config=Configure.Vectors.self_provided(),
            properties=[
                Property(name="title", data_type=DataType.TEXT),
                Property(name="shard", data_type=DataType.INT),
            ],
        )
    finally:
        client.close()
    refused = data.rejected_ids(SHARDS, every=401)
    pipeline = beam.Pipeline(runner=FnApiRunner())
    result = (
        pipeline
        | beam.Create(list(range(SHARDS)))
        | beam.FlatMap(data.records)
        | beam.Map(spoil, refused)
        | WriteToVectorDB(
            weaviate_server.uri(weaviate_collection),
            grpc_port=weaviate_server.grpc_port,
            on_error="report",
            batch_size=100,
        )
    )
    reason = f"invalid text property 'title' on class '{weaviate_collection}': not a string, but float64"
    assert_that(
        result.failed | beam.Map(lambda d: (d["id"], d["error_type"], d["error"])),
        equal_to([(i, "Rejected", reason) for i in refused]),
    )
    run = pipeline.run()
    run.wait_until_finish()

    want = {k: v for k, v in data.expected(SHARDS).items() if k not in refused}
    client = weaviate_server.client()
    try:
        objects = list(client.collections.get(weaviate_collection).iterator(include_vector=True))
    finally:
        client.close()
    assert len(objects) == len(want)
    for obj in objects:
        props = {k: v for k, v in obj.properties.items() if v is not None}
        raw_id = props.pop(ORIGINAL_ID_KEY)
        vector, metadata = want[raw_id]
        assert np.asarray(obj.vector["default"], dtype=np.float32).tobytes() == vector, raw_id
        assert props == metadata, raw_id
    found = counters(run)
    assert found["written"] == len(want) and found["failed"] == len(refused)
