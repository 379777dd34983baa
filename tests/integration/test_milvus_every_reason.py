"""A row with several fields Milvus cannot hold fails once, naming each of them ("; "): it named only the
first, so fixing it and writing again earned the next failure, one write per bad field."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vectordb.connector import connect

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer


def make(server: LiteServer, name: str) -> None:
    from pymilvus import DataType

    client = server.client
    schema = client.create_schema(enable_dynamic_field=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=2)
    schema.add_field("title", DataType.VARCHAR, max_length=5)
    schema.add_field("n", DataType.INT8)
    schema.add_field("tags", DataType.ARRAY, element_type=DataType.INT64, max_capacity=3)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=index)


def test_a_row_with_three_bad_fields_names_all_three(milvus_lite: LiteServer, collection_name: str) -> None:
    make(milvus_lite, collection_name)
    bad = {"id": 1, "values": [1.0, 0.0], "metadata": {"title": "toolong", "n": 300, "tags": [1, 2, 3, 4]}}
    good = {"id": 2, "values": [1.0, 0.0], "metadata": {"title": "ok", "n": 3, "tags": [1]}}
    with connect(milvus_lite.uri, collection=collection_name, on_error="report") as client:
        report = client.write([bad, good])
    assert (report.written, report.failed) == (1, 1)
    [failure] = report.failures
    assert failure.ids == ("1",) and failure.error_type == "Invalid"
    assert failure.error == (
        "field 'title' (VarChar) holds at most 5 characters; the value has 7; "
        "field 'n' (Int8) cannot hold 300; "
        "field 'tags' (Array of Int64) holds at most 3 elements; the value has 4"
    )


def test_a_bad_id_and_a_bad_field_are_both_named(milvus_lite: LiteServer, collection_name: str) -> None:
    make(milvus_lite, collection_name)
    row = {"id": "x1", "values": [1.0, 0.0], "metadata": {"title": "ok", "n": 300, "tags": []}}
    with connect(milvus_lite.uri, collection=collection_name, on_error="report") as client:
        report = client.write([row])
    [failure] = report.failures
    assert failure.error.startswith("id 'x1' is not a 64-bit integer")
    assert failure.error.endswith("; field 'n' (Int8) cannot hold 300")
