"""Options and inputs a Milvus write cannot use, refused before anything is made or sent, on Milvus Lite:
metadata named like the fields create=true makes, option sparse_column with no sparse field, option
namespace longer than a VarChar partition key holds, a collection name Milvus does not take; and a row
whose metadata clashes with several collection fields names each."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.report import WriteReport

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer


def write(uri: str, data: Any, **options: Any) -> WriteReport:
    options.setdefault("on_error", "report")
    with connect(uri, **options) as client:
        return client.write(data)


def seeded(server: LiteServer, name: str) -> None:
    """A quick-setup collection (VarChar ``id``, ``vector`` of dim 2) made by the connector, one row in it."""
    write(server.uri, [{"id": "seed", "values": [1.0, 2.0]}], collection=name, create=True, id_type="varchar")


# -- create=true names its fields id / vector whatever id_column / vector_column say ----------------


@pytest.mark.parametrize("id_type", ["auto", "varchar"])
def test_metadata_named_like_a_field_create_makes_is_refused_before_anything_is_made(
    milvus_lite: LiteServer, collection_name: str, id_type: str
) -> None:
    """Columns ``id`` and ``vector`` as metadata (the id is ``doc_id``, the vector ``emb``): the collection
    create=true made had fields ``id``/``vector``, and every row failed in it. With ``id_type=auto`` it is
    made with the first batch, whose columns show the clash; with a fixed id type and dimension it is made
    before any row is read, so only option metadata_columns can show it."""
    data = pa.table(
        {
            "doc_id": ["a", "b", "c"],
            "emb": [[1.0, 2.0]] * 3,
            "id": [10, 11, 12],
            "vector": ["x", "y", "z"],
            "title": ["t1", "t2", "t3"],
        }
    )
    options: dict[str, Any] = {"collection": collection_name, "create": True, "dimension": 2}
    options |= {"id_column": "doc_id", "vector_column": "emb", "id_type": id_type}
    if id_type != "auto":
        options["metadata_columns"] = ["title", "id", "vector"]
    with pytest.raises(
        ConfigError, match=r"^option metadata_columns: columns 'id', 'vector' would be metadata"
    ) as exc:
        write(milvus_lite.uri, data, **options)
    assert "key 'id', vector 'vector'" in str(exc.value)
    assert not milvus_lite.client.has_collection(collection_name)


def test_the_sparse_field_create_makes_counts_too(milvus_lite: LiteServer, collection_name: str) -> None:
    data = [{"doc_id": "a", "values": [1.0, 2.0], "sp": {"indices": [1], "values": [0.5]}, "sparse": "x"}]
    with pytest.raises(ConfigError, match=r"column 'sparse' would be metadata.*sparse vector 'sparse'"):
        write(
            milvus_lite.uri,
            data,
            collection=collection_name,
            create=True,
            id_column="doc_id",
            sparse_column="sp",
        )
    assert not milvus_lite.client.has_collection(collection_name)


def test_metadata_of_other_names_is_written_into_a_collection_create_makes(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    data = pa.table({"doc_id": ["a", "b"], "emb": [[1.0, 2.0]] * 2, "title": ["t1", "t2"]})
    report = write(
        milvus_lite.uri,
        data,
        collection=collection_name,
        create=True,
        id_column="doc_id",
        vector_column="emb",
    )
    assert report.written == 2 and not report.failures, report
    milvus_lite.client.load_collection(collection_name)
    rows = milvus_lite.client.query(collection_name, filter="", output_fields=["*"], limit=10)
    assert sorted((r["id"], r["title"]) for r in rows) == [("a", "t1"), ("b", "t2")]


# -- a row whose metadata clashes with several fields names each -----------------------------------


def test_a_row_clashing_with_two_fields_names_both(milvus_lite: LiteServer, collection_name: str) -> None:
    seeded(milvus_lite, collection_name)
    data = [
        {"doc_id": "a", "values": [1.0, 2.0], "id": 5, "vector": "x"},
        {"doc_id": "b", "values": [1.0, 2.0], "vector": "x"},
        {"doc_id": "c", "values": [1.0, 2.0]},
    ]
    report = write(milvus_lite.uri, data, collection=collection_name, id_column="doc_id")
    assert report.written == 1, report
    reasons = {f.ids[0]: f.error for f in report.failures}
    assert reasons["a"].startswith(
        f"metadata keys 'id', 'vector' are the names of collection {collection_name}'s fields 'id', 'vector'"
    )
    assert reasons["b"].startswith(
        f"metadata key 'vector' is the name of collection {collection_name}'s field"
    )


# -- option sparse_column into a collection with no sparse field ------------------------------------


def test_sparse_column_into_a_collection_without_a_sparse_field_is_a_config_error(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """Rows holding a sparse vector each failed alone, the others were written without one (pgvector's
    table check refuses the option up front: the same here, before any row)."""
    seeded(milvus_lite, collection_name)
    data = [{"id": f"r{i}", "values": [1.0, 2.0], "sp": {"indices": [i], "values": [1.0]}} for i in range(3)]
    data.append({"id": "nosparse", "values": [1.0, 2.0], "sp": None})
    with pytest.raises(
        ConfigError,
        match=rf"^option sparse_column: milvus collection '{collection_name}' has no SparseFloatVector field "
        r"for it \(its vector fields: 'vector'\)",
    ):
        write(milvus_lite.uri, data, collection=collection_name, sparse_column="sp")
    milvus_lite.client.load_collection(collection_name)
    assert milvus_lite.client.query(collection_name, filter="", output_fields=["id"], limit=10) == [
        {"id": "seed"}
    ]


# -- option namespace longer than a VarChar partition key holds -------------------------------------


def partition_keyed(server: LiteServer, name: str) -> None:
    from pymilvus import DataType

    client = server.client
    schema = client.create_schema(enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=2)
    schema.add_field("tenant", DataType.VARCHAR, max_length=8, is_partition_key=True)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="FLAT", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=index)


def test_option_namespace_longer_than_the_partition_key_holds_is_a_config_error(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    partition_keyed(milvus_lite, collection_name)
    rows = [{"id": f"r{i}", "values": [1.0, 2.0]} for i in range(5)]
    with pytest.raises(
        ConfigError,
        match=r"^option namespace 'tenant_with_a_long_name' has 23 characters; milvus collection .* stores the "
        r"namespace in its partition key field 'tenant' \(VarChar\), which holds at most 8$",
    ):
        write(milvus_lite.uri, rows, collection=collection_name, namespace="tenant_with_a_long_name")
    # at the limit it is written
    report = write(milvus_lite.uri, rows, collection=collection_name, namespace="tenant_8")
    assert report.written == 5 and not report.failures, report


def test_a_namespace_column_value_too_long_fails_its_rows_saying_it_is_the_namespace(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    partition_keyed(milvus_lite, collection_name)
    rows = [
        {"id": f"r{i}", "values": [1.0, 2.0], "ns": "tenant_with_a_long_name" if i % 2 else "ok"}
        for i in range(4)
    ]
    report = write(milvus_lite.uri, rows, collection=collection_name, namespace_column="ns")
    assert report.written == 2, report
    assert sorted(report.failed_ids) == ["r1", "r3"]
    assert {f.error for f in report.failures} == {
        f"namespace 'tenant_with_a_long_name' has 23 characters; milvus collection '{collection_name}' stores "
        "the namespace in its partition key field 'tenant' (VarChar), which holds at most 8"
    }


# -- a collection name Milvus does not take ---------------------------------------------------------


@pytest.mark.parametrize("name", ["a/b", "../../escape", "bad-name", "1abc", "sp ace", "x" * 256, "é_name"])
@pytest.mark.parametrize("create", [True, False])
def test_a_collection_name_milvus_refuses_is_a_config_error_naming_option_collection(
    milvus_lite: LiteServer, name: str, create: bool
) -> None:
    """Made with the first batch, it was a Rejected from CreateCollection; on Milvus Lite "bad-name",
    "1abc" and "sp ace" were made, collections no Milvus takes."""
    rows = [{"id": "a", "values": [1.0, 2.0]}]
    with pytest.raises(
        ConfigError, match=r"^option collection: .* is not a Milvus collection name \(a letter or _"
    ):
        write(milvus_lite.uri, rows, collection=name, create=create, on_error="fail")
    assert not milvus_lite.client.has_collection(name)


def test_a_name_in_the_uri_is_refused_naming_option_uri() -> None:
    with pytest.raises(
        ConfigError, match=r"^option uri: 'bad-name' \(8 characters\) is not a Milvus collection"
    ):
        connect("milvus://127.0.0.1:19530/bad-name")


@pytest.mark.parametrize("name", ["_private", "A1", "x" * 255, "ok_name_2"])
def test_names_milvus_takes_are_written(milvus_lite: LiteServer, name: str) -> None:
    try:
        report = write(milvus_lite.uri, [{"id": "a", "values": [1.0, 2.0]}], collection=name, create=True)
        assert report.written == 1 and not report.failures, report
    finally:
        if milvus_lite.client.has_collection(name):
            milvus_lite.client.drop_collection(name)
