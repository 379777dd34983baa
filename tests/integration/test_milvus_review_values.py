"""Milvus values the connector must spell or refuse itself, against a real Milvus Lite server: ids with
control characters in delete expressions, JSON fields given a bare scalar, float32 underflow, and the
VarChar key's max_length."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from vectordb.connector import connect
from vectordb.connector.report import WriteReport

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

DIM = 4
# every character a string literal escapes, and control characters it leaves raw (JSON's \u0001 and
# \u0000 Lite refused: "unknown escape sequence \u")
ODD_IDS = ["plain", "nul\x00id", "soh\x01id", "esc\x1bid", "del\x7fid", 'quote"id', "back\\slash", "nl\nid"]
ODD_IDS += ["tab\tid", "cr\rid", "bs\bid", "ff\fid", "end\\", '"']


def write(uri: str, data: Any, **options: Any) -> WriteReport:
    options.setdefault("on_error", "report")
    with connect(uri, **options) as client:
        return client.write(data)


def stored_ids(server: LiteServer, name: str) -> list[Any]:
    server.client.load_collection(name)
    return sorted(r["id"] for r in server.client.query(name, filter="", output_fields=["id"], limit=1000))


def rows(ids: list[Any]) -> list[dict[str, Any]]:
    return [{"id": i, "values": [float(n), 1.0, 2.0, 3.0]} for n, i in enumerate(ids)]


@pytest.mark.parametrize("namespace", [None, "p1"])
def test_ids_with_control_characters_are_deleted(
    milvus_lite: LiteServer, collection_name: str, namespace: str | None
) -> None:
    uri = milvus_lite.uri
    report = write(uri, rows(ODD_IDS), collection=collection_name, create=True, namespace=namespace)
    assert report.written == len(ODD_IDS), report
    assert stored_ids(milvus_lite, collection_name) == sorted(ODD_IDS)
    with connect(uri, collection=collection_name, namespace=namespace, on_error="report") as client:
        deleted = client.delete(ODD_IDS[1:])
    assert deleted.failed == 0 and deleted.written == len(ODD_IDS) - 1, deleted
    assert stored_ids(milvus_lite, collection_name) == ["plain"]


def test_a_namespace_clear_over_ids_with_control_characters_clears_it(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    uri = milvus_lite.uri
    write(uri, rows(ODD_IDS), collection=collection_name, create=True, namespace="p1")
    with connect(uri, collection=collection_name) as client:
        client.clear(namespace="p1")
    assert stored_ids(milvus_lite, collection_name) == []


def make_collection(server: LiteServer, name: str, field: str, dtype: str, **params: Any) -> None:
    """A collection made with pymilvus: VarChar ``id``, a ``vector`` and nullable ``field``."""
    from pymilvus import DataType

    schema = server.client.create_schema(enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field(field, getattr(DataType, dtype), nullable=True, **params)
    index = server.client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    server.client.create_collection(name, schema=schema, index_params=index)


def test_a_json_field_given_a_bare_scalar_fails_the_row_naming_the_field(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """A string Lite stored but could not read back (every read of the collection failed after); a number
    or bool it refused with "Expected bytes, got a 'int' object", naming nothing."""
    make_collection(milvus_lite, collection_name, "j", "JSON")
    good = {"obj": {"k": 1}, "arr": [1, "a"], "empty": {}}
    bad = {"text": "s", "num": 5, "flag": True, "real": 1.5}
    data = [{"id": k, "j": v, **rows([k])[0]} for k, v in {**good, **bad}.items()]
    report = write(milvus_lite.uri, data, collection=collection_name)
    assert report.written == len(good) and sorted(report.failed_ids) == sorted(bad), report
    assert report.requests == 1, report
    for failure in report.failures:
        assert failure.error == "field 'j' (JSON): Milvus Lite stores only an object or array here"
        assert failure.error_type == "Invalid"
    milvus_lite.client.load_collection(collection_name)
    back = milvus_lite.client.query(collection_name, filter="", output_fields=["id", "j"], limit=100)
    assert {r["id"]: r["j"] for r in back} == good


def test_a_float_that_float32_holds_as_zero_fails_the_row(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """1e-50 in a Float field (or an Array of Float) was stored as 0.0 without a word."""
    from pymilvus import DataType

    schema = milvus_lite.client.create_schema(enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field("f", DataType.FLOAT, nullable=True)
    schema.add_field("fs", DataType.ARRAY, element_type=DataType.FLOAT, max_capacity=3, nullable=True)
    index = milvus_lite.client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    milvus_lite.client.create_collection(collection_name, schema=schema, index_params=index)
    values = {"zero": 0.0, "negzero": -0.0, "subnormal": 1e-40, "tiny": 1e-50, "negtiny": -1e-46}
    data = [{"id": k, "f": v, **rows([k])[0]} for k, v in values.items()]
    data.append({"id": "in_array", "fs": [1.0, 1e-50], **rows(["in_array"])[0]})
    report = write(milvus_lite.uri, data, collection=collection_name)
    assert sorted(report.failed_ids) == ["in_array", "negtiny", "tiny"], report
    errors = {f.ids[0]: f.error for f in report.failures}
    assert errors["tiny"] == "field 'f' (Float) would store 1e-50 as 0.0"
    assert errors["negtiny"] == "field 'f' (Float) would store -1e-46 as -0.0"
    assert errors["in_array"] == "field 'fs[1]' (Float) would store 1e-50 as 0.0"
    milvus_lite.client.load_collection(collection_name)
    back = milvus_lite.client.query(collection_name, filter="", output_fields=["id", "f"], limit=100)
    assert sorted(r["id"] for r in back) == ["negzero", "subnormal", "zero"]


def test_a_first_batch_row_without_sparse_fails_with_the_connectors_reason(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """create=true with no collection yet: the first batch's sparse rows give it a sparse field, so a row
    with none fails before sending, as it does once the collection exists; it got Milvus's "sparse vector
    must contain at least one nonzero float32 weight" after isolation requests."""
    data = [
        {"id": "has", "sparse_values": {"indices": [1], "values": [0.5]}, **rows(["has"])[0]},
        {"id": "nosparse", **rows(["nosparse"])[0]},
    ]
    reports = [write(milvus_lite.uri, data, collection=collection_name, create=True) for _ in range(2)]
    for report in reports:  # made by this write, then existing
        assert report.written == 1 and report.failed_ids == ["nosparse"], report
        assert report.failures[0].error_type == "Invalid"
        assert report.failures[0].error.startswith("no sparse vector ('sparse_values' is null or empty)")
        assert report.requests == 1, report
    assert stored_ids(milvus_lite, collection_name) == ["has"]


