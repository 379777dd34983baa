"""The Weaviate backend against a real ``weaviate-server`` (v1.35.2): the contract suite, then what is Weaviate's own.

Every row is read back with the official weaviate-client v4 and compared exactly: ids (UUIDs as
given, other ids through their UUIDv5 with the original in a property), float32 vectors, and
properties with the types the Arrow columns had. Refusals come back per row with Weaviate's own
reason, the other rows written; the API key travels as ``authorization: Bearer`` and shows nowhere.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pytest

from tests.contract.suite import BackendContract, StoredRow, Target, make_table
from tests.e2e.test_secrets import outcome
from vectordb.connector import AuthError, ConfigError, connect
from vectordb.connector.errors import ConnectError
from vectordb.connector.ids import ID_NAMESPACE, ORIGINAL_ID_KEY, as_uuid
from vectordb.connector.transports.base import forget_shared

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits

DIM = 8
NO_TENANT = r"^option namespace: .*no Weaviate tenant"


def read_back(server: WeaviateServer, name: str, vector: str = "default") -> dict[str, StoredRow]:
    """Every object of every tenant, keyed by the id the connector was given, as weaviate-client reads it."""
    client = server.client()
    try:
        if not client.collections.exists(name):
            return {}
        collection = client.collections.get(name)
        tenants: list[str | None] = [None]
        if collection.config.get().multi_tenancy_config.enabled:
            tenants = sorted(collection.tenants.get())
        rows: dict[str, StoredRow] = {}
        for tenant in tenants:
            view = collection.with_tenant(tenant) if tenant else collection
            for obj in view.iterator(include_vector=True):
                props = {k: v for k, v in obj.properties.items() if v is not None}
                key = str(props.pop(ORIGINAL_ID_KEY, obj.uuid))
                if tenant:
                    props["tenant"] = tenant
                rows[key] = StoredRow(np.asarray(obj.vector[vector], dtype=np.float32), props)
        return rows
    finally:
        client.close()


def vectors(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)


def table(ids: list[Any], matrix: np.ndarray, **columns: Any) -> pa.Table:
    values = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])
    return pa.table({"id": ids, "values": values.cast(pa.list_(pa.float32())), **columns})


def write(server: WeaviateServer, name: str, data: Any, **options: Any) -> Any:
    with connect(server.uri(name), **server.options(), **options) as client:
        return client.write(data)


# -- the contract suite -----------------------------------------------------------------------------


class TestWeaviateContract(BackendContract):
    dim = DIM

    @pytest.fixture
    def target(self, weaviate_server: WeaviateServer, weaviate_collection: str) -> Iterator[Target]:
        yield Target(
            uri=weaviate_server.uri(weaviate_collection),
            read_back=lambda: {
                k: StoredRow(r.vector, {m: v for m, v in r.metadata.items() if m != "tenant"})
                for k, r in read_back(weaviate_server, weaviate_collection).items()
            },
            options={**weaviate_server.options(), "create": True, "metric": "dotproduct"},
        )
        forget_shared()


# -- read back exactly ------------------------------------------------------------------------------


def test_every_type_reads_back_exactly_with_the_official_client(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    given = str(uuid.uuid4())
    ids = ["doc-1", given, "doc-3", "7"]
    matrix = vectors(4, seed=1)
    stamp = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)
    data = table(
        ids,
        matrix,
        title=["alpha", "beta", "gamma", "delta"],
        rank=pa.array([1, -2, 2**53, 0], pa.int64()),
        score=[0.5, 1.25, -3.0, 1e-7],
        flag=[True, False, True, False],
        day=pa.array([dt.date(2024, 1, d) for d in (1, 2, 3, 4)], pa.date32()),
        at=pa.array([stamp, stamp, None, stamp], pa.timestamp("us", tz="UTC")),
        tags=[["a", "b"], [], ["c"], ["d", "e", "f"]],
        counts=pa.array([[1, 2], [3], [-4, 5], []], pa.list_(pa.int64())),
        weights=[[0.5, 1.5], [2.0], [], [0.1]],
        checks=[[True], [False, True], [], [True]],
    )
    report = write(weaviate_server, weaviate_collection, data, create=True)
    assert report.ok and report.written == 4, report

    client = weaviate_server.client()
    try:
        config = client.collections.get(weaviate_collection).config.get()
        types = {p.name: p.data_type.value for p in config.properties}
        objects = {
            str(o.uuid): o for o in client.collections.get(weaviate_collection).iterator(include_vector=True)
        }
    finally:
        client.close()
    assert types == {
        "title": "text",
        "rank": "int",
        "score": "number",
        "flag": "boolean",
        "day": "date",
        "at": "date",
        "tags": "text[]",
        "counts": "int[]",
        "weights": "number[]",
        "checks": "boolean[]",
        ORIGINAL_ID_KEY: "text",
    }
    # a UUID id is the object's id; any other id is its UUIDv5, the original kept in a property
    assert sorted(objects) == sorted([str(uuid.uuid5(ID_NAMESPACE, i)) if i != given else given for i in ids])
    rows = data.to_pylist()
    for i, raw in enumerate(ids):
        obj = objects[as_uuid(raw)]
        assert np.asarray(obj.vector["default"], np.float32).tobytes() == matrix[i].tobytes()
        props = {k: v for k, v in obj.properties.items() if v is not None}
        want = {k: v for k, v in rows[i].items() if k not in ("id", "values") and v is not None}
        want["day"] = dt.datetime.combine(want["day"], dt.time(), dt.UTC)
        want = {k: v for k, v in want.items() if v != [] or k in ("tags", "counts")}
        if raw != given:
            want[ORIGINAL_ID_KEY] = raw
        empty_lists = {k for k, v in rows[i].items() if v == []}
        assert {k: v for k, v in props.items() if k not in empty_lists} == {
            k: v for k, v in want.items() if k not in empty_lists
        }, raw
        assert all(props.get(k) in ([], None) for k in empty_lists)
        assert type(props["rank"]) is int and type(props["score"]) is float


def test_a_rewrite_replaces_each_object_and_the_count_stays(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    ids = [str(uuid.UUID(int=i + 1)) for i in range(30)] + [f"text-{i}" for i in range(30)]
    first, second = vectors(60, seed=2), vectors(60, seed=3)
    assert write(weaviate_server, weaviate_collection, table(ids, first, n=list(range(60))), create=True).ok
    report = write(weaviate_server, weaviate_collection, table(ids, second, n=[i * 10 for i in range(60)]))
    assert report.ok and report.written == 60, report
    client = weaviate_server.client()
    try:
        count = client.collections.get(weaviate_collection).aggregate.over_all(total_count=True).total_count
    finally:
        client.close()
    assert count == 60
    stored = read_back(weaviate_server, weaviate_collection)
    for i, raw in enumerate(ids):
        assert stored[raw].vector.tobytes() == second[i].tobytes(), raw
        assert stored[raw].metadata == {"n": i * 10}


def test_a_named_vector(weaviate_server: WeaviateServer, weaviate_collection: str) -> None:
    matrix = vectors(5, seed=4)
    options = {"create": True, "vector_name": "body", "metric": "euclidean"}
    assert write(
        weaviate_server, weaviate_collection, table([f"n{i}" for i in range(5)], matrix), **options
    ).ok
    client = weaviate_server.client()
    try:
        vector_config = client.collections.get(weaviate_collection).config.get().vector_config or {}
    finally:
        client.close()
    assert set(vector_config) == {"body"}
    assert vector_config["body"].vector_index_config.distance_metric.value == "l2-squared"  # type: ignore[union-attr]
    stored = read_back(weaviate_server, weaviate_collection, vector="body")
    assert [stored[f"n{i}"].vector.tobytes() for i in range(5)] == [m.tobytes() for m in matrix]
    with pytest.raises(
        ConfigError, match=r"option vector_name: collection .* has no vector 'default' \(it has \['body'\]\)"
    ):
        write(weaviate_server, weaviate_collection, table(["x"], matrix[:1]))


def test_an_unnamed_vector_collection_made_elsewhere(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """A collection with one legacy unnamed vector takes it as ``vector_bytes``."""
    created = weaviate_server.rest(
        "POST", "/v1/schema", json={"class": weaviate_collection, "vectorizer": "none"}
    )
    assert created.status_code == 200, created.text
    matrix = vectors(3, seed=5)
    assert write(weaviate_server, weaviate_collection, table(["a", "b", "c"], matrix)).ok
    stored = read_back(weaviate_server, weaviate_collection)
    assert [stored[k].vector.tobytes() for k in "abc"] == [m.tobytes() for m in matrix]
    with pytest.raises(ConfigError, match="has one unnamed vector"):
        write(weaviate_server, weaviate_collection, table(["d"], matrix[:1]), vector_name="body")


# -- refusals: per row, with Weaviate's reason ------------------------------------------------------


def test_a_property_of_the_wrong_type_fails_that_row_with_weaviates_reason(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    matrix = vectors(10, seed=6)
    assert write(weaviate_server, weaviate_collection, table(["seed"], matrix[:1], rank=[1]), create=True).ok
    rows = [{"id": f"g{i}", "values": matrix[i], "rank": i} for i in range(10)]
    rows[4]["rank"] = "high"
    rows[7]["rank"] = 2.5
    report = write(weaviate_server, weaviate_collection, rows, on_error="report")
    assert report.written == 8 and sorted(report.failed_ids) == ["g4", "g7"], report
    reasons = {f.ids: (f.error_type, f.error) for f in report.failures}
    assert reasons == {
        ("g4",): (
            "Rejected",
            f"invalid integer property 'rank' on class '{weaviate_collection}': requires an integer, "
            "the given value is 'high'",
        ),
        ("g7",): (
            "Rejected",
            f"invalid integer property 'rank' on class '{weaviate_collection}': requires an integer, "
            "the given value is '2.5'",
        ),
    }
    assert set(read_back(weaviate_server, weaviate_collection)) == {"seed"} | {f"g{i}" for i in range(10)} - {
        "g4",
        "g7",
    }


def test_rows_of_another_dimension_than_the_stored_vectors_fail_before_sending(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """Weaviate's schema has no dimension: the connector learns it from a stored object."""
    assert write(weaviate_server, weaviate_collection, table(["s"], vectors(1, 7)), create=True).ok
    rows = [{"id": f"g{i}", "values": [0.5] * (DIM - 2 if i == 3 else DIM)} for i in range(6)]
    report = write(weaviate_server, weaviate_collection, rows, on_error="report")
    assert report.written == 5 and report.failed_ids == ["g3"]
    assert report.failures[0].error == f"vector has {DIM - 2} dimensions; expected {DIM}"
    # a write whose rows all have another length: the stored one wins, every row fails alone
    report = write(
        weaviate_server, weaviate_collection, [{"id": "w", "values": [1.0] * 3}], on_error="report"
    )
    assert (
        report.failed_ids == ["w"] and report.failures[0].error == f"vector has 3 dimensions; expected {DIM}"
    )
    assert len(read_back(weaviate_server, weaviate_collection)) == 6


