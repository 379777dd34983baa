"""Milvus rows and options the connector must refuse alone, or name, against a real Milvus Lite server.

Each test writes through the connector and reads back with pymilvus: a bad row fails alone with its
reason, the others land unchanged, and a bad option is a ConfigError naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.milvus import MilvusBackend
from vectordb.connector.backends.milvus import wire as milvus_wire
from vectordb.connector.backends.milvus.status import Status, status_of
from vectordb.connector.redaction import Secrets
from vectordb.connector.report import WriteReport

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

DIM = 4


def write(uri: str, data: Any, **options: Any) -> WriteReport:
    options.setdefault("on_error", "report")
    with connect(uri, **options) as client:
        return client.write(data)


def vec(seed: int) -> list[float]:
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32).tolist()


def stored(server: LiteServer, name: str, **kwargs: Any) -> dict[Any, dict[str, Any]]:
    server.client.load_collection(name)
    rows = server.client.query(name, filter="", output_fields=["*"], limit=1000, **kwargs)
    return {row["id"]: row for row in rows}


def make_collection(
    server: LiteServer, name: str, *fields: tuple[str, Any, dict[str, Any]], **kw: Any
) -> None:
    """A collection made with pymilvus: VarChar ``id`` (INT64 with ``int64=True``), a ``vector``, ``fields``."""
    from pymilvus import DataType

    client = server.client
    schema = client.create_schema(enable_dynamic_field=True, **kw.pop("schema", {}))
    if kw.pop("int64", False):
        schema.add_field("id", DataType.INT64, is_primary=True)
    else:
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    for field_name, dtype, params in fields:
        schema.add_field(field_name, getattr(DataType, dtype), **params)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=index)


# -- 1: Milvus Lite's code 1 is a refusal, not "service not ready" ---------------------------------


def test_a_row_lite_refuses_with_code_1_fails_alone(
    milvus_lite: LiteServer, collection_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON field given 5: Lite answers code 1 (UnexpectedError); read as Unavailable, the whole batch
    was retried for ~20 s and failed, good rows with it. The connector refuses such a value itself now
    (test_milvus_review_values.py), so its check is turned off here to reach Lite's refusal."""
    monkeypatch.setattr(milvus_wire, "_scalar_problem", lambda f, value: None)
    make_collection(milvus_lite, collection_name, ("js", "JSON", {"nullable": True}))
    data = [{"id": f"good{i}", "values": vec(i), "js": {"k": i}} for i in range(6)]
    data.insert(3, {"id": "bad", "values": vec(9), "js": 5})
    report = write(milvus_lite.uri, data, collection=collection_name, max_retries=1)
    assert report.written == 6 and report.failed_ids == ["bad"], report
    assert report.failures[0].error_type == "Rejected"
    assert "(code 1)" in report.failures[0].error
    back = stored(milvus_lite, collection_name)
    assert sorted(back) == [f"good{i}" for i in range(6)]
    assert back["good4"]["js"] == {"k": 4}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [({1: 1, 3: 1}, Status(1)), ({3: 1}, Status(1)), ({1: 1, 3: 1, 4: 1}, Status(1, retriable=True)),
     ({3: 1 | 1 << 20}, Status(1, retriable=True))],
)  # fmt: skip
def test_code_1_is_unavailable_only_from_a_server_not_ready(fields: dict[int, int], expected: Status) -> None:
    from vectordb.connector import protowire as pw

    raw = b"".join(pw.varint_field(number, value) for number, value in sorted(fields.items()))
    status = status_of(pw.FieldReader(raw), Secrets())
    assert status == expected
    assert status.kind.__name__ == ("Unavailable" if expected.retriable else "Rejected")


# -- 2: an INT64 key's text ids follow one rule ------------------------------------------------------


