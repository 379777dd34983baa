"""The client against a sparse index and a dense one, as the test servers stand for them from their start.

A Pinecone index's type is fixed when it is created: a dense index reports its dimension from the start
(and refuses rows of another length, or with no dense vector); a sparse one reports none and refuses dense
values, and ``describe_index_stats`` reports its ``vectorType``. Executors check a sparse index themselves
(no ``verify=false`` from the driver) and write what one process writes. Option ``dimension`` states dense
vectors, which a sparse index takes none of: the driver refuses it, naming the option, before any row.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers import pinecone_rules as rules
from tests.servers.pinecone_grpc import PineconeGrpcServer
from tests.servers.pinecone_rest import PineconeRestServer
from vectordb.connector import connect
from vectordb.connector.errors import ConfigError
from vectordb.connector.transports.base import forget_shared

SPARSE_ROWS = [{"id": f"s{i}", "sparse": {"indices": [i, i + 7], "values": [0.5, 1.5]}} for i in range(5)]


def serve(kind: str, index: rules.IndexType) -> Any:
    return PineconeGrpcServer(0, index=index) if kind == "grpc" else PineconeRestServer(0, index=index)


def uri(kind: str, server: Any) -> str:
    return f"pinecone{'+grpc' if kind == 'grpc' else ''}://127.0.0.1:{server.port}"


@pytest.fixture(params=["grpc", "rest"])
def sparse_index(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    with serve(request.param, rules.SPARSE) as server:
        yield uri(request.param, server), server
        forget_shared()


@pytest.fixture(params=["grpc", "rest"])
def dense_index(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    with serve(request.param, rules.dense(4)) as server:
        yield uri(request.param, server), server
        forget_shared()


def test_sparse_rows_go_into_a_sparse_index_from_a_driver_executors_as_from_one_process(
    sparse_index: Any,
) -> None:
    target, server = sparse_index
    with connect(target, sparse_column="sparse", on_error="report") as driver:
        resolved = driver.prepare_target().resolved
    assert resolved.get("verify") is not False  # a sparse index: each executor checks it too
    with connect(target, sparse_column="sparse", on_error="report", **resolved) as executor:
        report = executor.write(SPARSE_ROWS)
    assert (report.written, report.failed) == (5, 0), report
    assert sorted(server.state.snapshot().namespaces[""]) == [f"s{i}" for i in range(5)]


def test_option_dimension_for_a_sparse_index_is_refused_before_any_row(sparse_index: Any) -> None:
    """Option dimension states dense vectors, which a sparse index (``vectorType`` "sparse") takes none
    of: the driver refuses the write, naming the option, instead of sending rows."""
    target, server = sparse_index
    with (
        connect(target, sparse_column="sparse", on_error="report", dimension=4) as driver,
        pytest.raises(ConfigError, match=r"option dimension: .* is a sparse index"),
    ):
        driver.prepare_target()
    assert server.state.snapshot().namespaces == {}


def test_a_sparse_index_refuses_dense_values(sparse_index: Any) -> None:
    """The client checks the index once it has learnt the rows' dimension and refuses the write; unchecked
    (``verify=false``), the rows reach the index, which refuses them as Pinecone does."""
    target, server = sparse_index
    dense_row = {"id": "d", "values": [1.0, 2.0, 3.0, 4.0]}
    with (
        connect(target, on_error="report") as client,
        pytest.raises(ConfigError, match=r"^index .* is a sparse index .* 4-dimensional"),
    ):
        client.write([dense_row])  # no option dimension: the message does not name one
    assert server.state.snapshot().namespaces == {}
    with connect(target, on_error="report", verify=False) as client:
        report = client.write([dense_row])
    assert (report.written, report.failed) == (0, 1)
    assert "Sparse index does not support dense values" in report.failures[0].error


def test_a_fresh_dense_index_reports_its_dimension_and_the_driver_hands_it_on(dense_index: Any) -> None:
    target, _server = dense_index
    with connect(target, on_error="report") as driver:
        prepared = driver.prepare_target()
    assert prepared.resolved == {"verify": False, "dimension": 4}
    with connect(target, on_error="report", sparse_column="sparse", **prepared.resolved) as executor:
        report = executor.write([{"id": "d", "values": [1.0, 2.0, 3.0, 4.0]}, *SPARSE_ROWS[:1]])
    assert (report.written, report.failed, report.failed_ids) == (1, 1, ["s0"])
    assert "no dense vector: the index is dense (dimension 4)" in report.failures[0].error
