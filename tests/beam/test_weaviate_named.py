"""Several vectors a row through Beam into a real Weaviate (weaviate-server v1.35.2): ``pyarrow.RecordBatch``
elements whose columns hold named dense vectors and a multi-vector, read back exactly per name with
weaviate-client; a bad row comes out of ``.failed`` naming its vector; an existing collection lacking a name is
a ConfigError where the pipeline is built (``check_target=True``), and so is ``create=true`` without every
name's dimension."""

from __future__ import annotations

from typing import TYPE_CHECKING

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests.integration.test_weaviate_named import OPTIONS, Rows, stored
from vectordb.beam import WriteToVectorDB
from vectordb.connector import ConfigError

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer


def test_arrow_batches_write_every_name_exactly(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    rows = Rows([f"e{i}" for i in range(240)], seed=21)
    table = rows.table(n=list(range(240)))
    body = table["body_vec"].to_pylist()
    body[100] = None  # a null vector under one name: that row fails alone
    table = table.set_column(
        table.column_names.index("body_vec"), "body_vec", pa.array(body, table["body_vec"].type)
    )
    elements = table.to_batches(max_chunksize=60)
    assert len(elements) == 4
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        result = (
            pipeline
            | beam.Create(elements, reshuffle=False)
            | WriteToVectorDB(
                weaviate_server.uri(weaviate_collection),
                grpc_port=weaviate_server.grpc_port,
                create=True,
                vector_dimensions={"title": 8, "body": 5, "colbert": 4},
                on_error="report",
                batch_size=50,
                **OPTIONS,
            )
        )
        assert_that(
            result.failed | beam.Map(lambda d: (d["id"], d["error_type"], d["error"])),
            equal_to([("e100", "Invalid", "vector 'body' is null")]),
        )
    expected = rows.expected()
    del expected["e100"]
    assert stored(weaviate_server, weaviate_collection) == expected


def test_an_existing_collection_lacking_a_name_fails_where_the_pipeline_is_built(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    config = {"title": {"vectorizer": {"none": {}}, "vectorIndexType": "hnsw"}}
    made = weaviate_server.rest(
        "POST", "/v1/schema", json={"class": weaviate_collection, "vectorConfig": config}
    )
    assert made.status_code == 200, made.text
    with pytest.raises(ConfigError, match=r"option vector_columns: collection '\w+' has no vector 'body'"):
        WriteToVectorDB(
            weaviate_server.uri(weaviate_collection),
            grpc_port=weaviate_server.grpc_port,
            check_target=True,
            **OPTIONS,
        )


def test_create_needs_every_names_dimension_where_the_pipeline_is_built(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """No worker's rows may decide a name's dimension of the collection the pipeline makes."""
    uri = weaviate_server.uri(weaviate_collection)
    with pytest.raises(
        ConfigError, match=r"option vector_dimensions: with create=true, state the length of 'colbert'"
    ):
        WriteToVectorDB(uri, create=True, vector_dimensions={"title": 8, "body": 5}, **OPTIONS)
    WriteToVectorDB(uri, create=True, vector_dimensions={"title": 8, "body": 5, "colbert": 4}, **OPTIONS)
