"""The Pinecone-protocol test servers are faithful: the official ``pinecone`` SDK (10.x) works against them.

What the SDK sends must arrive exactly (ids, float32 values byte for byte, sparse values,
metadata, namespace, api key), and the SDK must read the servers' faults as it reads
Pinecone's: 400 / INVALID_ARGUMENT is an error, 401 / UNAUTHENTICATED is an auth error,
throttling and a dropped request are retried until everything arrives.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any, Literal

import grpc
import httpx
import numpy as np
import orjson
import pytest
from pinecone import Pinecone
from pinecone._internal.bulk import get_registry
from pinecone._internal.http_client import get_budget_registry
from pinecone.errors import ApiError, UnauthorizedError
from pinecone.grpc import PineconeGRPC

from tests.servers import pinecone_rules as rules
from tests.servers.fixtures import ServerHandle, start_server, start_server_process
from tests.servers.pinecone_grpc import pb
from tests.servers.script import Arrived, FaultScript

API_KEY = "test-key"
DIM = 8


@pytest.fixture(autouse=True)
def fresh_sdk_limits() -> Iterator[None]:
    """The SDK keeps per-host throttle gates and retry budgets process-wide; each test starts clean."""
    get_registry()._reset()
    get_budget_registry()._reset()
    yield
    get_registry()._reset()
    get_budget_registry()._reset()


@pytest.fixture(params=["rest", "grpc"])
def server(request: pytest.FixtureRequest) -> ServerHandle:
    """Each test runs against both servers: the fixtures ``pinecone_rest_server``/``pinecone_grpc_server``."""
    handle: ServerHandle = request.getfixturevalue(f"pinecone_{request.param}_server")
    return handle


def open_index(server: ServerHandle, api_key: str = API_KEY) -> Any:
    """The SDK's index client for the server: REST takes a URL, gRPC a host and the plaintext scheme."""
    if server.kind == "rest":
        return Pinecone(api_key=api_key).Index(host=server.url)
    return PineconeGRPC(api_key=api_key, grpc_scheme="http").Index(host=server.host)


@pytest.fixture
def index(server: ServerHandle) -> Iterator[Any]:
    idx = open_index(server)
    yield idx
    idx.close()


def make_vectors(n: int, seed: int = 0, prefix: str = "v") -> list[dict[str, Any]]:
    """SDK dict vectors: float32 values (as the Python floats that represent them), sparse, metadata."""
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, DIM), dtype=np.float32)
    return [
        {
            "id": f"{prefix}{i}",
            "values": matrix[i].tolist(),
            "sparse_values": {
                "indices": [i, i + 7, 1000 + i],
                "values": [0.5, -1.25, float(np.float32(0.1))],
            },
            "metadata": {"genre": "docs", "rank": i, "tags": ["a", "b"], "score": 0.75, "public": i % 2 == 0},
        }
        for i in range(n)
    ]


def assert_arrived_exactly(arrived: Arrived, vectors: list[dict[str, Any]], namespace: str) -> None:
    assert arrived.ids(namespace) == {v["id"] for v in vectors}
    for sent in vectors:
        got = arrived.vector(sent["id"], namespace)
        assert got.values.tobytes() == np.asarray(sent["values"], dtype="<f4").tobytes()
        assert got.sparse is not None
        indices, values = got.sparse
        assert indices.tolist() == sent["sparse_values"]["indices"]
        assert values.tobytes() == np.asarray(sent["sparse_values"]["values"], dtype="<f4").tobytes()
        assert got.metadata == sent["metadata"]  # gRPC's Struct makes ints floats: 3 == 3.0


