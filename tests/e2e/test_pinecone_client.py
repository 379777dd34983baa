"""The client against the project's Pinecone-protocol servers (REST and gRPC), over real sockets."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pytest

from tests.net import closed_port
from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import AuthError, Client, ConfigError, ConnectError, WriteFailed, connect
from vectordb.connector.client import resolve_options
from vectordb.connector.transports.base import forget_shared

DIM = 16


@pytest.fixture(params=["grpc", "rest"])
def server(request: pytest.FixtureRequest):
    with start_server(request.param) as handle:
        yield handle
        forget_shared()  # close the client's channel before the server stops


def table(n: int, *, seed: int = 0, start: int = 0, sparse: bool = False) -> tuple[pa.Table, np.ndarray]:
    """Rows with metadata ``title`` and ``year``, and with ``sparse`` a ``sparse`` struct column (written
    with option ``sparse_column="sparse"``: as metadata it would be a nested object, which Pinecone refuses)."""
    matrix = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    offsets = pa.array(np.arange(0, (n + 1) * DIM, DIM, dtype=np.int32))
    columns = {
        "id": [f"doc-{start + i}" for i in range(n)],
        "values": pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1))),
        "title": [f"title {i}" for i in range(n)],
        "year": [2000 + i % 20 for i in range(n)],
    }
    if sparse:
        rows = [{"indices": [i, i + 10], "values": [0.5, float(i)]} if i % 3 == 0 else None for i in range(n)]
        columns["sparse"] = pa.array(
            rows, type=pa.struct([("indices", pa.list_(pa.int64())), ("values", pa.list_(pa.float32()))])
        )
    return pa.table(columns), matrix


def test_everything_arrives_exactly(server: ServerHandle) -> None:
    data, matrix = table(250, sparse=True)
    with connect(
        server.uri, api_key="k-123", namespace="docs", sparse_column="sparse", batch_size=40
    ) as client:
        report = client.upsert(data)
    assert report.ok and report.written == 250 and report.requests == 7
    arrived = server.arrived()
    assert arrived.ids("docs") == {f"doc-{i}" for i in range(250)}
    assert {r.api_key for r in arrived.requests} == {"k-123"}
    for i in range(250):
        v = arrived.vector(f"doc-{i}", "docs")
        assert v.values.tobytes() == matrix[i].tobytes()
        assert v.metadata == {"title": f"title {i}", "year": 2000 + i % 20}
        if i % 3 == 0:
            assert v.sparse_indices == [i, i + 10]
            assert np.frombuffer(v.sparse_values_f32, "<f4").tolist() == [0.5, float(i)]
        else:
            assert v.sparse_indices is None
    assert report.bytes_sent == sum(r.size for r in arrived.requests)


def test_clear_deletes_one_namespace_or_every_namespace(server: ServerHandle) -> None:
    for namespace in ("a", "b", ""):
        with connect(server.uri, api_key="k", namespace=namespace or None) as client:
            assert client.upsert(table(5, seed=1)[0]).ok
    with connect(server.uri, api_key="k") as client:
        assert client.clear("a") == f"every vector in namespace 'a' of {client.backend.describe()}"
        assert client.clear("a")  # clearing an empty namespace is fine (the server answers 404)
        assert server.arrived().namespaces.keys() == {"b", ""}
        assert "2 namespace(s)" in client.clear()
    assert server.arrived().namespaces == {}


def test_clear_with_a_wrong_key_fails_before_deleting_anything(server: ServerHandle) -> None:
    with connect(server.uri, api_key="k", namespace="a") as client:
        assert client.upsert(table(3)[0]).ok
    server.script(api_key="right")
    with connect(server.uri, api_key="wrong") as client, pytest.raises(AuthError):
        client.clear()
    assert server.arrived().ids("a") == {"doc-0", "doc-1", "doc-2"}


def test_api_key_env_is_read_when_the_client_connects(
    server: ServerHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script(api_key="right")
    monkeypatch.delenv("VDB_TEST_KEY", raising=False)
    unset = "option api_key_env: environment variable 'VDB_TEST_KEY'"
    with pytest.raises(ConfigError, match=unset):
        connect(server.uri, api_key_env="VDB_TEST_KEY")  # connect() reads it at once
    # a Client made from parsed options (a Beam worker's) reads it when it connects
    with Client(resolve_options({"uri": server.uri, "api_key_env": "VDB_TEST_KEY"})) as client:
        with pytest.raises(ConfigError, match=unset):
            client.upsert(table(3)[0])
        monkeypatch.setenv("VDB_TEST_KEY", "right")
        assert client.upsert(table(3)[0]).ok
    assert server.arrived().ids() == {"doc-0", "doc-1", "doc-2"}


def test_throttling_with_retry_hints_ends_with_everything_written(server: ServerHandle) -> None:
    server.script(throttle_first=5, retry_after_s=0.05)
    data, _ = table(200)
    with connect(server.uri, batch_size=20, max_concurrency=4) as client:
        report = client.upsert(data)
        limit_after = client.engine.limit.limit
    assert report.ok and report.written == 200
    assert report.throttled == 5 and report.retries == 5
    assert server.arrived().count("throttled") == 5
    assert len(server.arrived().ids()) == 200
    assert limit_after <= 4


def test_concurrency_quota_is_found_by_aimd(server: ServerHandle) -> None:
    server.script(max_in_flight=2, delay_s=0.02)
    data, _ = table(400)
    with connect(server.uri, batch_size=10, max_concurrency=16, max_retries=20) as client:
        report = client.upsert(data)
    assert report.ok and len(server.arrived().ids()) == 400
    assert report.throttled > 0
    # after the first halvings most requests fit the quota: throttled replies stay a minority
    assert report.throttled < report.requests / 2


def test_unavailable_and_dropped_connections_are_retried_without_duplicates(server: ServerHandle) -> None:
    server.script(fail_first=2, drop_first=2)
    data, _ = table(100)
    with connect(server.uri, batch_size=10) as client:
        report = client.upsert(data)
    assert report.ok and report.retries == 4
    arrived = server.arrived()
    assert len(arrived.ids()) == 100
    assert sum(r.vector_count for r in arrived.accepted) == 100


def test_slow_replies_past_the_timeout_fail_as_retryable(server: ServerHandle) -> None:
    server.script(delay_s=0.5)
    data, _ = table(10)
    with connect(server.uri, batch_size=10, timeout_s=0.1, max_retries=1, on_error="report") as client:
        report = client.upsert(data)
    assert report.failed == 10
    (failure,) = report.failures
    assert failure.error_type == "DeadlineExceeded" and failure.retryable and failure.attempts == 2


def test_rejected_ids_fail_alone_with_the_servers_reason(server: ServerHandle) -> None:
    bad = {"doc-7", "doc-55", "doc-56"}
    server.script(reject_ids=frozenset(bad))
    data, _ = table(100)
    with connect(server.uri, batch_size=25, on_error="report") as client:
        report = client.upsert(data)
    assert report.written == 97 and sorted(report.failed_ids) == sorted(bad)
    for failure in report.failures:
        assert failure.ids[0] in failure.error and not failure.retryable
    assert server.arrived().ids() == {f"doc-{i}" for i in range(100)} - bad


def test_wrong_api_key_fails_before_any_row_is_sent(server: ServerHandle) -> None:
    server.script(api_key="right")
    data, _ = table(500)
    with connect(server.uri, api_key="wrong", batch_size=10) as client, pytest.raises(AuthError) as info:
        client.upsert(data)
    assert "wrong" not in str(info.value)
    assert server.arrived().requests == []  # the key was checked by describe_index_stats first


def test_wrong_api_key_stops_at_once_without_the_check(server: ServerHandle) -> None:
    server.script(api_key="right")
    data, _ = table(500)
    client = connect(server.uri, api_key="wrong", batch_size=10, max_concurrency=1, verify=False)
    with client, pytest.raises(AuthError):
        client.upsert(data)
    assert len(server.arrived().requests) == 1  # no retry storm: the first 401 stops the write


def test_rows_of_another_dimension_than_the_index_fail_before_any_is_sent(server: ServerHandle) -> None:
    server.script(dimension=DIM * 2)
    data, _ = table(50)
    with connect(server.uri) as client, pytest.raises(WriteFailed) as info:
        client.upsert(data)  # the index's dimension wins over the rows': each row fails, with the reason
    assert info.value.report.failed == 50
    assert f"50× Invalid: vector has {DIM} dimensions; expected {DIM * 2}" in str(info.value)
    assert server.arrived().requests == []
    with (
        connect(server.uri, dimension=DIM) as client,  # a dimension the user states must match the index
        pytest.raises(ConfigError, match=f"index .* has dimension {DIM * 2}, the data has {DIM}"),
    ):
        client.upsert(data)


def test_unreachable_host_fails_fast_with_a_clear_error() -> None:
    port = closed_port()  # refused, and never a port an earlier server answered on (waited as a restart)
    for scheme in ("pinecone+grpc", "pinecone"):
        started = time.monotonic()
        with (
            connect(f"{scheme}://127.0.0.1:{port}", max_retries=2) as client,
            pytest.raises(ConnectError) as info,
        ):
            client.upsert([{"id": "a", "values": [1.0, 2.0]}])
        assert "cannot connect" in str(info.value)
        assert time.monotonic() - started < 10
