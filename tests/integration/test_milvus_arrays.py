"""Milvus Array fields and VarChar lengths: a collection made by pymilvus with ``ARRAY`` fields is written
element by element (a list of tags lands in its field, not in ``$meta`` beside it), and a value the field
cannot hold (too many elements, a string too long, a null element, an element of another type) fails its
row alone, naming the field, before it costs a request the server would refuse whole."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.milvus.schema import ARRAY, BOOL, INT64, VARCHAR, Layout, ScalarField
from vectordb.connector.backends.milvus.wire import encode_upsert
from vectordb.connector.rows import RowBatch

from .test_milvus import DIM, read_collection

if TYPE_CHECKING:
    from vectordb.connector.backends.milvus import LiteServer


def _array_collection(server: LiteServer, name: str, *, nums_required: bool = True) -> None:
    from pymilvus import DataType

    schema = server.client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field(
        "tags", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=3, max_length=5, nullable=True
    )
    schema.add_field(
        "nums", DataType.ARRAY, element_type=DataType.INT16, max_capacity=4, nullable=not nums_required
    )
    schema.add_field("flags", DataType.ARRAY, element_type=DataType.BOOL, max_capacity=2, nullable=True)
    schema.add_field("scores", DataType.ARRAY, element_type=DataType.DOUBLE, max_capacity=2, nullable=True)
    schema.add_field("title", DataType.VARCHAR, max_length=4, nullable=True)
    index = server.client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    server.client.create_collection(name, schema=schema, index_params=index)


def _row(i: int, **metadata: Any) -> dict[str, Any]:
    vector = np.random.default_rng(i).standard_normal(DIM, dtype=np.float32)
    return {"id": f"r{i}", "values": vector, "nums": [i], **metadata}


def test_array_fields_hold_each_rows_list_and_bad_values_fail_alone(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    _array_collection(milvus_lite, collection_name)
    good = [
        _row(0, tags=["a", "ééééé"], flags=[True, False], scores=[0.5, 2.0**60], title="ñañá"),
        _row(1, tags=[], nums=[-32768, 32767, 0, 1]),
        _row(2, tags=None, extra=["goes", "to", "$meta"]),
        _row(3, nums=np.array([7, 8], dtype=np.int64)),
    ]
    bad = {
        "r10": (
            _row(10, tags=["a", "b", "c", "d"]),
            "field 'tags' (Array of VarChar) holds at most 3 elements",
        ),
        "r12": (
            _row(12, tags=["a", None]),
            "field 'tags[1]' (VarChar) cannot hold None: an Array holds no nulls",
        ),
        "r13": (_row(13, nums=[1, 40000]), "field 'nums[1]' (Int16) cannot hold 40000"),
        "r14": (_row(14, tags="abc"), "field 'tags' (Array of VarChar) cannot hold 'abc': it takes a list"),
        "r15": (_row(15, flags=[1]), "field 'flags[0]' (Bool) cannot hold 1"),
        "r16": (
            _row(16, title="ééééé"),
            "field 'title' (VarChar) holds at most 4 characters; the value has 5",
        ),
        "r17": ({**_row(17), "nums": None}, "no value for field 'nums'"),
    }
    with connect(milvus_lite.uri, collection=collection_name) as client:
        report = client.write(good + [row for row, _ in bad.values()])
    failures = {i: f.error for f in report.failures for i in f.ids}
    assert report.written == len(good), sorted(failures)
    assert sorted(failures) == sorted(bad)
    for row_id, (_, reason) in bad.items():
        assert reason in failures[row_id], (row_id, failures[row_id])

    stored = read_collection(milvus_lite.client, collection_name)
    assert sorted(stored) == ["r0", "r1", "r2", "r3"]
    md = {key: row.metadata for key, row in stored.items()}
    assert md["r0"]["tags"] == ["a", "ééééé"] and md["r0"]["flags"] == [True, False]
    assert md["r0"]["scores"] == [0.5, 2.0**60] and md["r0"]["title"] == "ñañá"
    assert md["r1"]["tags"] == [] and md["r1"]["nums"] == [-32768, 32767, 0, 1]
    assert md["r2"]["tags"] is None and md["r2"]["extra"] == ["goes", "to", "$meta"]
    assert md["r3"]["nums"] == [7, 8] and md["r3"]["tags"] is None
    np.testing.assert_array_equal(stored["r0"].vector, good[0]["values"])


def test_a_required_array_field_no_longer_refuses_the_collection(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """A required Array field was "data type 22, which the connector cannot fill": no write at all."""
    _array_collection(milvus_lite, collection_name, nums_required=True)
    with connect(milvus_lite.uri, collection=collection_name) as client:
        assert client.write([_row(5)]).written == 1
    assert read_collection(milvus_lite.client, collection_name)["r5"].metadata["nums"] == [5]


def test_a_field_the_connector_cannot_fill_is_named_by_its_type(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    from pymilvus import DataType

    schema = milvus_lite.client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field("shape", DataType.GEOMETRY)
    index = milvus_lite.client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    milvus_lite.client.create_collection(collection_name, schema=schema, index_params=index)
    with (
        pytest.raises(ConfigError, match="required field 'shape' of type Geometry"),
        connect(milvus_lite.uri, collection=collection_name) as client,
    ):
        client.write([_row(0)])


def test_array_bytes_parse_like_pymilvus() -> None:
    """The request's Array field, read back by pymilvus's own generated messages."""
    from pymilvus.grpc_gen import milvus_pb2

    layout = Layout(
        collection="c",
        dim=3,
        scalars=(
            ScalarField("tags", ARRAY, False, element=VARCHAR, max_length=8, max_capacity=4),
            ScalarField("nums", ARRAY, True, element=INT64),
            ScalarField("flags", ARRAY, False, element=BOOL),
        ),
    )
    batch = RowBatch(
        ids=["a", "b", "c"],
        vectors=np.ones((3, 3), dtype=np.float32),
        metadata=[
            {"tags": ["x", "yé"], "nums": [2**62, -1], "flags": [True]},
            {"nums": []},
            {"tags": [], "nums": [0], "flags": None},
        ],
    )
    encoded = encode_upsert(batch, layout)
    assert encoded.refused == []
    # a VarChar element's max_length (Milvus Lite leaves it out of the schema it describes; Milvus keeps it)
    long = RowBatch(
        ids=["d"], vectors=np.ones((1, 3), dtype=np.float32), metadata=[{"tags": ["ninechars"], "nums": []}]
    )
    (refused,) = encode_upsert(long, layout).refused
    assert refused.error == "field 'tags[0]' (VarChar) holds at most 8 characters; the value has 9"
    request = milvus_pb2.UpsertRequest.FromString(encoded.body)
    fields = {f.field_name: f for f in request.fields_data}
    tags, nums, flags = fields["tags"], fields["nums"], fields["flags"]
    assert tags.type == ARRAY and tags.scalars.array_data.element_type == VARCHAR
    assert [list(s.string_data.data) for s in tags.scalars.array_data.data] == [["x", "yé"], []]
    assert list(tags.valid_data) == [True, False, True]
    assert [list(s.long_data.data) for s in nums.scalars.array_data.data] == [[2**62, -1], [], [0]]
    assert list(nums.valid_data) == []  # required: no validity column
    assert [list(s.bool_data.data) for s in flags.scalars.array_data.data] == [[True]]
    assert list(flags.valid_data) == [True, False, False]