def test_a_malformed_integer_id_fails_alone_in_upserts_and_deletes(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """ "--7" passed ``lstrip("-").isdecimal()`` and int() raised: the whole write stopped with a ValueError."""
    make_collection(milvus_lite, collection_name, int64=True)
    data = [
        {"id": 10, "values": vec(1)},
        {"id": "--7", "values": vec(2)},
        {"id": " -11 ", "values": vec(3)},
        {"id": 1, "values": vec(0)},
    ]
    report = write(milvus_lite.uri, data, collection=collection_name)
    assert report.written == 3 and report.failed_ids == ["--7"], report
    assert report.failures[0].error.startswith("id '--7' is not a 64-bit integer")
    assert sorted(stored(milvus_lite, collection_name)) == [-11, 1, 10]
    with connect(milvus_lite.uri, collection=collection_name, on_error="report") as client:
        report = client.delete([1, "--7"])
    assert report.written == 1 and report.failed_ids == ["--7"], report
    assert "is not a 64-bit integer" in report.failures[0].error
    assert sorted(stored(milvus_lite, collection_name)) == [-11, 10]


# -- 3: namespaces are partition names only when Milvus's rule allows -------------------------------


def test_a_namespace_that_is_no_partition_name_fails_its_rows_alone(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """Lite made a directory of ``../../../x`` outside the collection, took ``bad-name`` and ``has space``,
    and a 300-character name ("File name too long") stopped the whole write."""
    from pathlib import Path

    escaped = f"escaped_{collection_name}"
    bad = [f"../../../{escaped}", "bad-name", "has space", "y" * 300, "", "é"]
    names = ["aa", *bad, "1digit", "_x" + "z" * 253]
    data = [{"id": f"p{i}", "values": vec(i), "ns": ns} for i, ns in enumerate(names)]
    report = write(milvus_lite.uri, data, collection=collection_name, create=True, namespace_column="ns")
    refused = [f"p{i}" for i, ns in enumerate(names) if ns in bad and ns]
    assert sorted(report.failed_ids) == sorted(refused), report
    assert all("is not a Milvus partition name" in f.error for f in report.failures)
    assert {f.error_type for f in report.failures} == {"Invalid"}
    assert report.written == len(names) - len(refused)
    assert not list(Path(milvus_lite.path).parent.rglob(escaped))
    partitions = set(milvus_lite.client.list_partitions(collection_name))
    assert {"aa", "1digit", "_x" + "z" * 253} <= partitions and not partitions & set(bad)
    assert sorted(stored(milvus_lite, collection_name)) == sorted(
        f"p{i}" for i in range(len(names)) if f"p{i}" not in refused
    )
    with pytest.raises(ConfigError, match="option namespace 'bad-name' is not a Milvus partition name"):
        write(milvus_lite.uri, data[:1], collection=collection_name, namespace="bad-name")


# -- 4: a released collection is loaded again before a delete's query --------------------------------


def test_deletes_in_a_partition_load_a_released_collection(
    milvus_lite: LiteServer, collection_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Milvus Lite restarted mid-write comes back with the collection released; the query a delete in a
    partition makes failed with code 101, and every row of the delete failed one by one."""
    data = [{"id": f"d{i}", "values": vec(i)} for i in range(6)]
    report = write(milvus_lite.uri, data, collection=collection_name, create=True, namespace="part_a")
    assert report.ok, report

    check_target = MilvusBackend.check_target

    def released_after_check(backend: MilvusBackend, transport: Any, dimension: int | None) -> None:
        check_target(backend, transport, dimension)
        milvus_lite.client.release_collection(collection_name)  # as a restart mid-write leaves it

    monkeypatch.setattr(MilvusBackend, "check_target", released_after_check)
    options = {"namespace": "part_a", "on_error": "report"}
    with connect(milvus_lite.uri, collection=collection_name, **options) as client:
        report = client.delete(["d1", "d2", "d3"])
    assert report.ok and report.written == 3, report
    assert sorted(stored(milvus_lite, collection_name, partition_names=["part_a"])) == ["d0", "d4", "d5"]


# -- 5: a row's own partition key value is not replaced by the namespace ----------------------------


def test_a_partition_key_value_other_than_the_namespace_fails_the_row(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """``tenant: "acme"`` written with namespace "t1" was stored as t1 and reported written."""
    params = {"max_length": 32, "is_partition_key": True}
    make_collection(milvus_lite, collection_name, ("tenant", "VARCHAR", params))
    data = [
        {"id": "own", "values": vec(1), "tenant": "acme"},
        {"id": "same", "values": vec(2), "tenant": "t1"},
        {"id": "none", "values": vec(3)},
    ]
    report = write(milvus_lite.uri, data, collection=collection_name, namespace="t1")
    assert report.written == 2 and report.failed_ids == ["own"], report
    assert report.failures[0].error.startswith("metadata 'tenant' is 'acme' but the row's namespace is 't1'")
    back = stored(milvus_lite, collection_name)
    assert {key: row["tenant"] for key, row in back.items()} == {"same": "t1", "none": "t1"}


# -- 6: a metadata key named as the dynamic field ------------------------------------------------------


@pytest.mark.parametrize("declared", [False, True])
def test_a_metadata_key_named_meta_fails_the_row(
    milvus_lite: LiteServer, collection_name: str, declared: bool
) -> None:
    """``{"$meta": {"x": 1}, "y": 2}`` was stored as x=1, y=2: the server took the key for its dynamic field."""
    fields = [("rank", "INT64", {"nullable": True})] if declared else []
    make_collection(milvus_lite, collection_name, *fields)
    data = [
        {"id": "meta", "values": vec(1), "$meta": {"x": 1}, "y": 2},
        {"id": "fine", "values": vec(2), "meta": {"x": 1}, "y": 2},
    ]
    report = write(milvus_lite.uri, data, collection=collection_name)
    assert report.written == 1 and report.failed_ids == ["meta"], report
    assert "metadata key '$meta' is the name of Milvus's dynamic field" in report.failures[0].error
    back = stored(milvus_lite, collection_name)
    assert list(back) == ["fine"] and back["fine"]["meta"] == {"x": 1} and back["fine"]["y"] == 2


# -- 7: index_type is one Milvus has for a float vector --------------------------------------------


def test_index_type_is_checked_trimmed_and_case_insensitive(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """create=true made a collection indexed FOO, or SPARSE_INVERTED_INDEX on its float vector, and reported
    the write a success; " hnsw " was sent as it came."""
    data = [{"id": 5, "values": vec(0)}, {"id": 6, "values": vec(1)}]
    for bad in ("FOO", "SPARSE_INVERTED_INDEX", "BIN_FLAT"):
        with pytest.raises(ConfigError, match=f"option index_type: '{bad}' is not an index type Milvus has"):
            write(milvus_lite.uri, data, collection=collection_name, create=True, index_type=bad)
        assert not milvus_lite.client.has_collection(collection_name)
    report = write(milvus_lite.uri, data, collection=collection_name, create=True, index_type=" hnsw ")
    assert report.ok and report.written == 2, report
    assert milvus_lite.client.describe_index(collection_name, "vector")["index_type"] == "HNSW"
    assert sorted(stored(milvus_lite, collection_name)) == [5, 6]


# -- 8: a database that does not exist -------------------------------------------------------------------


def test_a_missing_database_is_a_config_error_naming_db_name(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """It was Unavailable (Lite's code 1), retried as if the server were down."""
    data = [{"id": "z", "values": vec(1)}]
    assert write(milvus_lite.uri, data, collection=collection_name, create=True).ok
    with pytest.raises(ConfigError, match="option db_name: database 'nosuchdb' does not exist"):
        write(milvus_lite.uri, data, collection=collection_name, db_name="nosuchdb", create=True)
    assert sorted(stored(milvus_lite, collection_name)) == ["z"]
    assert "nosuchdb" not in milvus_lite.client.list_databases()


# -- 9: Milvus's 65,536 bytes are per JSON value, not per row's metadata ----------------------------------


def test_the_json_limit_is_per_json_value(milvus_lite: LiteServer, collection_name: str) -> None:
    """A 60,000-character VarChar field and a 10,000-character dynamic key were refused together
    ("metadata is 70021 bytes as JSON; the limit is 65536"), though Milvus stores them."""
    make_collection(
        milvus_lite,
        collection_name,
        ("body", "VARCHAR", {"max_length": 65_535}),
        ("js", "JSON", {"nullable": True}),
    )
    data = [
        {
            "id": "fits",
            "values": vec(0),
            "body": "b" * 60_000,
            "note": "n" * 10_000,
            "js": {"k": "j" * 60_000},
        },
        {"id": "meta_big", "values": vec(1), "body": "b", "note": "n" * 70_000},
        {"id": "json_big", "values": vec(2), "body": "b", "js": {"k": "j" * 70_000}},
    ]
    report = write(milvus_lite.uri, data, collection=collection_name)
    assert report.written == 1 and sorted(report.failed_ids) == ["json_big", "meta_big"], report
    errors = {f.ids[0]: f.error for f in report.failures}
    assert errors["meta_big"].startswith(
        "the metadata without a field of its own (dynamic field '$meta') is 70"
    )
    assert errors["json_big"].startswith("field 'js' is 70")
    assert all(error.endswith("Milvus's limit is 65536 a JSON value") for error in errors.values())
    back = stored(milvus_lite, collection_name)
    assert list(back) == ["fits"]
    assert (len(back["fits"]["body"]), len(back["fits"]["note"]), len(back["fits"]["js"]["k"])) == (
        60_000,
        10_000,
        60_000,
    )