def test_dense_sparse_metadata_and_namespace_arrive_exactly(server: ServerHandle, index: Any) -> None:
    one_request = make_vectors(5, seed=1, prefix="a")
    batched = make_vectors(23, seed=2, prefix="b")

    index.upsert(vectors=one_request, namespace="docs", show_progress=False)
    result = index.upsert(vectors=batched, batch_size=10, max_concurrency=2, show_progress=False)

    assert not result.has_errors
    arrived = server.arrived()
    assert_arrived_exactly(arrived, one_request, "docs")
    assert_arrived_exactly(arrived, batched, "")
    assert [r.outcome for r in arrived.requests] == ["ok"] * 4
    assert sorted(r.vector_count for r in arrived.requests) == [3, 5, 10, 10]
    assert {r.api_key for r in arrived.requests} == {API_KEY}
    assert all(r.headers.get("x-pinecone-api-version") for r in arrived.requests)


def test_sdk_delete_all_and_by_id_act_on_the_stored_vectors(server: ServerHandle, index: Any) -> None:
    index.upsert(vectors=make_vectors(3, seed=5, prefix="x"), namespace="a", show_progress=False)
    index.upsert(vectors=make_vectors(4, seed=6, prefix="y"), namespace="b", show_progress=False)

    index.delete(ids=["y0"], namespace="b")
    index.delete(delete_all=True, namespace="a")

    arrived = server.arrived()
    assert arrived.ids("a") == set() and arrived.ids("b") == {"y1", "y2", "y3"}
    with pytest.raises(Exception, match=r"(?i)not.?found|404"):  # Pinecone: 404 for an empty namespace
        index.delete(delete_all=True, namespace="a")


def test_the_connectors_deletes_arrive_as_the_sdks_and_over_1000_ids_are_refused(
    server: ServerHandle, index: Any
) -> None:
    from vectordb.connector import connect

    index.upsert(vectors=make_vectors(4, seed=7, prefix="z"), namespace="n", show_progress=False)
    index.delete(ids=["z0", "z1", "absent"], namespace="n")
    with connect(server.uri, api_key=API_KEY) as client:
        assert client.delete(["z2", "z3", "absent"], namespace="n").ok
    sdk, ours = server.arrived().deletes
    assert (sdk.namespace, sdk.outcome, ours.namespace, ours.outcome) == ("n", "ok", "n", "ok")
    assert (sdk.ids, ours.ids) == (["z0", "z1", "absent"], ["z2", "z3", "absent"])
    assert server.arrived().ids("n") == set()
    index.upsert(vectors=make_vectors(1, seed=8, prefix="w"), namespace="n", show_progress=False)
    with pytest.raises(Exception, match=r"(?i)invalid|400"):  # DeleteRequest.ids holds at most 1000
        index.delete(ids=[f"w{i}" for i in range(1001)], namespace="n")
    assert server.arrived().deletes[-1].outcome == "invalid"


def test_an_id_written_twice_keeps_the_last_write(server: ServerHandle, index: Any) -> None:
    first, second = make_vectors(2, seed=3)
    second = {**second, "id": first["id"], "metadata": {"version": 2}}

    index.upsert(vectors=[first], show_progress=False)
    index.upsert(vectors=[second], show_progress=False)

    arrived = server.arrived()
    assert len(arrived.final) == 1
    last = arrived.vector(first["id"])
    assert last.values.tobytes() == np.asarray(second["values"], dtype="<f4").tobytes()
    assert last.metadata == {"version": 2}


def test_rest_body_is_pinecone_json(pinecone_rest_server: ServerHandle) -> None:
    idx = open_index(pinecone_rest_server)
    try:
        idx.upsert(vectors=make_vectors(2), namespace="ns", show_progress=False)
        idx.upsert(vectors=[("plain", [1.0] * DIM)], show_progress=False)
    finally:
        idx.close()
    with_namespace, plain = pinecone_rest_server.arrived().requests

    body = orjson.loads(with_namespace.body)
    assert body["namespace"] == "ns"
    assert set(body["vectors"][0]) == {"id", "values", "sparseValues", "metadata"}
    assert with_namespace.headers["api-key"] == API_KEY
    assert orjson.loads(plain.body) == {"vectors": [{"id": "plain", "values": [1.0] * DIM}]}


