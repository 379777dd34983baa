"""The Qdrant-protocol test servers answer the official qdrant-client (REST, and gRPC with prefer_grpc) as
Qdrant does: collections, upsert, upload_points, retrieve and count, and Qdrant's statuses and wording
for a wrong dimension, a bad id, a missing collection, a throttle and a bad key."""

from __future__ import annotations

import uuid

import grpc
import httpx
import numpy as np
import pytest
from qdrant_client import models
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.common.version_check import get_server_version, is_compatible
from qdrant_client.http.exceptions import UnexpectedResponse

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer

qdrant_server = qdrant_grpc.qdrant_server  # the fixture

pytestmark = pytest.mark.timeout(60)
TRANSPORTS = [pytest.param(False, id="rest"), pytest.param(True, id="grpc")]


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, grpc.RpcError):
        return f"{exc.code().name}: {exc.details()}"  # type: ignore[attr-defined]
    assert isinstance(exc, UnexpectedResponse)
    return f"{exc.status_code}: {exc.content.decode()}"


@pytest.mark.parametrize("prefer_grpc", TRANSPORTS)
def test_official_client_round_trip(qdrant_server: QdrantServer, prefer_grpc: bool) -> None:
    client = qdrant_server.client(prefer_grpc=prefer_grpc)
    assert not client.collection_exists("docs")
    client.create_collection(
        "docs",
        vectors_config={"dense": models.VectorParams(size=4, distance=models.Distance.DOT)},
        sparse_vectors_config={"text": models.SparseVectorParams()},
    )
    assert client.collection_exists("docs")
    params = client.get_collection("docs").config.params
    assert params.vectors == {"dense": models.VectorParams(size=4, distance=models.Distance.DOT)}
    assert set(params.sparse_vectors or {}) == {"text"}

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((3, 4)).astype(np.float32)
    some_uuid = str(uuid.uuid4())
    client.upsert(
        "docs",
        points=[
            models.PointStruct(id=1, vector={"dense": vectors[0].tolist()}, payload={"n": 1, "tags": ["a"]}),
            models.PointStruct(
                id=some_uuid,
                vector={
                    "dense": vectors[1].tolist(),
                    "text": models.SparseVector(indices=[3, 9], values=[0.5, 0.25]),
                },
                payload={"nested": {"x": 1.5}},
            ),
        ],
    )
    client.upload_points(
        "docs",
        points=[models.PointStruct(id=i, vector={"dense": vectors[2].tolist()}) for i in range(10, 15)],
    )
    assert client.count("docs", exact=True).count == 7

    stored = qdrant_server.store.points("docs")
    assert stored[1].vector("dense").tobytes() == vectors[0].tobytes()
    assert stored[1].payload == {"n": 1, "tags": ["a"]}
    assert stored[some_uuid].sparse["text"][0] == [3, 9]

    records = {r.id: r for r in client.retrieve("docs", [1, some_uuid, 99], with_vectors=True)}
    assert set(records) == {1, some_uuid}
    assert np.asarray(records[1].vector["dense"], np.float32).tobytes() == vectors[0].tobytes()  # type: ignore[index]
    assert records[some_uuid].payload == {"nested": {"x": 1.5}}
    sparse = records[some_uuid].vector["text"]  # type: ignore[index]
    assert list(sparse.indices) == [3, 9] and list(sparse.values) == [0.5, 0.25]
    client.close()


