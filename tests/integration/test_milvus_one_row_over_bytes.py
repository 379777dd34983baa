"""max_batch_bytes holds for a row alone: one whose own request is over it fails alone (Invalid), its
error giving that request's encoded size in the client's words, and is not sent. The engine sent such a
row whenever the size estimate came out under the option (README option table), and the estimate of
negative integers (a 10-byte varint each, 2 JSON characters) and of non-ASCII keys (counted in
characters, sent in UTF-8) came out under."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from vectordb.connector import connect
from vectordb.connector.rows import RowBatch

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

LIMIT = 20_000


def make(server: LiteServer, name: str) -> None:
    from pymilvus import DataType

    client = server.client
    schema = client.create_schema(enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=20_000)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=2)
    schema.add_field("a", DataType.ARRAY, element_type=DataType.INT64, max_capacity=4096)
    schema.add_field("d", DataType.ARRAY, element_type=DataType.DOUBLE, max_capacity=4096, nullable=True)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=index)


def stored_ids(server: LiteServer, name: str) -> list[str]:
    server.client.load_collection(name)
    return sorted(row["id"] for row in server.client.query(name, filter="", output_fields=["id"], limit=100))


def test_a_row_whose_request_is_over_max_batch_bytes_fails_alone(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    make(milvus_lite, collection_name)
    # 4,000 doubles: about 16 KB as JSON ("0.0,"), the size estimate; 32 KB encoded
    rows = [
        {"id": "doubles", "values": [1.0, 0.0], "metadata": {"a": [1], "d": [0.0] * 4000}},
        {"id": "small", "values": [1.0, 0.0], "metadata": {"a": [1]}},
    ]
    with connect(
        milvus_lite.uri, collection=collection_name, max_batch_bytes=LIMIT, on_error="report"
    ) as client:
        report = client.write(rows)
    assert (report.written, report.failed) == (1, 1)
    [failure] = report.failures
    assert failure.ids == ("doubles",) and failure.error_type == "Invalid"
    size = int(failure.error.split()[2])
    assert size > LIMIT
    assert failure.error == (
        f"row is {size} bytes encoded (a request of it alone); a request takes at most {LIMIT} "
        "(option max_batch_bytes)"
    )
    assert stored_ids(milvus_lite, collection_name) == ["small"]


@pytest.mark.parametrize(
    ("key", "metadata"),
    [("neg", {"a": [-1] * 4000}), ("日" * 9000, {"a": [1]})],
    ids=["negative_int64s", "cjk_key"],
)
def test_the_size_estimate_of_a_row_is_not_under_its_request(
    milvus_lite: LiteServer, collection_name: str, key: str, metadata: dict[str, Any]
) -> None:
    make(milvus_lite, collection_name)
    with connect(milvus_lite.uri, collection=collection_name) as client:
        assert client.write([{"id": "small", "values": [1.0, 0.0], "metadata": {"a": [1]}}]).ok
        backend = client.backend
        batch = RowBatch(ids=[key], vectors=np.ones((1, 2), dtype=np.float32), metadata=[metadata])
        sent = len(backend.request_for(batch).body)
        estimate = int(backend.row_bytes(batch)[0]) + backend.limits.overhead_bytes
    assert estimate >= sent
