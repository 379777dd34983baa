"""Qdrant's limits on names and sizes, and its validation errors, against the Qdrant-protocol test servers.

What a real Qdrant (qdrant/qdrant 74f3e85, v1.19) refuses, as it words it: a collection name is 1 to 255
characters, and a new one holds none of ``< > : " / \\ | ? * NUL \\x1F`` (``StrictCollectionPath``,
``validate_collection_name``; older collections may hold all but ``/`` and NUL, so other requests check only
those); a vector name is at most 200 bytes with none of them (``validate_vector_name``, in
``CreateCollectionOperation::new``); ``VectorParams.size`` is 1 to 65,536. A request that breaks a validation
rule is 422 over REST (actix's ``validation_error_handler``), INVALID_ARGUMENT over gRPC, worded by
``label_errors`` (a sparse vector's errors carry no message: ``Validation error: must be unique [{}]``).

The connector refuses what such a create would refuse before it sends it, a ``ConfigError`` naming the
option, and a collection that is there keeps working whatever its (legacy) name holds.
"""

from __future__ import annotations

from typing import Any

import grpc
import httpx
import numpy as np
import orjson
import pyarrow as pa
import pytest
from qdrant_client import grpc as qg
from qdrant_client import models

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.backends import qdrant as qdrant_backend
from vectordb.connector.errors import ConfigError

qdrant_server = qdrant_grpc.qdrant_server  # the fixture

pytestmark = pytest.mark.timeout(120)
TRANSPORTS = ["grpc", "rest"]
F32 = pa.list_(pa.float32())
SPARSE = pa.struct([("indices", pa.list_(pa.int32())), ("values", pa.list_(pa.float32()))])


def _table(dim: int = 4, rows: int = 2) -> pa.Table:
    matrix = np.full((rows, dim), 0.5, np.float32)
    return pa.table({"id": list(range(1, rows + 1)), "values": pa.array(list(matrix), F32)})


# -- the connector ------------------------------------------------------------------------------------


CREATE_REFUSED = [  # (collection, options, the error's start)
    ("c", {"vector_name": "a:b"}, "option vector_name: vector name 'a:b' holds ':'"),
    ("c", {"vector_name": "v" * 201}, "option vector_name: vector name 'vvvv"),
    ("c", {"vector_name": "é" * 101}, "option vector_name: vector name 'éé"),  # 202 bytes, 101 characters
    ("c", {"vector_columns": {"t|x": "values"}}, "option vector_columns: vector name 't|x' holds '|'"),
    (
        "c",
        {"sparse_column": "sp", "sparse_vector_name": "s\x1f"},
        "option sparse_vector_name: vector name 's\\x1f' holds '\\x1f'",
    ),
    ("bad*", {}, "option uri: "),
    ("bad<name", {"vector_name": "v"}, "option uri: "),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("collection", "options", "error"), CREATE_REFUSED)