def test_an_id_longer_than_the_keys_max_length_fails_alone_before_sending(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """The key's max_length (512, as create=true makes it) was not read: each over-long id cost about one
    more request (3758 requests for 3000 rows), with Milvus's reason; a delete of one deletes nothing."""
    uri = milvus_lite.uri
    write(uri, rows(["seed"]), collection=collection_name, create=True)
    fits = ["a" * 512, "é" * 512, *(f"short{i}" for i in range(20))]
    long = ["b" * 513, "c" * 600, "é" * 513]
    report = write(uri, rows(fits[:10] + long + fits[10:]), collection=collection_name)
    assert report.written == len(fits) and sorted(report.failed_ids) == sorted(long), report
    assert report.requests == 1, report
    errors = {i[:1]: f.error for f in report.failures for i in f.ids}
    assert errors == {
        "b": "id has 513 characters; key 'id' holds at most 512",
        "c": "id has 600 characters; key 'id' holds at most 512",
        "é": "id has 513 characters; key 'id' holds at most 512",
    }
    assert all(f.error_type == "Invalid" for f in report.failures)
    assert stored_ids(milvus_lite, collection_name) == sorted(["seed", *fits])
    with connect(uri, collection=collection_name, on_error="report") as client:
        deleted = client.delete([long[0], "seed"])
    assert deleted.failed == 0 and deleted.written == 2, deleted
    assert stored_ids(milvus_lite, collection_name) == sorted(fits)


def test_a_sparse_index_milvus_refuses_fails_alone_before_sending(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """The row checks allow index 2^32-1 (other databases take it); Milvus takes indices "less than
    2^32-1", and refused the row only after isolation requests."""
    top = 2**32 - 1
    data = [
        {"id": "low", "sparse_values": {"indices": [0, 7], "values": [0.5, 1.0]}},
        {"id": "highest", "sparse_values": {"indices": [3, top - 1], "values": [0.5, 1.0]}},
        {"id": "beyond", "sparse_values": {"indices": [3, top], "values": [0.5, 1.0]}},
    ]
    data = [{**row, **rows([row["id"]])[0]} for row in data]
    for _ in range(2):  # collection made by this write, then existing
        report = write(milvus_lite.uri, data, collection=collection_name, create=True)
        assert report.written == 2 and report.failed_ids == ["beyond"], report
        assert report.failures[0].error_type == "Invalid"
        assert report.failures[0].error == (
            "'sparse_values' has index 4294967295; Milvus takes sparse indices less than 2^32-1 "
            "(at most 4294967294)"
        )
        assert report.requests == 1, report
    assert stored_ids(milvus_lite, collection_name) == ["highest", "low"]
