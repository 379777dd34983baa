"""The Qdrant-protocol test servers take named dense vectors and multi-vectors from the official qdrant-client
as Qdrant does (REST, and gRPC with prefer_grpc): collections with ``multivector_config``, upsert and
upload_points, read back exactly; and refuse what Qdrant refuses, in its words: an unknown name, a wrong size
under a name, a multi-vector under a dense name, an empty multi-vector or one whose vectors differ in length."""

from __future__ import annotations

from pathlib import Path

import grpc
import numpy as np
import orjson
import pytest
from qdrant_client import grpc as qg
from qdrant_client import models
from qdrant_client.http.exceptions import UnexpectedResponse

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer
from tests.servers.qdrant_process import RestartableQdrant

qdrant_server = qdrant_grpc.qdrant_server  # the fixture

pytestmark = pytest.mark.timeout(60)
TRANSPORTS = [pytest.param(False, id="rest"), pytest.param(True, id="grpc")]
MAX_SIM = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, grpc.RpcError):
        return f"{exc.code().name}: {exc.details()}"  # type: ignore[attr-defined]
    assert isinstance(exc, UnexpectedResponse)
    return f"{exc.status_code}: {orjson.loads(exc.content)['status']['error']}"


def _create(client, name: str = "docs") -> None:
    client.create_collection(
        name,
        vectors_config={
            "title": models.VectorParams(size=4, distance=models.Distance.COSINE),
            "colbert": models.VectorParams(size=2, distance=models.Distance.DOT, multivector_config=MAX_SIM),
        },
    )


@pytest.mark.parametrize("prefer_grpc", TRANSPORTS)
def test_official_client_named_and_multi_vectors_round_trip(
    qdrant_server: QdrantServer, prefer_grpc: bool
) -> None:
    client = qdrant_server.client(prefer_grpc=prefer_grpc)
    _create(client)
    params = client.get_collection("docs").config.params
    assert params.vectors == {
        "title": models.VectorParams(size=4, distance=models.Distance.COSINE),
        "colbert": models.VectorParams(size=2, distance=models.Distance.DOT, multivector_config=MAX_SIM),
    }
    rng = np.random.default_rng(3)
    titles = rng.standard_normal((6, 4)).astype(np.float32)
    tokens = [rng.standard_normal((k, 2)).astype(np.float32) for k in (1, 3, 2, 5, 1, 4)]
    client.upsert(
        "docs",
        points=[
            models.PointStruct(id=i, vector={"title": titles[i].tolist(), "colbert": tokens[i].tolist()})
            for i in range(3)
        ],
    )
    client.upload_points(
        "docs",
        points=[
            models.PointStruct(
                id=i, vector={"title": titles[i].tolist(), "colbert": tokens[i].tolist()}, payload={"n": i}
            )
            for i in range(3, 6)
        ],
    )
    assert client.count("docs", exact=True).count == 6
    stored = qdrant_server.store.points("docs")
    for i in range(6):
        assert stored[i].vector("title").tobytes() == titles[i].tobytes()
        assert stored[i].multi_vector("colbert").tobytes() == tokens[i].tobytes()
    records = {r.id: r for r in client.retrieve("docs", list(range(6)), with_vectors=True)}
    for i in range(6):
        vector = records[i].vector
        assert isinstance(vector, dict)
        assert np.asarray(vector["title"], np.float32).tobytes() == titles[i].tobytes()
        assert np.asarray(vector["colbert"], np.float32).tobytes() == tokens[i].tobytes()
        assert np.asarray(vector["colbert"]).shape == tokens[i].shape
    client.close()


@pytest.mark.parametrize("prefer_grpc", TRANSPORTS)
def test_named_refusals_are_worded_as_qdrant_words_them(
    qdrant_server: QdrantServer, prefer_grpc: bool
) -> None:
    client = qdrant_server.client(prefer_grpc=prefer_grpc)
    _create(client)
    title, tokens = [0.1, 0.2, 0.3, 0.4], [[0.5, 0.25], [1.0, 2.0]]
    status = "INVALID_ARGUMENT" if prefer_grpc else "400"
    cases = [
        (
            {"title": title, "colbert": tokens, "body": title},
            "Wrong input: Not existing vector name error: body",
        ),
        (
            {"title": title[:3], "colbert": tokens},
            "Wrong input: Vector dimension error: expected dim: 4, got 3",
        ),
        (
            {"title": title, "colbert": [[0.5, 0.25, 1.0]]},
            "Wrong input: Vector dimension error: expected dim: 2, got 3",
        ),
        (  # a multi-vector of the dense name's size under the dense name
            {"title": [title, title], "colbert": tokens},
            "Wrong input: Conversion between multi and regular vectors failed",
        ),
    ]
    if (
        not prefer_grpc
    ):  # the client's gRPC conversion sends [[...], []] as it is; tested below with raw bytes
        cases.append(
            (
                {"title": title, "colbert": [[0.5, 0.25], [0.5]]},
                "Validation error in JSON body: [points[0].vector.?.data: all vectors must have the same "
                "dimension, found vector with dimension 1]",
            )
        )
        cases.append(
            (
                {"title": title, "colbert": []},  # Qdrant reads [] as an empty dense vector
                "Validation error in JSON body: [points[0].vector.?.vector: dense vector must not be empty]",
            )
        )
    for vector, message in cases:
        with pytest.raises((UnexpectedResponse, grpc.RpcError)) as refused:
            client.upsert("docs", points=[models.PointStruct(id=1, vector=vector)])
        # a validation error is 422 over REST (actix's validation_error_handler), a storage one 400
        shown = "422" if message.startswith("Validation error") and not prefer_grpc else status
        assert _error_text(refused.value) == f"{shown}: {message}", vector
    assert qdrant_server.store.points("docs") == {}  # nothing of a refused request was kept

    # Qdrant keeps a dense vector under a multi-vector name as a multi-vector of one vector
    client.upsert("docs", points=[models.PointStruct(id=2, vector={"title": title, "colbert": [0.5, 0.25]})])
    kept = client.retrieve("docs", [2], with_vectors=True)[0].vector
    assert isinstance(kept, dict) and kept["colbert"] == [[0.5, 0.25]]
    client.close()