def test_a_create_qdrant_would_refuse_is_a_config_error_before_it_is_sent(
    qdrant_server: QdrantServer, transport: str, collection: str, options: dict[str, Any], error: str
) -> None:
    table = _table()
    if "sparse_column" in options:
        table = table.append_column("sp", pa.array([{"indices": [1], "values": [0.5]}] * 2, SPARSE))
    uri = qdrant_server.uri(transport, collection)
    with pytest.raises(ConfigError) as refused, connect(uri, create=True, **options) as client:
        client.upsert(table)
    assert str(refused.value).startswith(error), str(refused.value)
    assert "cannot create" in str(refused.value)
    assert not qdrant_server.store.collections  # no create was sent, nothing made
    assert not qdrant_server.store.log  # and no row


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_collection_name_no_request_takes_is_refused_before_anything_is_sent(
    qdrant_server: QdrantServer, transport: str
) -> None:
    with pytest.raises(ConfigError, match=r"^option uri: collection name 'c{80}' is 300 characters long"):
        connect(qdrant_server.uri(transport, "c" * 300), create=True)
    base = qdrant_server.uri(transport, "").rstrip("/")
    with pytest.raises(ConfigError, match=r"^option collection: collection name 'a\\x00b' holds '\\x00'"):
        connect(base, collection="a\0b")
    assert not qdrant_server.store.collections


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_dimension_over_65536_is_a_config_error_naming_the_column_option(
    qdrant_server: QdrantServer, transport: str
) -> None:
    uri = qdrant_server.uri(transport, "wide")
    single = r"^option vector_column: the vectors have dimension 65537; "
    with pytest.raises(ConfigError, match=single), connect(uri, create=True) as client:
        client.upsert(_table(dim=65_537, rows=1))
    named = r"^option vector_columns: vector 't' has dimension 65537; "
    with (
        pytest.raises(ConfigError, match=named),
        connect(uri, create=True, vector_columns={"t": "values"}) as c,
    ):
        c.upsert(_table(dim=65_537, rows=1))
    assert not qdrant_server.store.collections and not qdrant_server.store.log


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_existing_collection_with_a_legacy_name_is_still_written(
    qdrant_server: QdrantServer, transport: str
) -> None:
    # made before Qdrant 1.5 / 1.18 made their rules (the store takes it as such a collection is there)
    qdrant_server.store.create_collection("old*docs", {"": (4, "Dot")}, set(), False)
    with connect(qdrant_server.uri(transport, "old*docs"), create=True) as client:
        report = client.upsert(_table())
    assert report.written == 2 and not report.failed
    assert sorted(qdrant_server.store.points("old*docs")) == [1, 2]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sparse_rows_qdrant_would_refuse_fail_alone_unsent(
    qdrant_server: QdrantServer, transport: str
) -> None:
    """A repeated sparse index (Qdrant: ``indices: must be unique``) fails its row before sending."""
    qdrant_server.store.create_collection("sp", {"": (4, "Dot")}, {"sparse"}, False)
    sparse = [
        {"indices": [1, 2], "values": [0.5, 0.25]},
        {"indices": [3, 3], "values": [0.5, 0.25]},
        {"indices": [4], "values": [0.5]},
    ]
    table = _table(rows=3).append_column("sp", pa.array(sparse, SPARSE))
    with connect(qdrant_server.uri(transport, "sp"), sparse_column="sp", on_error="report") as client:
        report = client.upsert(table)
    assert report.written == 2
    assert [(f.ids, f.error_type, f.attempts) for f in report.failures] == [(("2",), "Invalid", 0)]
    assert sorted(qdrant_server.store.points("sp")) == [1, 3]