def test_grpc_request_bytes_parse_with_the_generated_class(pinecone_grpc_server: ServerHandle) -> None:
    vectors = make_vectors(4, seed=4)
    idx = open_index(pinecone_grpc_server)
    try:
        idx.upsert(vectors=vectors, namespace="ns", show_progress=False)
    finally:
        idx.close()
    (request,) = pinecone_grpc_server.arrived().requests

    parsed = pb.UpsertRequest.FromString(request.body)
    assert parsed.namespace == "ns"
    assert [v.id for v in parsed.vectors] == [v["id"] for v in vectors]
    for got, sent in zip(parsed.vectors, vectors, strict=True):
        assert (
            np.asarray(got.values, dtype="<f4").tobytes() == np.asarray(sent["values"], dtype="<f4").tobytes()
        )
        assert list(got.sparse_values.indices) == sent["sparse_values"]["indices"]
        assert got.metadata["genre"] == "docs"
    assert request.headers["api-key"] == API_KEY


def test_a_rejected_id_fails_its_whole_request(server: ServerHandle, index: Any) -> None:
    vectors = make_vectors(6, seed=5)
    server.script(reject_ids={"v4"})

    with pytest.raises(ApiError) as raised:
        index.upsert(vectors=vectors, show_progress=False)
    assert raised.value.status_code == 400
    assert "'v4'" in str(raised.value)
    assert server.arrived().final == {}

    result = index.upsert(vectors=vectors, batch_size=3, show_progress=False)
    assert result.has_errors
    assert "'v4'" in result.errors[0].error_message
    assert server.arrived().ids() == {"v0", "v1", "v2"}  # the batch holding v4 was applied not at all


def test_a_wrong_or_missing_key_is_unauthorized(server: ServerHandle) -> None:
    server.script(api_key=API_KEY)
    wrong = open_index(server, api_key="not-the-key")
    try:
        with pytest.raises(UnauthorizedError):
            wrong.upsert(vectors=make_vectors(1), show_progress=False)
    finally:
        wrong.close()
    assert server.arrived().count("unauthenticated") == 1
    assert server.arrived().final == {}
    assert unkeyed_upsert_status(server) in (401, "UNAUTHENTICATED")

    right = open_index(server)
    try:
        right.upsert(vectors=make_vectors(1), show_progress=False)
    finally:
        right.close()
    assert server.arrived().ids() == {"v0"}


def unkeyed_upsert_status(server: ServerHandle) -> int | str:
    """Send an upsert with no api key at all (the SDK refuses to): the server's status."""
    if server.kind == "rest":
        with httpx.Client() as client:
            return client.post(f"{server.url}/vectors/upsert", content=b'{"vectors": []}').status_code
    with grpc.insecure_channel(server.host) as channel:
        try:
            channel.unary_unary("/VectorService/Upsert")(pb.UpsertRequest().SerializeToString(), timeout=10)
        except grpc.RpcError as exc:
            return exc.code().name
    return "OK"


def test_throttling_is_retried_until_everything_arrives(server: ServerHandle, index: Any) -> None:
    vectors = make_vectors(10, seed=6)
    server.script(throttle_first=2, retry_after_s=0.05)

    result = index.upsert(vectors=vectors, show_progress=False)

    assert result.upserted_count == 10
    arrived = server.arrived()
    assert [r.outcome for r in arrived.requests] == ["throttled", "throttled", "ok"]
    assert [r.ids for r in arrived.requests] == [[v["id"] for v in vectors]] * 3
    # the SDK waits out Retry-After / grpc-retry-pushback-ms before retrying
    starts = [r.started_s for r in arrived.requests]
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 0.045
    assert_arrived_exactly(arrived, vectors, "")


def test_a_dropped_request_is_retried(server: ServerHandle, index: Any) -> None:
    server.script(drop_first=1)

    index.upsert(vectors=make_vectors(3), show_progress=False)

    arrived = server.arrived()
    assert [r.outcome for r in arrived.requests] == ["dropped", "ok"]
    assert arrived.ids() == {"v0", "v1", "v2"}


