"""The Milvus backend against a real Milvus Lite server: the contract suite, then what is Milvus's own.

The server is started by the connector's embedded module (tests/integration/milvus_server.py) and
read back with pymilvus. pymilvus's generated classes are the oracle for the wire bytes.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pytest

from tests.contract.suite import BackendContract, StoredRow, Target, make_table

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer
from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.milvus import (
    Layout,
    MilvusBackend,
    ScalarField,
    encode_upsert,
    error_for,
)
from vectordb.connector.backends.milvus import lite as embedded
from vectordb.connector.backends.milvus import wire as milvus_wire
from vectordb.connector.backends.milvus.schema import encode_create_index, encode_schema
from vectordb.connector.backends.milvus.status import LEGACY_KIND, Status, status_of
from vectordb.connector.client import resolve_options
from vectordb.connector.redaction import Secrets
from vectordb.connector.report import WriteReport
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import Transport, WireReply, WireRequest

DIM = 8


def write(uri: str, data: Any, **options: Any) -> WriteReport:
    with connect(uri, **options) as client:
        return client.write(data)


def rows(n: int, *, prefix: str = "g", dim: int = DIM, seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return [
        {"id": f"{prefix}{i}", "values": rng.standard_normal(dim, dtype=np.float32), "rank": i}
        for i in range(n)
    ]


def read_collection(client: Any, name: str, partition: str | None = None) -> dict[str, StoredRow]:
    """Every row of ``name`` as ``str(primary key) → StoredRow``; dynamic and scalar fields are the metadata."""
    if not client.has_collection(name):
        return {}
    client.load_collection(name)
    fields = client.describe_collection(name)["fields"]
    key = next(f["name"] for f in fields if f.get("is_primary"))
    vector = next(f["name"] for f in fields if int(f["type"]) == 101)
    kwargs = {"partition_names": [partition]} if partition else {}
    rows = client.query(name, filter="", output_fields=["*"], limit=16_384, **kwargs)
    out: dict[str, StoredRow] = {}
    for row in rows:
        metadata = {k: v for k, v in row.items() if k not in (key, vector)}
        out[str(row[key])] = StoredRow(vector=np.asarray(row[vector], dtype=np.float32), metadata=metadata)
    return out


def fields_of(server: LiteServer, name: str) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in server.client.describe_collection(name)["fields"]}


class TestMilvusContract(BackendContract):
    dim = DIM

    @pytest.fixture
    def target(self, milvus_lite: LiteServer, collection_name: str) -> Target:
        return Target(
            uri=milvus_lite.uri,
            read_back=lambda: read_collection(milvus_lite.client, collection_name),
            options={"collection": collection_name, "create": True},
        )


# -- the control plane ---------------------------------------------------------------------------


def test_create_makes_the_collection_with_the_data_dimension(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    report = write(
        milvus_lite.uri, rows(5, dim=12), collection=collection_name, create=True, metric="euclidean"
    )
    assert report.ok and report.written == 5, report
    described = milvus_lite.client.describe_collection(collection_name)
    fields = {f["name"]: f for f in described["fields"]}
    assert fields["vector"]["params"]["dim"] == 12
    assert int(fields["id"]["type"]) == 21 and fields["id"]["params"]["max_length"] == 512
    assert described["enable_dynamic_field"] is True
    index = milvus_lite.client.describe_index(collection_name, "vector")
    assert index["metric_type"] == "L2"
    assert str(milvus_lite.client.get_load_state(collection_name)["state"]) == "Loaded"


def test_missing_collection_without_create_names_it(milvus_lite: LiteServer, collection_name: str) -> None:
    with pytest.raises(ConfigError, match=f"{collection_name}.*set create=true"):
        write(milvus_lite.uri, rows(2), collection=collection_name)
    assert not milvus_lite.client.has_collection(collection_name)


def test_rows_of_another_dimension_fail_and_a_stated_one_is_a_config_error(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    milvus_lite.client.create_collection(collection_name, dimension=DIM, id_type="string", max_length=64)
    report = write(milvus_lite.uri, rows(3, dim=16), collection=collection_name)
    assert (report.written, report.failed) == (0, 3)
    assert {f.error for f in report.failures} == {f"vector has 16 dimensions; expected {DIM}"}
    with pytest.raises(
        ConfigError, match=f"dimension mismatch: collection {collection_name} has dim {DIM}, data has 16"
    ):
        write(milvus_lite.uri, rows(3, dim=16), collection=collection_name, dimension=16)
    assert read_collection(milvus_lite.client, collection_name) == {}


def test_integer_ids_make_an_int64_key(milvus_lite: LiteServer, collection_name: str) -> None:
    data = [{"id": 10**12 + i, "values": [float(i)] * DIM, "tag": "n"} for i in range(6)]
    report = write(milvus_lite.uri, data, collection=collection_name, create=True)
    assert report.ok, report
    assert int(fields_of(milvus_lite, collection_name)["id"]["type"]) == 5  # INT64
    stored = milvus_lite.client.query(collection_name, filter="", output_fields=["id", "tag"], limit=100)
    assert sorted(r["id"] for r in stored) == [10**12 + i for i in range(6)]
    # a string id an INT64 key cannot hold fails alone, before sending
    report = write(
        milvus_lite.uri,
        [{"id": "7", "values": [1.0] * DIM}, {"id": "x7", "values": [1.0] * DIM}],
        collection=collection_name,
    )
    assert report.written == 1 and report.failed_ids == ["x7"]
    assert "INT64 primary key" in report.failures[0].error


def test_one_integer_id_first_does_not_make_an_int64_key(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """id_type=auto decides on the first batch's ids together: its first row alone made the key INT64,
    and the text ids after it failed."""
    data = [{"id": 7, "values": [1.0] * DIM}] + [{"id": f"doc-{i}", "values": [2.0] * DIM} for i in range(5)]
    report = write(milvus_lite.uri, data, collection=collection_name, create=True)
    assert report.ok and report.written == 6, report
    assert int(fields_of(milvus_lite, collection_name)["id"]["type"]) == 21  # VarChar


def test_a_namespace_lands_in_its_partition(milvus_lite: LiteServer, collection_name: str) -> None:
    report = write(
        milvus_lite.uri, rows(4, prefix="a"), collection=collection_name, create=True, namespace="tenant_a"
    )
    assert report.ok, report
    report = write(milvus_lite.uri, rows(3, prefix="b"), collection=collection_name)
    assert report.ok, report
    assert "tenant_a" in milvus_lite.client.list_partitions(collection_name)
    in_a = read_collection(milvus_lite.client, collection_name, partition="tenant_a")
    assert sorted(in_a) == ["a0", "a1", "a2", "a3"]
    assert sorted(read_collection(milvus_lite.client, collection_name, partition="_default")) == [
        "b0",
        "b1",
        "b2",
    ]


def test_a_collection_made_by_pymilvus_with_other_field_names(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    from pymilvus import DataType

    client = milvus_lite.client
    schema = client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field("rank", DataType.INT64)
    schema.add_field("title", DataType.VARCHAR, max_length=100, nullable=True)
    index = client.prepare_index_params()
    index.add_index("embedding", index_type="AUTOINDEX", metric_type="IP")
    client.create_collection(collection_name, schema=schema, index_params=index)
    data = rows(5)
    data[1]["title"] = "second"
    data[2]["extra"] = {"nested": [1, 2]}
    del data[4]["rank"]  # a required declared field missing: that row fails alone
    report = write(milvus_lite.uri, data, collection=collection_name)
    assert report.written == 4 and report.failed_ids == ["g4"], report
    assert "no value for field 'rank'" in report.failures[0].error
    stored = read_collection(client, collection_name)
    assert sorted(stored) == ["g0", "g1", "g2", "g3"]
    np.testing.assert_array_equal(stored["g3"].vector, data[3]["values"])
    assert stored["g1"].metadata["title"] == "second" and stored["g0"].metadata["title"] is None
    assert stored["g2"].metadata["extra"] == {"nested": [1, 2]} and stored["g2"].metadata["rank"] == 2


def test_a_row_the_server_rejects_fails_with_its_reason(
    milvus_lite: LiteServer, collection_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the connector refuses an id longer than the key's max_length itself (test_milvus_review_values.py):
    # its check is turned off here to reach the server's refusal and the bisection down to the row
    monkeypatch.setattr(milvus_wire, "_key_values", functools.partial(milvus_wire._key_values, upsert=False))
    milvus_lite.client.create_collection(collection_name, dimension=DIM, id_type="string", max_length=16)
    data = rows(10)
    long_id = "x" * 40  # too long for this collection's key
    data[6]["id"] = long_id
    report = write(milvus_lite.uri, data, collection=collection_name)
    assert report.written == 9 and report.failed_ids == [long_id], report
    failure = report.failures[0]
    assert failure.error_type == "Rejected" and failure.attempts == 1
    assert "exceeds max_length" in failure.error  # Milvus's own words
    assert report.requests > 1  # the batch was bisected down to the row at fault
    assert sorted(read_collection(milvus_lite.client, collection_name)) == sorted(
        r["id"] for r in data if r["id"] != long_id
    )


def test_sparse_vectors_land_in_the_sparse_field(milvus_lite: LiteServer, collection_name: str) -> None:
    data = [
        {
            "id": f"s{i}",
            "values": [0.25 * i] * DIM,
            "sparse_values": {"indices": [i, 40 + i], "values": [1.5, 2.0]},
        }
        for i in range(4)
    ]
    report = write(milvus_lite.uri, data, collection=collection_name, create=True)
    assert report.ok, report
    assert int(fields_of(milvus_lite, collection_name)["sparse"]["type"]) == 104
    stored = milvus_lite.client.query(collection_name, filter='id == "s3"', output_fields=["sparse"])
    assert {int(k): float(v) for k, v in stored[0]["sparse"].items()} == {3: 1.5, 43: 2.0}


SPARSE = pa.struct([("indices", pa.list_(pa.int32())), ("values", pa.list_(pa.float32()))])


def sparse_batch(ids: list[str], sparse: list[dict[str, Any] | None]) -> pa.RecordBatch:
    vectors = pa.array([[0.5] * DIM for _ in ids], type=pa.list_(pa.float32()))
    return pa.RecordBatch.from_pydict({"id": ids, "values": vectors, "sp": pa.array(sparse, type=SPARSE)})


def test_option_sparse_column_gives_a_made_collection_its_sparse_field_whatever_the_first_rows(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    # the first batch sent holds no sparse value: it must not make a collection without the sparse field
    # every later sparse row fails in; a row with no sparse vector fails alone, saying so
    first = sparse_batch(["n1", "n2"], [None, {"indices": [], "values": []}])
    later = sparse_batch(["s3", "s4"], [{"indices": [1], "values": [0.5]}, {"indices": [2], "values": [0.7]}])
    report = write(
        milvus_lite.uri, [first, later], collection=collection_name, create=True, sparse_column="sp"
    )
    assert (report.written, report.failed) == (2, 2), report
    (failure,) = report.failures
    assert failure.ids == ("n1", "n2") and failure.error_type == "Invalid"
    assert failure.error.startswith("no sparse vector ('sp' is null or empty)"), failure.error
    assert int(fields_of(milvus_lite, collection_name)["sparse"]["type"]) == 104
    stored = milvus_lite.client.query(collection_name, filter='id == "s4"', output_fields=["sparse"])
    assert {int(k): round(float(v), 3) for k, v in stored[0]["sparse"].items()} == {2: 0.7}


def test_a_stated_dimension_and_id_type_make_the_collection_before_any_row(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    # what a Spark job's driver does (an empty DataFrame included): its sparse field as option
    # sparse_column says; with id_type=auto the first batch's ids decide the key, so nothing is made yet
    options = {"collection": collection_name, "create": True, "dimension": DIM, "sparse_column": "sp"}
    with connect(milvus_lite.uri, **options) as client:
        client.prepare_target()
    assert not milvus_lite.client.has_collection(collection_name)
    with connect(milvus_lite.uri, id_type="varchar", **options) as client:
        client.prepare_target()
    fields = fields_of(milvus_lite, collection_name)
    assert int(fields["sparse"]["type"]) == 104 and fields["vector"]["params"]["dim"] == DIM


# -- wire bytes: pymilvus's generated classes are the oracle ---------------------------------------


def _batch(ids: list[Any], sparse: bool = False) -> RowBatch:
    vectors = np.arange(len(ids) * 3, dtype=np.float32).reshape(len(ids), 3) / 7
    entries = (
        [(np.array([1, 9], dtype=np.uint32), np.array([0.5, -1.25], dtype=np.float32)), None]
        if sparse
        else None
    )
    metadata = [{"title": "a", "n": 1}, {"rank": 2.5}]
    return RowBatch(ids=ids, vectors=vectors, sparse=entries, metadata=metadata, namespace="p1")


def test_upsert_bytes_parse_like_pymilvus() -> None:
    from pymilvus import DataType
    from pymilvus.client.prepare import Prepare
    from pymilvus.grpc_gen import milvus_pb2

    batch = _batch(["a", "b"], sparse=True)
    layout = Layout(collection="c", dim=3, key="pk", vector="emb", sparse="sp")
    ours = encode_upsert(batch, layout, partition="p1")
    fields_info = [
        {"name": "pk", "type": DataType.VARCHAR, "params": {"max_length": 64}, "is_primary": True},
        {"name": "emb", "type": DataType.FLOAT_VECTOR, "params": {"dim": 3}},
        {"name": "sp", "type": DataType.SPARSE_FLOAT_VECTOR, "params": {}},
    ]
    entities = [
        {"pk": "a", "emb": batch.vectors[0].tolist(), "sp": {1: 0.5, 9: -1.25}, "title": "a", "n": 1},
        {"pk": "b", "emb": batch.vectors[1].tolist(), "sp": {}, "rank": 2.5},
    ]
    theirs = Prepare.row_upsert_param("c", entities, "p1", fields_info, enable_dynamic=True)
    assert milvus_pb2.UpsertRequest.FromString(ours.body) == theirs
    assert ours.body == theirs.SerializeToString(deterministic=True)


def test_int64_key_and_declared_fields_parse_like_pymilvus() -> None:
    from pymilvus import DataType
    from pymilvus.client.prepare import Prepare
    from pymilvus.grpc_gen import milvus_pb2

    batch = _batch([5, -3])
    scalars = (ScalarField("title", 21, required=False), ScalarField("n", 5, required=False))
    layout = Layout(collection="c", dim=3, key="id", key_int64=True, scalars=scalars)
    ours = encode_upsert(batch, layout)
    fields_info = [
        {"name": "id", "type": DataType.INT64, "params": {}, "is_primary": True},
        {"name": "vector", "type": DataType.FLOAT_VECTOR, "params": {"dim": 3}},
        {"name": "title", "type": DataType.VARCHAR, "params": {"max_length": 9}, "nullable": True},
        {"name": "n", "type": DataType.INT64, "params": {}, "nullable": True},
    ]
    entities = [
        {"id": 5, "vector": batch.vectors[0].tolist(), "title": "a", "n": 1},
        {"id": -3, "vector": batch.vectors[1].tolist(), "title": None, "n": None, "rank": 2.5},
    ]
    theirs = Prepare.row_upsert_param("c", entities, "", fields_info, enable_dynamic=True)
    assert milvus_pb2.UpsertRequest.FromString(ours.body) == theirs


def test_control_plane_messages_parse_as_intended() -> None:
    from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

    schema = schema_pb2.CollectionSchema.FromString(encode_schema("docs", 768, key_int64=False, sparse=True))
    expected = schema_pb2.CollectionSchema(
        name="docs",
        enable_dynamic_field=True,
        fields=[
            schema_pb2.FieldSchema(
                name="id",
                is_primary_key=True,
                data_type=schema_pb2.VarChar,
                type_params=[common_pb2.KeyValuePair(key="max_length", value="512")],
            ),
            schema_pb2.FieldSchema(
                name="vector",
                data_type=schema_pb2.FloatVector,
                type_params=[common_pb2.KeyValuePair(key="dim", value="768")],
            ),
            schema_pb2.FieldSchema(name="sparse", data_type=schema_pb2.SparseFloatVector),
        ],
    )
    assert schema == expected
    index = milvus_pb2.CreateIndexRequest.FromString(
        encode_create_index("docs", "vector", "AUTOINDEX", "COSINE")
    )
    assert index.collection_name == "docs" and index.field_name == "vector" and index.index_name == "vector"
    assert {p.key: p.value for p in index.extra_params} == {
        "index_type": "AUTOINDEX",
        "metric_type": "COSINE",
        "params": "{}",
    }


# -- the embedded server ---------------------------------------------------------------------------

_ENSURE = textwrap.dedent(
    """
    import json, sys
    from vectordb.connector.backends.milvus import lite as embedded
    address = embedded.ensure_server(sys.argv[1], idle_timeout_s=60)
    print(json.dumps({"address": address, "pid": embedded.running(sys.argv[1]).pid}))
    """
)


def test_two_processes_share_one_server_and_a_restart_keeps_the_data(tmp_path: Any) -> None:
    pytest.importorskip("milvus_lite")
    path = str(tmp_path / "shared.db")
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _ENSURE, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            for _ in range(2)
        ]
        answers = []
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err.decode()
            answers.append(json.loads(out))
        assert answers[0] == answers[1]  # one server: same address, same pid
        assert embedded.ensure_server(path) == answers[0]["address"]  # and this process reuses it too
        uri = f"milvus+lite://{path}"
        with connect(uri, collection="kept", create=True) as early:
            assert early.write(make_table(6, DIM, seed=9)).ok
            assert embedded.stop(path) and embedded.running(path) is None
            # the same client writes again: its transport finds the fresh server on the same data
            assert early.write(make_table(2, DIM, seed=9, start=6)).ok
        assert embedded.running(path).pid != answers[0]["pid"]
        # a restarted server holds its collections released; a new client's check loads them
        assert write(uri, make_table(2, DIM, seed=9, start=8), collection="kept").ok
        from pymilvus import MilvusClient

        client = MilvusClient(uri="http://" + embedded.ensure_server(path))
        try:
            assert str(client.get_load_state("kept")["state"]) == "Loaded"
            assert len(read_collection(client, "kept")) == 10
        finally:
            client.close()
    finally:
        embedded.stop(path)
    assert embedded.running(path) is None


# -- no server: URIs and status codes --------------------------------------------------------------


def test_the_embedded_server_killed_is_restarted_by_the_next_write_and_keeps_what_it_acknowledged(
    tmp_path: Any,
) -> None:
    """SIGKILL, no goodbye: the same client's next write starts a fresh server on the same data, and every
    row either write acknowledged is there exactly once, with its exact vector."""
    pytest.importorskip("milvus_lite")
    path = str(tmp_path / "killed.db")
    uri = f"milvus+lite://{path}"
    first, second = make_table(6, DIM, seed=4), make_table(3, DIM, seed=5, start=6)
    try:
        with connect(uri, collection="kept", create=True) as client:
            assert client.write(first).ok
            killed = embedded.running(path)
            assert killed is not None
            os.kill(killed.pid, signal.SIGKILL)
            assert client.write(second).ok
        restarted = embedded.running(path)
        assert restarted is not None and restarted.pid != killed.pid
        from pymilvus import MilvusClient

        reader = MilvusClient(uri="http://" + embedded.ensure_server(path))
        try:
            stored = read_collection(reader, "kept")
        finally:
            reader.close()
        expected = {}
        for table in (first, second):
            for row_id, values in zip(
                table.column("id").to_pylist(), table.column("values").to_pylist(), strict=True
            ):
                expected[row_id] = np.asarray(values, dtype=np.float32)
        assert stored.keys() == expected.keys()
        assert all(np.array_equal(stored[k].vector, v) for k, v in expected.items())
    finally:
        embedded.stop(path)


def test_lite_paths_are_absolute_and_other_uris_are_not_paths(tmp_path: Any) -> None:
    assert embedded.lite_path("milvus+lite:///abs/x.db") == "/abs/x.db"
    assert embedded.lite_path(f"milvus+lite://{tmp_path}/x.db") == f"{tmp_path}/x.db"
    assert embedded.lite_path("./x.db").endswith("/x.db") and embedded.lite_path("./x.db").startswith("/")
    assert embedded.lite_path("milvus://127.0.0.1:19530/docs") is None
    with pytest.raises(ConfigError, match="names no path"):
        embedded.lite_path("milvus+lite://")
    (tmp_path / "old.db").write_bytes(b"sqlite")
    with pytest.raises(ConfigError, match="is a file"):
        embedded.ensure_server(str(tmp_path / "old.db"))


@pytest.mark.parametrize(
    ("code", "legacy", "retriable", "kind"),
    [(8, False, False, "Throttled"), (4, False, False, "Throttled"), (100, False, False, "NotFound"),
     (200, False, False, "NotFound"), (1401, False, False, "AuthError"), (3, False, False, "Unavailable"),
     (1, False, True, "Unavailable"), (1100, False, False, "Rejected"), (6, False, False, "Rejected"),
     (49, True, False, "Throttled"), (53, True, False, "Unavailable"), (4, True, False, "NotFound"),
     (28, True, False, "NotFound"), (3, True, False, "AuthError"), (5, True, False, "Rejected"),
     (1, True, False, "Rejected"), (1, True, True, "Unavailable")],
)  # fmt: skip
def test_status_codes_map_to_connector_errors(code: int, legacy: bool, retriable: bool, kind: str) -> None:
    """The new ``code`` field and the legacy ``error_code`` number differently: each is read with its table."""
    error = error_for(Status(code, "why", retriable, legacy), "milvus Upsert 'c'")
    assert type(error).__name__ == kind and str(error) == f"milvus Upsert 'c': why (code {code})"


def test_every_legacy_error_code_is_classed_on_purpose() -> None:
    from pymilvus.grpc_gen import common_pb2

    codes = {value for name, value in common_pb2.ErrorCode.items() if name != "Success"}
    assert codes == set(LEGACY_KIND), "classify the new ErrorCode values in backends/milvus/status.py"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [({3: 100}, Status(100)), ({1: 4}, Status(4, legacy=True)), ({3: 4 | 1 << 20}, Status(4, retriable=True)),
     ({3: 65535 | 1 << 20, 4: 1}, Status(65535, retriable=True)), ({1: 1, 3: 1100}, Status(1100)), ({}, Status(0, legacy=True))],
)  # fmt: skip
def test_a_status_is_read_from_whichever_field_holds_its_code(
    fields: dict[int, int], expected: Status
) -> None:
    from vectordb.connector import protowire as pw

    raw = b"".join(pw.varint_field(number, value) for number, value in sorted(fields.items()))
    assert status_of(pw.FieldReader(raw), Secrets()) == expected


def test_uri_forms() -> None:
    backend = MilvusBackend(resolve_options({"uri": "milvus://10.0.0.5/prod/docs", "api_key": "u:p"}))
    assert (backend.host, backend.port, backend.db_name, backend.collection, backend.tls) == (
        "10.0.0.5", 19530, "prod", "docs", True  # TLS for every host off this machine, unless turned off
    )  # fmt: skip
    assert MilvusBackend(resolve_options({"uri": "milvus://h.zillizcloud.com:443", "collection": "c"})).tls
    assert not MilvusBackend(resolve_options({"uri": "milvus://10.0.0.5/docs", "tls": "false"})).tls
    assert not MilvusBackend(resolve_options({"uri": "milvus://127.0.0.1:19530/docs"})).tls
    with pytest.raises(ConfigError, match="needs a collection"):
        MilvusBackend(resolve_options({"uri": "milvus://127.0.0.1:19530"}))
    lite = MilvusBackend(resolve_options({"uri": "milvus+lite://./v.db"}))
    assert lite.lite_path and lite.lite_path.startswith("/") and lite.collection == "vectors"


def test_rows_a_collection_cannot_hold_are_refused_before_sending() -> None:
    from pymilvus.grpc_gen import milvus_pb2

    batch = _batch(["a", "b"], sparse=True)  # row a has a sparse vector, row b none
    no_sparse = encode_upsert(batch, Layout(collection="c", dim=3))
    assert no_sparse.sent == 1 and no_sparse.sent_rows == [1]
    assert (no_sparse.refused[0].ids, no_sparse.refused[0].positions) == (
        ("a",),
        (0,),
    ) and "no sparse field" in no_sparse.refused[0].error
    strict = Layout(collection="c", dim=3, dynamic=False, scalars=(ScalarField("rank", 11, required=True),))
    encoded = encode_upsert(_batch(["a", "b"]), strict)  # a: no rank; b: rank 2.5 fits a Double
    assert encoded.sent_rows == [1] and "no value for field 'rank'" in encoded.refused[0].error
    request = milvus_pb2.UpsertRequest.FromString(encoded.body)
    assert request.num_rows == 1 and [f.field_name for f in request.fields_data] == ["id", "vector", "rank"]
    assert list(request.fields_data[2].scalars.double_data.data) == [2.5]
    typed = Layout(collection="c", dim=3, scalars=(ScalarField("title", 5, required=False),))
    assert "cannot hold 'a'" in encode_upsert(_batch(["a", "b"]), typed).refused[0].error
    # a Float (10) or Double (11) field would store these changed: inf, or an integer rounded
    floats = Layout(collection="c", dim=3, scalars=(ScalarField("f", 10, False), ScalarField("d", 11, False)))
    values = RowBatch(
        ids=["big", "round", "fine"],
        vectors=np.ones((3, 3), dtype=np.float32),
        metadata=[{"f": 1e40}, {"d": 2**60 + 1}, {"f": 0.5, "d": 2**53}],
    )
    refused = {f.ids[0]: f.error for f in encode_upsert(values, floats).refused}
    assert refused == {
        "big": "field 'f' (Float) would store 1e+40 as inf",
        "round": "field 'd' (Double) would store 1152921504606846977 as 1.152921504606847e+18",
    }


# -- clearing (Client.clear, Spark's overwrite) ------------------------------------------------------


def _partition_key_collection(server: LiteServer, name: str) -> None:
    from pymilvus import DataType

    schema = server.client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field("tenant", DataType.VARCHAR, max_length=64, is_partition_key=True)
    index = server.client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    server.client.create_collection(name, schema=schema, index_params=index)


def test_clearing_a_namespace_in_a_partition_key_field(milvus_lite: LiteServer, collection_name: str) -> None:
    _partition_key_collection(milvus_lite, collection_name)
    odd = 'a "quoted" \\ tenant\n'  # the namespace goes into an expression literal: escaping must hold
    for namespace, prefix in (("a", "a"), ("b", "b"), (odd, "q")):
        assert write(
            milvus_lite.uri, rows(3, prefix=prefix), collection=collection_name, namespace=namespace
        ).ok
    with connect(milvus_lite.uri, collection=collection_name) as client:
        cleared = client.clear(odd)
        assert cleared.startswith(f"namespace {odd!r} (partition key tenant)") and "(3 rows)" in cleared
        assert "(3 rows)" in client.clear("a")
        assert "(0 rows)" in client.clear("a")  # twice is fine
        assert client.write(rows(2, prefix="a2"), namespace="a").ok  # and the same client writes again
    stored = read_collection(milvus_lite.client, collection_name)
    assert sorted(stored) == ["a20", "a21", "b0", "b1", "b2"]
    assert {stored[k].metadata["tenant"] for k in stored} == {"a", "b"}


def test_clearing_a_partition_pages_through_its_keys_and_keeps_the_others(
    milvus_lite: LiteServer, collection_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vectordb.connector.backends.milvus import backend

    monkeypatch.setattr(backend, "CLEAR_PAGE_ROWS", 3)  # 10 rows: four pages, the last one short
    extremes = [-(1 << 63), (1 << 63) - 1, -1, 0]  # INT64 keys at both ends decode and delete exactly
    in_a = [{"id": k, "values": [0.5] * DIM} for k in extremes + list(range(100, 106))]
    in_b = [{"id": k, "values": [0.5] * DIM} for k in (7, 8)]
    uri = milvus_lite.uri
    assert write(uri, in_a, collection=collection_name, create=True, id_type="int64", namespace="a").ok
    assert write(uri, in_b, collection=collection_name, namespace="b").ok
    assert write(uri, [{"id": 9, "values": [0.5] * DIM}], collection=collection_name).ok  # _default
    with connect(uri, collection=collection_name, namespace="a") as client:
        assert client.clear("a") == f"namespace 'a' (partition a) of {client.backend.describe()} (10 rows)"
        assert client.write([{"id": 5, "values": [1.0] * DIM}]).ok  # the partition is still there
    assert sorted(milvus_lite.client.list_partitions(collection_name)) == ["_default", "a", "b"]
    assert sorted(read_collection(milvus_lite.client, collection_name, partition="a")) == ["5"]
    assert sorted(read_collection(milvus_lite.client, collection_name)) == ["5", "7", "8", "9"]


def test_clearing_the_default_namespace_clears_the_default_partition(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """README: "" is the default namespace; rows written with it or with none go to the _default
    partition, and a clear of "" (an overwrite of it) takes them, as PostgreSQL's takes its NULL ones.
    It looked for a partition named "" and cleared nothing."""
    data = [
        {"id": "none", "values": [0.5] * DIM, "ns": None},
        {"id": "empty", "values": [0.5] * DIM, "ns": ""},
        {"id": "t1", "values": [0.5] * DIM, "ns": "t1"},
    ]
    uri = milvus_lite.uri
    assert write(uri, data, collection=collection_name, create=True, namespace_column="ns").ok
    with connect(uri, collection=collection_name, namespace_column="ns") as client:
        cleared = client.clear("")
    assert cleared == f"namespace '' (partition _default) of {client.backend.describe()} (2 rows)"
    assert sorted(read_collection(milvus_lite.client, collection_name)) == ["t1"]


def test_a_delete_in_the_default_namespace_stays_in_the_default_partition(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """A delete in namespace "" is a delete in the _default partition, as a clear of "" is: it went
    with no partition_name and took the id from every partition, namespace 't1' too."""
    data = [
        {"id": "a", "values": [0.5] * DIM, "ns": "t1"},
        {"id": "b", "values": [0.5] * DIM, "ns": "t1"},
        {"id": "c", "values": [0.5] * DIM, "ns": ""},
        {"id": "d", "values": [0.5] * DIM, "ns": None},
    ]
    uri = milvus_lite.uri
    assert write(uri, data, collection=collection_name, create=True, namespace_column="ns").ok
    with connect(uri, collection=collection_name, namespace_column="ns", op_column="op") as client:
        assert client.upsert(
            [{"id": "a", "ns": "", "op": "delete"}, {"id": "c", "ns": "", "op": "delete"}]
        ).ok
        assert client.delete(["b", "d"], namespace="").ok
    assert sorted(read_collection(milvus_lite.client, collection_name)) == ["a", "b"]
    assert sorted(read_collection(milvus_lite.client, collection_name, partition="t1")) == ["a", "b"]


def test_clearing_what_is_not_there(milvus_lite: LiteServer, collection_name: str) -> None:
    with (
        connect(milvus_lite.uri, collection=collection_name) as client,
        pytest.raises(ConfigError, match=f"milvus collection '{collection_name}' does not exist"),
    ):
        client.clear()
    with connect(milvus_lite.uri, collection=collection_name, create=True) as client:
        assert client.clear().startswith("nothing to clear:")  # overwrite of a new target: nothing to do
        assert client.write(rows(2)).ok  # and the first write still creates it
        cleared = client.clear("nobody")
        assert cleared.endswith("nothing to clear (no partition 'nobody')")
        assert "nobody" not in milvus_lite.client.list_partitions(collection_name)
        assert client.clear() == client.clear() == f"every row of {client.backend.describe()}"
    assert read_collection(milvus_lite.client, collection_name) == {}


class _NoTruncate:
    """The real server's transport, except that TruncateCollection answers as a Milvus older than 2.6.16."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.host = inner.host
        self.methods: list[str] = []

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        from vectordb.connector.transports.grpc import error_for_status

        self.methods.append(request.method.rsplit("/", 1)[-1])
        if request.method.endswith("/TruncateCollection"):
            raise error_for_status("UNIMPLEMENTED", "Method not found!", "old milvus", {}, secrets=Secrets())
        return self.inner.send(request, timeout_s=timeout_s)

    def close(self) -> None:
        self.inner.close()