def _multi_table() -> pa.Table:
    """Four rows of multi-vectors of 1024 floats a vector, the second of 1024 of them (1,048,576 floats)."""
    counts = [2, 1024, 1, 3]
    values = np.full((sum(counts), 1024), 0.5, np.float32)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
    tokens = pa.ListArray.from_arrays(pa.array(offsets), pa.array(list(values), F32))
    return pa.table({"id": [1, 2, 3, 4], "tok": tokens})


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_multi_vector_qdrant_would_refuse_fails_alone_unsent(
    qdrant_server: QdrantServer, transport: str
) -> None:
    """Qdrant refuses a request holding a multi-vector of 1,048,576 floats or more: that row fails before sending."""
    qdrant_server.store.create_collection("mv", {"colbert": (1024, "Dot")}, set(), False, {"colbert"})
    uri = qdrant_server.uri(transport, "mv")
    with connect(uri, multi_vector_columns={"colbert": "tok"}, on_error="report") as client:
        report = client.upsert(_multi_table())
    assert report.written == 3
    assert [(f.ids, f.error_type, f.attempts) for f in report.failures] == [(("2",), "Invalid", 0)]
    assert report.failures[0].error == (
        "multi-vector 'colbert' holds 1,048,576 floats; Qdrant takes fewer than 1,048,576 (its vectors times "
        "their length)"
    )
    assert [entry.outcome for entry in qdrant_server.store.log] == ["ok"]  # one request, without it
    assert sorted(qdrant_server.store.points("mv")) == [1, 3, 4]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_row_qdrant_validation_refuses_fails_alone(
    qdrant_server: QdrantServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request Qdrant's validation refuses (422 over REST, INVALID_ARGUMENT over gRPC) is split until only
    the refused row is left: the connector's own check of multi-vector sizes lifted, so the server judges."""
    monkeypatch.setattr(qdrant_backend, "MAX_MULTIVECTOR_FLOATS", 1 << 30)
    qdrant_server.store.create_collection("mv", {"colbert": (1024, "Dot")}, set(), False, {"colbert"})
    table = _multi_table()
    uri = qdrant_server.uri(transport, "mv")
    with connect(uri, multi_vector_columns={"colbert": "tok"}, on_error="report") as client:
        report = client.upsert(table)
    assert report.written == 3
    assert [f.ids for f in report.failures] == [("2",)]
    error = report.failures[0].error
    assert "Total size of all vectors (1048576) must be less than 1048576" in error
    if transport == "rest":
        assert "HTTP 422: Validation error in JSON body: [batch.?.data: Total size" in error
    assert sorted(qdrant_server.store.points("mv")) == [1, 3, 4]
    refused = [entry.message for entry in qdrant_server.store.log if entry.outcome != "ok"]
    assert refused and all(m.startswith("Validation error in") for m in refused)
    assert {entry.outcome for entry in qdrant_server.store.log} == {"ok", "validation"}


# -- the test servers -------------------------------------------------------------------------------


def _rest(server: QdrantServer, verb: str, path: str, doc: Any = None) -> httpx.Response:
    body = orjson.dumps(doc) if doc is not None else b""
    return httpx.request(verb, f"http://127.0.0.1:{server.rest.port}{path}", content=body, timeout=10)


def _refusal(reply: httpx.Response) -> tuple[int, str]:
    return reply.status_code, reply.json()["status"]["error"]


VECTORS = {"size": 4, "distance": "Dot"}


def test_rest_refuses_a_new_collection_as_qdrant_does(qdrant_server: QdrantServer) -> None:
    s = qdrant_server
    assert _refusal(_rest(s, "PUT", "/collections/bad%2A", {"vectors": VECTORS})) == (
        422,
        'Validation error in path parameters: [collection_name: collection name cannot contain "*" char]',
    )
    long = "c" * 256
    assert _refusal(_rest(s, "PUT", f"/collections/{long}:x", {"vectors": VECTORS})) == (
        422,
        f'Validation error in path parameters: [collection_name: value "{long}:x" invalid, must be from 1 '
        'to 255 characters; collection_name: collection name cannot contain ":" char]',
    )
    assert _refusal(_rest(s, "GET", f"/collections/{long}")) == (  # any request: the length
        422,
        f'Validation error in path parameters: [collection_name: value "{long}" invalid, must be from 1 '
        "to 255 characters]",
    )
    assert _refusal(_rest(s, "PUT", "/collections/c", {"vectors": {"a:b": VECTORS}})) == (
        400,
        'Wrong input: Invalid dense vector name `a:b`: vector name cannot contain ":" char',
    )
    assert _refusal(_rest(s, "PUT", "/collections/c", {"vectors": {"v" * 201: VECTORS}})) == (
        400,
        f"Wrong input: Invalid dense vector name `{'v' * 201}`: vector name must be at most 200 bytes long",
    )
    assert _refusal(_rest(s, "PUT", "/collections/c", {"sparse_vectors": {"s?": {}}})) == (
        400,
        'Wrong input: Invalid sparse vector name `s?`: vector name cannot contain "?" char',
    )
    assert _refusal(_rest(s, "PUT", "/collections/c", {"vectors": {"size": 65_537, "distance": "Dot"}})) == (
        422,
        "Validation error in JSON body: [vectors.size: must be from 1 to 65536]",
    )
    assert _refusal(
        _rest(s, "PUT", "/collections/c", {"vectors": {"t": {"size": 70_000, "distance": "Dot"}}})
    ) == (
        422,
        "Validation error in JSON body: [vectors.?.size: must be from 1 to 65536]",
    )
    assert not s.store.collections
    # the limits themselves are taken: 255 characters, 200 bytes, 65,536 floats
    assert _rest(s, "PUT", f"/collections/{'c' * 255}", {"vectors": {"v" * 200: VECTORS}}).status_code == 200
    assert (
        _rest(s, "PUT", "/collections/wide", {"vectors": {"size": 65_536, "distance": "Dot"}}).status_code
        == 200
    )


def test_grpc_refuses_a_new_collection_as_qdrant_does(qdrant_server: QdrantServer) -> None:
    client = qdrant_server.client(prefer_grpc=True)
    params = models.VectorParams(size=4, distance=models.Distance.DOT)
    cases: list[tuple[str, Any, str]] = [
        (
            "bad|name",
            params,
            'Validation error in body: [collection_name: collection name cannot contain "|" char]',
        ),
        (
            "c",
            {"a/b": params},
            'Wrong input: Invalid dense vector name `a/b`: vector name cannot contain "/" char',
        ),
        (
            "c",
            models.VectorParams(size=70_000, distance=models.Distance.DOT),
            "Validation error in body: [vectors_config.config.size: value 70000 invalid, must be from 1 to 65536]",
        ),
    ]
    for name, vectors, message in cases:
        with pytest.raises(grpc.RpcError) as refused:
            client.create_collection(name, vectors_config=vectors)
        error = refused.value
        assert (error.code(), error.details()) == (grpc.StatusCode.INVALID_ARGUMENT, message)
    client.close()
    assert not qdrant_server.store.collections


def test_rest_validation_errors_are_422_worded_as_qdrant_words_them(qdrant_server: QdrantServer) -> None:
    s = qdrant_server
    s.store.create_collection("sp", {"": (4, "Dot")}, {"sparse"}, False)
    good = [0.5] * 4

    def upsert(points: list[dict[str, Any]]) -> tuple[int, str]:
        return _refusal(_rest(s, "PUT", "/collections/sp/points?wait=true", {"points": points}))

    label = "Validation error in JSON body"
    assert upsert([{"id": 1, "vector": {"": good, "sparse": {"indices": [1, 2], "values": [0.5]}}}]) == (
        422,
        f"{label}: [points[0].vector.?.values: Validation error: must be the same length as indices [{{}}]]",
    )
    assert upsert(
        [
            {"id": 1, "vector": {"": good}},
            {"id": 2, "vector": {"": good, "sparse": {"indices": [1, 1], "values": [0.5, 0.5]}}},
        ]
    ) == (422, f"{label}: [points[1].vector.?.indices: Validation error: must be unique [{{}}]]")
    assert upsert([{"id": 1, "vector": {"": []}}]) == (
        422,
        f"{label}: [points[0].vector.?.vector: dense vector must not be empty]",
    )
    assert upsert([{"id": 1, "vector": []}]) == (
        422,
        f"{label}: [points[0].vector.vector: dense vector must not be empty]",
    )
    assert not s.store.points("sp")


def test_grpc_sparse_validation_is_worded_as_qdrant_words_it(qdrant_server: QdrantServer) -> None:
    qdrant_server.store.create_collection("sp", {"": (4, "Dot")}, {"sparse"}, False)
    request = qg.UpsertPoints(collection_name="sp", wait=True)
    point = request.points.add()
    point.id.num = 1
    point.vectors.vectors.vectors[""].dense.data.extend([0.5] * 4)
    sparse = point.vectors.vectors.vectors["sparse"].sparse
    sparse.indices.extend([1, 1])
    sparse.values.extend([0.5])
    address = f"127.0.0.1:{qdrant_server.grpc.port}"
    with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as refused:
        channel.unary_unary("/qdrant.Points/Upsert")(request.SerializeToString(), timeout=10)
    error = refused.value
    path = "points[0].vectors.vectors_options.vectors.[]"
    assert (error.code(), error.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        f"Validation error in body: [{path}.values: Validation error: must be the same length as indices [{{}}]; "
        f"{path}.indices: Validation error: must be unique [{{}}]]",
    )
    assert not qdrant_server.store.points("sp")