def test_a_tenant_whose_index_has_another_dimension_fails_its_rows_with_weaviates_reason(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """Tenants per row: the connector cannot learn each tenant's dimension, Weaviate refuses the rows of
    the tenant whose index holds another length, by index, and the other tenant's rows are written."""
    first = [{"id": f"a{i}", "values": vectors(1, i)[0], "team": "a"} for i in range(3)]
    assert write(weaviate_server, weaviate_collection, first, create=True, namespace_column="team").ok
    rows = [
        {"id": f"x{i}", "values": [0.25 * i] * (DIM - 2), "team": "a" if i % 2 else "b"} for i in range(8)
    ]
    report = write(weaviate_server, weaviate_collection, rows, namespace_column="team", on_error="report")
    assert report.written == 4 and sorted(report.failed_ids) == ["x1", "x3", "x5", "x7"], report
    reasons = {f.ids: (f.error_type, f.error) for f in report.failures}
    assert reasons == {
        (f"x{i}",): (
            "Rejected",
            f"Validate vector index default for target vector {as_uuid(f'x{i}')}: new node has a vector with "
            f"length {DIM - 2}. Existing nodes have vectors with length {DIM}: vector dimensions do not match "
            "the index dimensions",
        )
        for i in (1, 3, 5, 7)
    }
    stored = read_back(weaviate_server, weaviate_collection)
    assert {k for k, r in stored.items() if r.metadata.get("tenant") == "b"} == {"x0", "x2", "x4", "x6"}
    assert {k for k, r in stored.items() if r.metadata.get("tenant") == "a"} == {"a0", "a1", "a2"}


def test_values_weaviate_would_change_fail_before_sending(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    rows = [{"id": f"v{i}", "values": [0.5] * DIM, "n": i, "tags": ["x"]} for i in range(8)]
    rows[1]["n"] = 2**53 + 1
    rows[2]["tags"] = ["x", None]
    rows[5]["o"] = {"deep": [1, 2**60 + 1]}  # nested: it was stored rounded
    rows[6]["N"] = 6  # one property with "n": one value would be lost
    rows[7]["original_id"] = "mine"  # where v7's own id is kept: it was overwritten
    report = write(weaviate_server, weaviate_collection, rows, create=True, on_error="report")
    assert report.written == 3
    assert {f.ids[0]: f.error for f in report.failures} == {
        "v1": "property 'n': 9007199254740993 is beyond ±2^53; Weaviate keeps numbers as float64 and would store another value",
        "v2": "property 'tags': a list holding a null, which Weaviate cannot store",
        "v5": "property 'o': 1152921504606846977 is beyond ±2^53; Weaviate keeps numbers as float64 and would store another value",
        "v6": "properties 'n' and 'N' are one Weaviate property, 'n' (it lower-cases a name's first letter): one would overwrite the other; rename one",
        "v7": "property 'original_id' is where the row's id 'v7' is kept (it is no UUID): rename the metadata key, or set option original_id_key",
    }
    assert all(f.error_type == "Invalid" and f.attempts == 0 for f in report.failures)


def test_a_nested_object_is_stored_whole_through_weaviates_auto_schema(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    rows = [
        {"id": f"n{i}", "values": [0.5] * DIM, "meta": {"rank": i, "tag": "x", "xs": [1, 2]}}
        for i in range(3)
    ]
    report = write(weaviate_server, weaviate_collection, rows, create=True, on_error="report")
    assert report.written == 3 and report.failed == 0
    stored = {
        key: row.metadata["meta"] for key, row in read_back(weaviate_server, weaviate_collection).items()
    }
    # whole numbers come back as numbers (float64): Weaviate's auto-schema types them `number`
    assert stored == {f"n{i}": {"rank": float(i), "tag": "x", "xs": [1.0, 2.0]} for i in range(3)}


def test_a_property_name_weaviate_refuses_fails_the_rows_that_carry_it(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    rows = [{"id": f"p{i}", "values": [0.5] * DIM, "title": "t"} for i in range(4)]
    rows[2]["bad name"] = "x"
    report = write(weaviate_server, weaviate_collection, rows, create=True, on_error="report")
    assert report.written == 3 and report.failed_ids == ["p2"]
    assert report.failures[0].error_type == "Invalid"  # Weaviate's rule, checked before it is asked
    assert report.failures[0].error == (
        "metadata key 'bad name' is no Weaviate property name: ASCII letters, digits and underscores, "
        "starting with a letter or underscore, at most 231 long ([_A-Za-z][_0-9A-Za-z]{0,230})"
    )


# -- tenants, clearing, options ---------------------------------------------------------------------


def test_namespaces_are_tenants_made_on_demand_and_clear_keeps_the_others(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    for team, start in (("acme", 0), ("globex", 10)):
        report = write(
            weaviate_server,
            weaviate_collection,
            make_table(4, DIM, seed=start, start=start),
            create=True,
            namespace=team,
        )
        assert report.ok, report
    rows = [
        {"id": f"c{i}", "values": [0.5] * DIM, "team": t}
        for i, t in enumerate(["initech", "acme", "initech"])
    ]
    assert write(weaviate_server, weaviate_collection, rows, create=True, namespace_column="team").ok
    client = weaviate_server.client()
    try:
        collection = client.collections.get(weaviate_collection)
        mt = collection.config.get().multi_tenancy_config
        tenants = sorted(collection.tenants.get())
    finally:
        client.close()
    assert mt.enabled and mt.auto_tenant_creation
    assert tenants == ["acme", "globex", "initech"]
    stored = read_back(weaviate_server, weaviate_collection)
    assert {k: r.metadata["tenant"] for k, r in stored.items()} == {
        **{f"r{i}": "acme" for i in range(4)},
        **{f"r{i}": "globex" for i in range(10, 14)},
        "c0": "initech",
        "c1": "acme",
        "c2": "initech",
    }
    with connect(
        weaviate_server.uri(weaviate_collection), **weaviate_server.options(), namespace="acme"
    ) as client:
        said = client.clear("acme")
    assert said.startswith("5 objects in tenant 'acme' of weaviate://")
    assert sorted(read_back(weaviate_server, weaviate_collection)) == [
        "c0",
        "c2",
        *(f"r{i}" for i in range(10, 14)),
    ]
    with connect(
        weaviate_server.uri(weaviate_collection), **weaviate_server.options(), namespace="acme"
    ) as client:
        assert client.clear().startswith("6 objects in every tenant of")
    assert read_back(weaviate_server, weaviate_collection) == {}


def test_tenants_of_a_collection_that_does_not_make_them(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    body = {"class": weaviate_collection, "multiTenancyConfig": {"enabled": True}, "vectorizer": "none"}
    assert weaviate_server.rest("POST", "/v1/schema", json=body).status_code == 200
    rows = make_table(3, DIM, seed=8)
    with pytest.raises(ConfigError, match=r"has no tenant 'north' \(option create=true makes it\)"):
        write(weaviate_server, weaviate_collection, rows, namespace="north")
    with pytest.raises(ConfigError, match="is multi-tenant; name the tenant"):
        write(weaviate_server, weaviate_collection, rows)
    assert write(weaviate_server, weaviate_collection, rows, namespace="north", create=True).ok
    per_row = [
        {"id": "s1", "values": [0.5] * DIM, "team": "south"},
        {"id": "n9", "values": [0.5] * DIM, "team": "north"},
    ]
    report = write(weaviate_server, weaviate_collection, per_row, namespace_column="team", on_error="report")
    assert report.written == 1 and report.failed_ids == ["s1"]  # no create: Weaviate refuses the row
    assert "south" in report.failures[0].error and "not found" in report.failures[0].error
    assert write(weaviate_server, weaviate_collection, per_row, namespace_column="team", create=True).ok
    assert {k: r.metadata["tenant"] for k, r in read_back(weaviate_server, weaviate_collection).items()} == {
        "r0": "north",
        "r1": "north",
        "r2": "north",
        "n9": "north",
        "s1": "south",
    }


def test_a_namespace_needs_a_multi_tenant_collection(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    assert write(weaviate_server, weaviate_collection, make_table(2, DIM, seed=9), create=True).ok
    with pytest.raises(ConfigError, match="has multi-tenancy off, and a namespace is a tenant"):
        write(weaviate_server, weaviate_collection, make_table(2, DIM, seed=9), namespace="x")


def test_a_collection_that_makes_its_tenants_takes_a_new_namespace_without_create(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    body = {
        "class": weaviate_collection,
        "vectorConfig": {"default": {"vectorizer": {"none": {}}, "vectorIndexType": "hnsw"}},
        "multiTenancyConfig": {"enabled": True, "autoTenantCreation": True},
    }
    assert weaviate_server.rest("POST", "/v1/schema", json=body).status_code == 200
    cold = [{"name": "cold", "activityStatus": "COLD"}]
    assert weaviate_server.rest("POST", f"/v1/schema/{weaviate_collection}/tenants", json=cold).is_success
    report = write(weaviate_server, weaviate_collection, make_table(2, DIM, seed=0), namespace="brandnew")
    assert report.ok and report.written == 2, report  # the server made the tenant
    # an inactive tenant: the rows go, and fail with the server's reason (the write is not stopped)
    report = write(
        weaviate_server, weaviate_collection, make_table(2, DIM, seed=1), namespace="cold", on_error="report"
    )
    assert report.failed == 2 and report.reasons() == [("Rejected: tenant not active: 'cold'", 2)], report
    with connect(
        weaviate_server.uri(weaviate_collection), **weaviate_server.options(), namespace="fresh"
    ) as loader:  # an overwrite of a tenant that is not there yet: nothing to delete
        assert loader.clear("fresh").startswith("0 objects in tenant 'fresh' of weaviate://")
    client = weaviate_server.client()
    try:
        brandnew = client.collections.get(weaviate_collection).with_tenant("brandnew")
        assert sorted(str(o.properties[ORIGINAL_ID_KEY]) for o in brandnew.iterator()) == ["r0", "r1"]
    finally:
        client.close()


def test_a_namespace_that_is_no_tenant_name_fails_its_rows_at_once(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    rows = [
        {"id": f"r{i}", "values": [0.5] * DIM, "ns": ns}
        for i, ns in enumerate(["good", "bad name!", "", "x" * 65, "good-2_B", None])
    ]
    started = time.monotonic()
    report = write(
        weaviate_server, weaviate_collection, rows, create=True, namespace_column="ns", on_error="report"
    )
    assert time.monotonic() - started < 10  # refused, not retried as if the server were down
    assert report.written == 2 and sorted(report.failed_ids) == ["r1", "r2", "r3", "r5"], report
    reasons = {f.ids: f for f in report.failures}
    assert {f.error_type for f in reasons.values()} == {"Invalid"}
    assert not any(f.retryable for f in reasons.values())
    assert {f.attempts for f in reasons.values()} == {0}  # never sent: a null was sent as tenant ""
    assert "namespace 'bad name!' is no Weaviate tenant name" in reasons[("r1",)].error
    for row, what in (("r2", "empty"), ("r5", "null")):
        assert reasons[(row,)].error == (
            f"option namespace_column: the row's namespace is {what}, and collection "
            f"{weaviate_collection!r} is multi-tenant: each row needs a tenant name"
        )
    assert repr("x" * 65) in reasons[("r3",)].error
    stored = read_back(weaviate_server, weaviate_collection)
    assert {k: r.metadata["tenant"] for k, r in stored.items()} == {"r0": "good", "r4": "good-2_B"}


@pytest.mark.parametrize("namespace", ["", "bad name!"])
def test_option_namespace_must_be_a_tenant_name(
    weaviate_server: WeaviateServer, weaviate_collection: str, namespace: str
) -> None:
    with pytest.raises(ConfigError, match=NO_TENANT):
        write(
            weaviate_server,
            weaviate_collection,
            make_table(2, DIM, seed=13),
            namespace=namespace,
            create=True,
        )
    assert weaviate_server.rest("GET", f"/v1/schema/{weaviate_collection}").status_code == 404  # none made
    assert write(
        weaviate_server, weaviate_collection, make_table(2, DIM, seed=13), namespace="a", create=True
    ).ok
    with pytest.raises(ConfigError, match=NO_TENANT):  # a multi-tenant one
        write(weaviate_server, weaviate_collection, make_table(2, DIM, seed=13), namespace=namespace)
    with (
        pytest.raises(ConfigError, match=NO_TENANT),
        connect(
            weaviate_server.uri(weaviate_collection), **weaviate_server.options(), namespace="a"
        ) as client,
    ):
        client.clear(namespace)


def test_option_collection_cannot_name_another_collection_than_the_uri() -> None:
    with pytest.raises(
        ConfigError, match="option collection 'ColB' disagrees with the URI's collection 'ColA'"
    ):
        connect("weaviate://127.0.0.1:8080/ColA", collection="ColB")
    for uri, collection in (
        ("weaviate://127.0.0.1:8080/colA", "ColA"),
        ("weaviate://127.0.0.1:8080", "ColA"),
    ):
        with connect(uri, collection=collection) as client:  # one collection: Weaviate capitalises it
            assert client.backend.describe() == "weaviate://127.0.0.1:8080/ColA"


def test_a_missing_collection_and_consistency_level(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    with pytest.raises(ConfigError, match=r"does not exist \(option create=true makes it\)"):
        write(weaviate_server, weaviate_collection, make_table(2, DIM, seed=10))
    assert weaviate_server.rest("GET", f"/v1/schema/{weaviate_collection}").status_code == 404
    for level in ("one", "quorum", "all"):
        report = write(
            weaviate_server,
            weaviate_collection,
            make_table(3, DIM, seed=10),
            create=True,
            consistency_level=level,
        )
        assert report.ok, (level, report)
    assert len(read_back(weaviate_server, weaviate_collection)) == 3


def test_grpc_host_and_port_options(weaviate_server: WeaviateServer, weaviate_collection: str) -> None:
    uri = f"weaviate://localhost:{weaviate_server.port}/{weaviate_collection}"
    with connect(uri, grpc_host="127.0.0.1", grpc_port=weaviate_server.grpc_port, create=True) as client:
        assert f"(gRPC 127.0.0.1:{weaviate_server.grpc_port})" in client.backend.describe()
        assert client.write(make_table(3, DIM, seed=11)).ok
    # a gRPC port nothing listens on: the write stops at once, saying it cannot connect
    with (
        pytest.raises(ConnectError, match="cannot connect"),
        connect(uri, grpc_port=1, max_retries=0) as client,
    ):
        client.write(make_table(2, DIM, seed=11))
    assert len(read_back(weaviate_server, weaviate_collection)) == 3


# -- the API key ------------------------------------------------------------------------------------


def test_the_api_key_goes_as_a_bearer_token_and_shows_nowhere(
    weaviate_key_server: WeaviateServer,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from tests.integration.weaviate_server import API_KEY, collection_name

    name = collection_name("keys")
    uri = weaviate_key_server.uri(name)
    port = {"grpc_port": weaviate_key_server.grpc_port}
    texts = []
    with caplog.at_level("DEBUG"):
        for key in (None, "wv-wrong-key-000"):
            with (
                pytest.raises(AuthError) as refused,
                connect(uri, **port, api_key=key, create=True) as client,
            ):
                client.write(make_table(2, DIM, seed=12))
            texts.append(str(refused.value))
        texts.append(
            outcome(
                lambda: connect(uri, **port, api_key=API_KEY, create=True).upsert(make_table(5, DIM, seed=12))
            )
        )
        with connect(uri, **port, api_key=API_KEY) as client:
            texts += [repr(client), repr(client.options), client.backend.describe()]
            texts.append(outcome(lambda: client.upsert([{"id": "bad", "values": [1.0] * DIM, "rank": "x"}])))
    assert "401" in texts[0] and "anonymous access not enabled" in texts[0], texts[0]
    assert "401" in texts[1], texts[1]
    captured = capfd.readouterr()
    records = [f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records]
    for text in (*texts, captured.out, captured.err, *records):
        assert API_KEY not in text and API_KEY[3:12] not in text
    assert "invalid integer property 'rank'" in texts[-1]  # the refusal happened, over gRPC with the key
    assert sorted(read_back(weaviate_key_server, name)) == [f"r{i}" for i in range(5)]
    weaviate_key_server.rest("DELETE", f"/v1/schema/{name}")


# -- deletes ----------------------------------------------------------------------------------------


def test_deletes_stay_in_their_tenant_and_a_tenant_that_is_not_there_holds_nothing(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    rows = [
        {"id": f"{ns}{i}", "values": vectors(1, seed=i)[0], "ns": ns} for ns in ("a", "b") for i in range(2)
    ]
    rows.append({"id": "a0", "values": vectors(1, seed=9)[0], "ns": "b"})  # a0 in b too: another object
    report = write(weaviate_server, weaviate_collection, rows, create=True, namespace_column="ns")
    assert report.ok, report
    deletes = [
        {"id": "a0", "ns": "b", "op": "delete"},  # b's a0 only
        {"id": "b1", "ns": "b", "op": "delete"},
        {"id": "b0", "ns": "ghost", "op": "delete"},  # no such tenant: nothing to delete there
        {"id": "nothere", "ns": "a", "op": "delete"},
    ]
    report = write(weaviate_server, weaviate_collection, deletes, namespace_column="ns", op_column="op")
    assert report.ok and report.deleted == 4, report
    stored = read_back(weaviate_server, weaviate_collection)
    assert sorted((r.metadata["tenant"], k) for k, r in stored.items()) == [
        ("a", "a0"),
        ("a", "a1"),
        ("b", "b0"),
    ]
    client = weaviate_server.client()
    try:
        assert sorted(client.collections.get(weaviate_collection).tenants.get()) == ["a", "b"]
    finally:
        client.close()