@pytest.mark.parametrize(
    ("inner", "message"),
    [
        ([], "multi vector must not be empty"),
        ([[0.5, 0.25], []], "all vectors must be non-empty"),
        ([[0.5, 0.25], [0.5]], "all vectors must have the same dimension, found vector with dimension 1"),
    ],
)
def test_grpc_refuses_an_empty_or_ragged_multi_dense_vector(
    qdrant_server: QdrantServer, inner: list[list[float]], message: str
) -> None:
    client = qdrant_server.client()
    _create(client)
    client.close()
    request = qg.UpsertPoints(collection_name="docs", wait=True)
    point = request.points.add()
    point.id.num = 1
    point.vectors.vectors.vectors["title"].dense.data.extend([0.1, 0.2, 0.3, 0.4])
    multi = point.vectors.vectors.vectors["colbert"].multi_dense
    multi.SetInParent()
    for vector in inner:
        multi.vectors.add().data.extend(vector)
    with grpc.insecure_channel(f"127.0.0.1:{qdrant_server.grpc.port}") as channel:
        upsert = channel.unary_unary("/qdrant.Points/Upsert")
        with pytest.raises(grpc.RpcError) as refused:
            upsert(request.SerializeToString(), timeout=10)
    assert _error_text(refused.value) == (
        f"INVALID_ARGUMENT: Validation error in body: [points[0].vectors.vectors_options.vectors.[].data: {message}]"
    )
    assert qdrant_server.store.points("docs") == {}


def test_grpc_takes_the_deprecated_flat_multi_vector(qdrant_server: QdrantServer) -> None:
    """``Vector{data, vectors_count}``: older clients' form, which Qdrant still reads."""
    client = qdrant_server.client()
    _create(client)
    request = qg.UpsertPoints(collection_name="docs", wait=True)
    point = request.points.add()
    point.id.num = 4
    point.vectors.vectors.vectors["title"].dense.data.extend([0.1, 0.2, 0.3, 0.4])
    legacy = point.vectors.vectors.vectors["colbert"]
    legacy.data.extend([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    legacy.vectors_count = 3
    with grpc.insecure_channel(f"127.0.0.1:{qdrant_server.grpc.port}") as channel:
        channel.unary_unary("/qdrant.Points/Upsert")(request.SerializeToString(), timeout=10)
    kept = client.retrieve("docs", [4], with_vectors=True)[0].vector
    assert isinstance(kept, dict) and kept["colbert"] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    client.close()


def test_the_journaled_server_keeps_multi_vectors_across_a_kill(tmp_path: Path) -> None:
    """``RestartableQdrant`` (fault tests SIGKILL it) holds a multi-vector collection and its points after a restart."""
    rng = np.random.default_rng(9)
    tokens = [rng.standard_normal((k, 2)).astype(np.float32) for k in (1, 3)]
    title = rng.standard_normal((2, 4)).astype(np.float32)
    with RestartableQdrant(tmp_path / "journal.bin") as server:
        client = server.client(prefer_grpc=True)
        _create(client)
        client.upsert(
            "docs",
            points=[
                models.PointStruct(id=i, vector={"title": title[i].tolist(), "colbert": tokens[i].tolist()})
                for i in range(2)
            ],
        )
        client.close()
        server.kill()
        server.start()
        client = server.client()
        assert client.get_collection("docs").config.params.vectors["colbert"].multivector_config == MAX_SIM  # type: ignore[index]
        records = {r.id: r.vector for r in client.retrieve("docs", [0, 1], with_vectors=True)}
        client.close()
    for i in range(2):
        vector = records[i]
        assert isinstance(vector, dict)
        assert np.asarray(vector["colbert"], np.float32).tobytes() == tokens[i].tobytes()
        assert np.asarray(vector["title"], np.float32).tobytes() == title[i].tobytes()