def test_a_server_without_truncate_is_cleared_by_expression(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    data = [{"id": k, "values": [0.25] * DIM} for k in (-(1 << 63), -5, 0, 3, (1 << 63) - 1)]
    assert write(milvus_lite.uri, data[:3], collection=collection_name, create=True, id_type="int64").ok
    assert write(milvus_lite.uri, data[3:], collection=collection_name, namespace="p").ok
    with connect(milvus_lite.uri, collection=collection_name) as client:
        transport = _NoTruncate(client.engine.transport)
        client.backend.check_target(transport, DIM)
        cleared = client.backend.clear_target(transport, None)
    assert transport.methods[-2:] == ["TruncateCollection", "Delete"]
    assert cleared.endswith("(5 rows)")
    assert read_collection(milvus_lite.client, collection_name) == {}
    assert sorted(milvus_lite.client.list_partitions(collection_name)) == ["_default", "p"]


def test_clear_messages_parse_like_pymilvus() -> None:
    from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

    from vectordb.connector import protowire as pw
    from vectordb.connector.backends.milvus import all_rows_expr, encode_delete, encode_query_keys, keys_of

    text_keys = Layout(collection="c", dim=3, key="pk")
    int_keys = Layout(collection="c", dim=3, key="id", key_int64=True)
    assert milvus_pb2.DeleteRequest.FromString(encode_delete("c", 'pk in ["x"]', partition="p")) == (
        milvus_pb2.DeleteRequest(collection_name="c", partition_name="p", expr='pk in ["x"]')
    )
    assert milvus_pb2.DeleteRequest.FromString(encode_delete("c", "e")).consistency_level == 0  # Strong
    query = milvus_pb2.QueryRequest.FromString(encode_query_keys("c", int_keys, "p", 50))
    assert query == milvus_pb2.QueryRequest(
        collection_name="c",
        expr="id <= 0 or id > 0",
        output_fields=["id"],
        partition_names=["p"],
        query_params=[common_pb2.KeyValuePair(key="limit", value="50")],
    )
    assert not query.use_default_consistency and query.consistency_level == 0
    assert all_rows_expr(text_keys) == 'pk >= ""'

    def column(name: str, **data: Any) -> Any:
        return schema_pb2.FieldData(field_name=name, scalars=schema_pb2.ScalarField(**data))

    longs = column("id", long_data=schema_pb2.LongArray(data=[-(1 << 63), -1, 7]))
    texts = column("pk", string_data=schema_pb2.StringArray(data=["é", ""]))
    other = column("title", string_data=schema_pb2.StringArray(data=["t"]))
    reply = milvus_pb2.QueryResults(fields_data=[other, longs, texts]).SerializeToString()
    assert keys_of(pw.FieldReader(reply), int_keys) == [-(1 << 63), -1, 7]
    assert keys_of(pw.FieldReader(reply), text_keys) == ["é", ""]


# -- deletes ----------------------------------------------------------------------------------------


def test_a_text_id_for_an_int64_key_is_refused_before_sending_and_the_others_go(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    rows = [{"id": i, "values": [float(i)] * DIM} for i in range(1, 6)]
    assert write(milvus_lite.uri, rows, collection=collection_name, create=True).ok
    with connect(milvus_lite.uri, collection=collection_name, on_error="report") as client:
        report = client.delete([1, "x", "3", 99])  # "3" is an integer's text, "x" none
    assert (report.written, report.deleted, report.failed) == (3, 3, 1), report
    (failure,) = report.failures
    assert failure.ids == ("x",) and failure.op == "delete" and failure.error_type == "Invalid"
    assert "INT64 primary key" in failure.error and failure.attempts == 0
    assert sorted(read_collection(milvus_lite.client, collection_name)) == ["2", "4", "5"]


def test_deletes_in_a_partition_key_field_stay_in_their_namespace(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    _partition_key_collection(milvus_lite, collection_name)
    for namespace in ("a", "b"):
        assert write(
            milvus_lite.uri, rows(2, prefix=namespace), collection=collection_name, namespace=namespace
        ).ok
    with connect(milvus_lite.uri, collection=collection_name, namespace="b") as client:
        assert client.delete(["a0", "b0", "nothere"]).ok  # a0 is a's: it stays
    assert sorted(read_collection(milvus_lite.client, collection_name)) == ["a0", "a1", "b1"]


def test_deletes_where_nothing_can_be_succeed(milvus_lite: LiteServer, collection_name: str) -> None:
    with connect(milvus_lite.uri, collection=collection_name, create=True) as client:
        assert client.delete(["a", "b"]).deleted == 2  # no collection yet: nothing to delete
        assert client.write(rows(2)).ok
        assert client.delete(["g0"], namespace="nobody").deleted == 1  # no such partition
    assert sorted(read_collection(milvus_lite.client, collection_name)) == ["g0", "g1"]
    assert "nobody" not in milvus_lite.client.list_partitions(collection_name)


@pytest.mark.parametrize("moved", [False, True])
def test_a_delete_in_a_partition_follows_an_upsert_of_the_id_still_in_flight(
    milvus_lite: LiteServer, collection_name: str, moved: bool
) -> None:
    """Milvus Lite deletes a key in every partition, so the connector names only the keys the partition
    holds, asked when the delete is sent: asked when it was encoded, an upsert of the id still on the
    wire was missed (the row left behind) or, moving the id away, deleted with it."""
    import time

    seed = rows(1, prefix="a" if moved else "seed")  # a0 in p2, or p1 made without a0
    namespace = "p2" if moved else "p1"
    assert write(milvus_lite.uri, seed, collection=collection_name, create=True, namespace=namespace)
    data = [
        {"id": "a0", "values": [5.0] * DIM, "namespace": "p1", "op": "upsert"},
        {"id": "a0", "namespace": "p2" if moved else "p1", "op": "delete"},
    ]
    with connect(milvus_lite.uri, collection=collection_name, op_column="op", batch_size=1) as client:
        transport = client.engine.transport
        send = transport.send

        def slow_upserts(request: WireRequest, *, timeout_s: float) -> WireReply:
            if request.method.endswith("/Upsert"):
                time.sleep(0.3)  # the delete is encoded meanwhile
            return send(request, timeout_s=timeout_s)

        transport.send = slow_upserts  # type: ignore[method-assign]
        report = client.write(data)
    assert report.ok and report.deleted == 1, report
    left = {
        p: sorted(read_collection(milvus_lite.client, collection_name, partition=p)) for p in ("p1", "p2")
    }
    assert left == ({"p1": ["a0"], "p2": []} if moved else {"p1": ["seed0"], "p2": []})