def test_the_concurrency_quota_throttles_and_peak_is_counted(server: ServerHandle, index: Any) -> None:
    server.script(max_in_flight=2, delay_s=0.05, retry_after_s=0.02)

    index.upsert(vectors=make_vectors(12), batch_size=1, max_concurrency=6, show_progress=False)

    arrived = server.arrived()
    assert arrived.count("over_quota") >= 1
    assert arrived.peak_in_flight >= 3  # the over-quota arrivals were in flight too
    assert max_overlap(arrived.accepted) <= 2
    assert arrived.ids() == {i for r in arrived.accepted for i in r.ids}


def max_overlap(requests: list[Any]) -> int:
    """The most accepted requests being served at one instant, from their arrival and reply times."""
    events = sorted([(r.started_s, 1) for r in requests] + [(r.replied_s, -1) for r in requests])
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


def test_noop_mode_counts_without_decoding(server: ServerHandle, index: Any) -> None:
    server.script(noop=True)

    result = index.upsert(vectors=make_vectors(7), show_progress=False)

    (request,) = server.arrived().requests
    assert result.upserted_count == 7
    assert (request.vector_count, request.vectors, request.body) == (7, [], b"")
    assert request.size > 0


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_a_server_process_answers_through_its_control_api(kind: Literal["rest", "grpc"]) -> None:
    vectors = make_vectors(5, seed=7)
    with start_server_process(kind) as server:
        assert server.pid is not None and server.pid != os.getpid()
        assert server.script(FaultScript(throttle_first=1, retry_after_s=0.02)).throttle_first == 1
        idx = open_index(server)
        try:
            idx.upsert(vectors=vectors, namespace="p", show_progress=False)
        finally:
            idx.close()
        arrived = server.arrived()
        assert [r.outcome for r in arrived.requests] == ["throttled", "ok"]
        assert_arrived_exactly(arrived, vectors, "p")
        server.reset()
        assert server.arrived().requests == []
    with pytest.raises(ProcessLookupError):
        os.kill(server.pid, 0)  # stopped and reaped


def test_throttle_replies_carry_the_retry_hint(server: ServerHandle) -> None:
    server.script(throttle_first=1, retry_after_s=1.5)
    body = {"vectors": [{"id": "a", "values": [1.0, 2.0]}]}
    if server.kind == "rest":
        with httpx.Client() as client:
            reply = client.post(f"{server.url}/vectors/upsert", json=body, headers={"Api-Key": API_KEY})
        assert (reply.status_code, reply.headers["retry-after"]) == (429, "1.5")
        assert orjson.loads(reply.content)["code"] == 8
    else:
        request = pb.UpsertRequest(vectors=[pb.Vector(id="a", values=[1.0, 2.0])]).SerializeToString()
        with grpc.insecure_channel(server.host) as channel, pytest.raises(grpc.RpcError) as raised:
            channel.unary_unary("/VectorService/Upsert")(request, timeout=10)
        assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert dict(raised.value.trailing_metadata())["grpc-retry-pushback-ms"] == "1500"
    assert server.arrived().requests[0].ids == ["a"]  # a throttled request is recorded, decoded


@pytest.mark.parametrize("kind", ["rest", "grpc"])
@pytest.mark.parametrize(
    ("index_type", "expected"),
    [
        (rules.SPARSE, (0, "dotproduct", "sparse")),
        (rules.dense(4), (4, "cosine", "dense")),
        (None, (0, None, None)),
    ],
    ids=["sparse", "dense", "learning"],
)
def test_the_sdk_reads_the_index_type_from_the_stats(
    kind: Literal["rest", "grpc"], index_type: rules.IndexType | None, expected: tuple[Any, ...]
) -> None:
    """A declared index reports its ``vector_type`` and ``metric`` as Pinecone does (REST ``vectorType``,
    gRPC fields 5 and 6); a learning server has no type until its first row, so it reports none."""
    with start_server(kind, index=index_type) as handle:
        idx = open_index(handle)
        try:
            stats = idx.describe_index_stats()
        finally:
            idx.close()
    assert (stats.dimension or 0, stats.metric or None, stats.vector_type or None) == expected