@pytest.mark.parametrize("prefer_grpc", TRANSPORTS)
def test_refusals_are_worded_as_qdrant_words_them(qdrant_server: QdrantServer, prefer_grpc: bool) -> None:
    client = qdrant_server.client(prefer_grpc=prefer_grpc)
    client.create_collection(
        "docs", vectors_config=models.VectorParams(size=3, distance=models.Distance.COSINE)
    )

    with pytest.raises((UnexpectedResponse, grpc.RpcError)) as wrong_dim:
        client.upsert("docs", points=[models.PointStruct(id=1, vector=[0.1, 0.2])])
    want = "Wrong input: Vector dimension error: expected dim: 3, got 2"
    if prefer_grpc:
        assert _error_text(wrong_dim.value) == f"INVALID_ARGUMENT: {want}"
    else:
        assert _error_text(wrong_dim.value).startswith("400: " + _body(want) + ',"time":')

    with pytest.raises((UnexpectedResponse, grpc.RpcError)) as missing:
        client.get_collection("nope")
    text = _error_text(missing.value)
    assert "Not found: Collection `nope` doesn't exist!" in text
    assert text.startswith("NOT_FOUND" if prefer_grpc else "404")

    with pytest.raises((UnexpectedResponse, grpc.RpcError)) as exists:
        client.create_collection(
            "docs", vectors_config=models.VectorParams(size=3, distance=models.Distance.DOT)
        )
    assert "Collection `docs` already exists!" in _error_text(exists.value)
    assert qdrant_server.store.points("docs") == {}  # nothing of a refused request was kept
    client.close()


def _body(error: str) -> str:
    return '{"status":{"error":"' + error + '"}'


def test_bad_point_ids_over_both_transports(qdrant_server: QdrantServer) -> None:
    """The official client converts ids itself; raw requests show the server's answer to a bad one."""
    qdrant_server.store.create_collection("docs", {"": (2, "Dot")}, set(), False)
    reply = httpx.put(
        f"http://127.0.0.1:{qdrant_server.rest.port}/collections/docs/points",
        json={"points": [{"id": "doc-1", "vector": [1, 2]}]},
    )
    assert reply.status_code == 400
    assert reply.json()["status"]["error"] == (
        "Format error in JSON body: value doc-1 is not a valid point ID, "
        "valid values are either an unsigned integer or a UUID"
    )
    from qdrant_client import grpc as qg

    request = qg.UpsertPoints(
        collection_name="docs",
        points=[
            qg.PointStruct(id=qg.PointId(uuid="doc-1"), vectors=qg.Vectors(vector=qg.Vector(data=[1, 2])))
        ],
    )
    with grpc.insecure_channel(f"127.0.0.1:{qdrant_server.grpc.port}") as channel:
        upsert = channel.unary_unary("/qdrant.Points/Upsert")
        with pytest.raises(grpc.RpcError) as caught:
            upsert(request.SerializeToString(), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert caught.value.details() == "Unable to parse UUID: doc-1"  # type: ignore[attr-defined]
    assert qdrant_server.store.points("docs") == {}


@pytest.mark.parametrize("prefer_grpc", TRANSPORTS)
def test_throttle_and_key(qdrant_server: QdrantServer, prefer_grpc: bool) -> None:
    client = qdrant_server.client(prefer_grpc=prefer_grpc, api_key="secret")
    qdrant_server.script(api_key="secret", throttle_first=1, retry_after_s=2)
    client.create_collection("docs", vectors_config=models.VectorParams(size=2, distance=models.Distance.DOT))
    point = models.PointStruct(id=1, vector=[1.0, 2.0])
    # the client reads Qdrant's 429 + Retry-After and RESOURCE_EXHAUSTED + retry-after into one exception
    with pytest.raises(ResourceExhaustedResponse) as throttled:
        client.upsert("docs", points=[point])
    assert throttled.value.retry_after_s == 2
    assert str(throttled.value).startswith("Rate limiting exceeded: Write rate limit exceeded")
    client.upsert("docs", points=[point])  # the next one passes
    assert client.count("docs").count == 1
    client.close()

    wrong = qdrant_server.client(prefer_grpc=prefer_grpc, api_key="wrong")
    with pytest.raises((UnexpectedResponse, grpc.RpcError)) as refused:
        wrong.count("docs")
    assert "Invalid API key or JWT" in _error_text(refused.value)
    assert _error_text(refused.value).startswith("UNAUTHENTICATED" if prefer_grpc else "401")
    wrong.close()


def test_server_version_satisfies_the_client_check(qdrant_server: QdrantServer) -> None:
    from importlib.metadata import version

    server_version = get_server_version(f"http://127.0.0.1:{qdrant_server.rest.port}", {}, None, 5)
    assert server_version is not None and is_compatible(version("qdrant-client"), server_version)
