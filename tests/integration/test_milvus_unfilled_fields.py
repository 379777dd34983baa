"""Vector fields a write leaves out, on Milvus Lite: a nullable one is refused up front (Lite stores no null
vector: a row got one of zeros nobody sent), a metadata key named like one is refused per row (it became
that vector), and a second required sparse field is refused up front (it was never sent: every request
was refused, then the write stopped)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.milvus import Layout, encode_upsert
from vectordb.connector.rows import RowBatch

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer


def make(server: LiteServer, name: str, *, v2_nullable: bool = False, sparse: tuple[bool, ...] = ()) -> None:
    """INT64 key ``id``, FloatVector ``vector`` (dim 2), a nullable FloatVector ``v2`` if asked, and a
    sparse field ``sp1``, ``sp2``... per entry of ``sparse`` (True: nullable)."""
    from pymilvus import DataType

    client = server.client
    schema = client.create_schema(enable_dynamic_field=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    if v2_nullable:
        schema.add_field("v2", DataType.FLOAT_VECTOR, dim=2, nullable=True)
        index.add_index("v2", index_type="AUTOINDEX", metric_type="COSINE")
    for i, nullable in enumerate(sparse, 1):
        schema.add_field(f"sp{i}", DataType.SPARSE_FLOAT_VECTOR, nullable=nullable)
        index.add_index(f"sp{i}", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    client.create_collection(name, schema=schema, index_params=index)


def test_a_nullable_vector_field_the_write_leaves_out_is_refused_before_any_row(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    make(milvus_lite, collection_name, v2_nullable=True)
    rows = [
        {"id": 1, "values": [1.0, 0.0], "metadata": {"v2": [0.0, 1.0]}},
        {"id": 2, "values": [1.0, 0.0], "metadata": {"note": "no v2 sent"}},
    ]
    with (
        pytest.raises(ConfigError) as caught,
        connect(milvus_lite.uri, collection=collection_name, vector_field="vector") as client,
    ):
        client.write(rows)
    message = str(caught.value)
    assert message.startswith("option vector_field: ")
    assert "nullable vector field 'v2' (FloatVector)" in message
    milvus_lite.client.load_collection(collection_name)
    assert milvus_lite.client.query(collection_name, filter="", output_fields=["id"], limit=10) == []


def test_a_metadata_key_named_like_an_unfilled_vector_field_fails_its_row() -> None:
    layout = Layout(collection="c", dim=2, key_int64=True, vector_fields=("vector", "v2"))
    batch = RowBatch(
        ids=[1, 2],
        vectors=np.ones((2, 2), dtype=np.float32),
        metadata=[{"v2": [0.0, 1.0]}, {"note": "x"}],
    )
    encoded = encode_upsert(batch, layout)
    assert encoded.sent == 1 and encoded.sent_rows == [1]
    assert [f.ids for f in encoded.refused] == [("1",)]
    assert encoded.refused[0].error.startswith("metadata key 'v2' is the name of collection c's field 'v2'")


def test_two_required_sparse_fields_are_refused_before_any_row(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    make(milvus_lite, collection_name, sparse=(False, False))
    rows = [
        {"id": i, "values": [1.0, 0.0], "sparse_values": {"indices": [i], "values": [1.0]}} for i in range(3)
    ]
    with pytest.raises(ConfigError) as caught, connect(milvus_lite.uri, collection=collection_name) as client:
        client.write(rows)
    assert "requires SparseFloatVector fields 'sp1', 'sp2'" in str(caught.value)
    assert "so 'sp2' cannot be filled" in str(caught.value)


def test_a_second_nullable_sparse_field_left_out_is_refused_on_lite(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    make(milvus_lite, collection_name, sparse=(True, False))
    rows = [{"id": 1, "values": [1.0, 0.0], "sparse_values": {"indices": [1], "values": [1.0]}}]
    with pytest.raises(ConfigError) as caught, connect(milvus_lite.uri, collection=collection_name) as client:
        client.write(rows)
    assert "nullable vector field 'sp1' (SparseFloatVector)" in str(caught.value)


def test_one_sparse_field_is_still_written(milvus_lite: LiteServer, collection_name: str) -> None:
    make(milvus_lite, collection_name, sparse=(False,))
    rows = [
        {"id": i, "values": [1.0, 0.0], "sparse_values": {"indices": [i], "values": [1.0]}} for i in range(3)
    ]
    with connect(milvus_lite.uri, collection=collection_name) as client:
        report = client.write(rows)
    assert report.ok and report.written == 3
