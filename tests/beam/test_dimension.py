"""Beam: no worker's rows decide the dimension of a collection the pipeline creates.

Each worker sees only its own bundles, so a bundle holding one short vector could otherwise make a
new collection of its length and fail every good row after it. With ``create=True`` the dimension
comes from the option, the model, or the existing target (``check_target=True``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from vectordb.beam import WriteToVectorDB
from vectordb.connector import ConfigError

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

RECORDS = [{"id": f"g{i}", "values": [float(i)] * 4} for i in range(8)] + [
    {"id": "short", "values": [9.0, 9.0]}
]


def test_create_without_a_dimension_is_refused_where_the_pipeline_is_built(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    with pytest.raises(ConfigError, match=r"option dimension: with create=true, state the vectors' length"):
        WriteToVectorDB(milvus_lite.uri, collection=collection_name, create=True)
    with pytest.raises(ConfigError, match=r"option dimension: .* has no dimension yet and create=true"):
        WriteToVectorDB(milvus_lite.uri, collection=collection_name, create=True, check_target=True)
    assert not milvus_lite.client.has_collection(collection_name)


@pytest.mark.parametrize("how", ["stated", "existing"])
def test_the_short_row_fails_alone_whichever_bundle_comes_first(
    milvus_lite: LiteServer, collection_name: str, how: str
) -> None:
    if how == "existing":
        milvus_lite.client.create_collection(collection_name, dimension=4, id_type="string", max_length=64)
        sink = WriteToVectorDB(
            milvus_lite.uri, collection=collection_name, create=True, check_target=True, on_error="report"
        )
        assert sink.options.dimension == 4  # learnt from the collection, for every worker
    else:
        sink = WriteToVectorDB(
            milvus_lite.uri, collection=collection_name, create=True, dimension=4, on_error="report"
        )
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        # the short row first, in a bundle of its own: it is the one a worker would have learnt from
        result = (
            pipeline | beam.Create([RECORDS[-1:], RECORDS[:-1]]) | beam.FlatMap(lambda rows: rows)
        ) | sink
        assert_that(
            result.failed | beam.Map(lambda d: (d["id"], d["error"])),
            equal_to([("short", "vector has 2 dimensions; expected 4")]),
        )
    milvus_lite.client.load_collection(collection_name)
    stored = milvus_lite.client.query(collection_name, filter='id != ""', output_fields=["id"])
    assert sorted(r["id"] for r in stored) == [f"g{i}" for i in range(8)]
