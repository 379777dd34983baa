"""Rows Pinecone refuses fail alone before sending, each with its reason: a row with a sparse vector and
no dense one in a dense index, an all-zero dense vector, and a sparse vector of more than 1,000 values.

Pinecone refuses the whole request for any of them, so a row sent would cost an isolation walk (and,
with ``on_error=fail``, the write); here the good rows go out in one accepted request and the test
server, which refuses each as Pinecone does (tests/e2e/test_pinecone_server_limits.py), never sees a
bad one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import connect
from vectordb.connector.report import WriteReport
from vectordb.connector.transports.base import forget_shared

DIM = 8
SPARSE = pa.struct([("indices", pa.list_(pa.int64())), ("values", pa.list_(pa.float32()))])


@pytest.fixture(params=["grpc", "rest"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(request.param) as handle:
        yield handle
        forget_shared()  # close the client's channel before the server stops


def write(server: ServerHandle, rows: list[dict[str, Any]], **options: Any) -> WriteReport:
    """``rows`` (id, values, sparse) as one Arrow table, through the client with ``on_error=report``."""
    data = pa.table(
        {
            "id": [r["id"] for r in rows],
            "values": pa.array([r.get("values") for r in rows], type=pa.list_(pa.float32())),
            "sparse": pa.array([r.get("sparse") for r in rows], type=SPARSE),
        }
    )
    with connect(server.uri, api_key="k", on_error="report", sparse_column="sparse", **options) as client:
        return client.upsert(data)


def failed(report: WriteReport) -> dict[str, str]:
    return {row_id: f.error for f in report.failures for row_id in (f.ids or ()) if row_id is not None}


def sent_whole(server: ServerHandle) -> None:
    """Every request was accepted: nothing was refused, so no isolation walk ran."""
    assert {r.outcome for r in server.arrived().requests} == {"ok"}


GOOD = [
    {"id": "dense", "values": [0.5] * DIM},
    {"id": "both", "values": [0.5] * DIM, "sparse": {"indices": [1, 4], "values": [0.5, 0.25]}},
]
SPARSE_ONLY = {"id": "sparse-only", "sparse": {"indices": [2, 3], "values": [0.5, 0.25]}}


@pytest.mark.parametrize("verify", [True, False], ids=["verified", "a-task-told-the-dimension"])
def test_a_sparse_only_row_into_a_dense_index_fails_alone_before_sending(
    server: ServerHandle, verify: bool
) -> None:
    # a Spark task skips verify and is told the index's dimension by the driver: a sparse index has none
    server.script(dimension=DIM)
    options = {} if verify else {"verify": False, "dimension": DIM}
    report = write(server, [GOOD[0], SPARSE_ONLY, GOOD[1]], **options)
    assert (report.written, report.failed) == (2, 1), report
    assert failed(report) == {
        "sparse-only": f"no dense vector: the index is dense (dimension {DIM}); Pinecone stores a sparse "
        "vector only beside a dense one (sparse-only rows need a sparse index)"
    }
    sent_whole(server)
    assert server.arrived().ids() == {"dense", "both"}


def test_sparse_only_rows_go_to_an_index_that_reports_no_dimension(server: ServerHandle) -> None:
    # Pinecone's describe_index_stats gives no dimension for a sparse index ("Not specified if sparse
    # index"); the test server's index does the same until a dense vector fixes one
    report = write(server, [SPARSE_ONLY, {**SPARSE_ONLY, "id": "sparse-2"}])
    assert report.ok and report.written == 2, report
    assert server.arrived().ids() == {"sparse-only", "sparse-2"}


def test_an_all_zero_dense_vector_fails_alone_before_sending(server: ServerHandle) -> None:
    server.script(dimension=DIM)
    rows = [
        GOOD[0],
        {"id": "zeros", "values": [0.0] * DIM},
        {"id": "negative-zeros", "values": [-0.0] * DIM},
        {"id": "zeros-but-the-last", "values": [0.0] * (DIM - 1) + [1e-30]},
        {"id": "zeros-with-sparse", "values": [0.0] * DIM, "sparse": {"indices": [1], "values": [1.0]}},
    ]
    report = write(server, rows)
    reason = "vector is all zeros: Pinecone needs at least one non-zero value in a dense vector"
    assert failed(report) == {"zeros": reason, "negative-zeros": reason, "zeros-with-sparse": reason}
    assert report.written == 2
    sent_whole(server)
    assert server.arrived().ids() == {"dense", "zeros-but-the-last"}


def test_a_sparse_vector_of_over_1000_values_fails_alone_before_sending(server: ServerHandle) -> None:
    server.script(dimension=DIM)

    def sparse(n: int) -> dict[str, list[Any]]:
        return {"indices": list(range(0, 3 * n, 3)), "values": [0.5] * n}

    rows = [
        {"id": "1000", "values": [0.5] * DIM, "sparse": sparse(1000)},
        {"id": "1001", "values": [0.5] * DIM, "sparse": sparse(1001)},
    ]
    report = write(server, rows)
    assert failed(report) == {"1001": "sparse vector has 1001 non-zero values; Pinecone takes at most 1000"}
    sent_whole(server)
    assert server.arrived().ids() == {"1000"}
    server.reset()  # an index that reports no dimension: a sparse one, with the same limit
    report = write(
        server, [{"id": "sparse-1000", "sparse": sparse(1000)}, {"id": "5000", "sparse": sparse(5000)}]
    )
    assert failed(report) == {"5000": "sparse vector has 5000 non-zero values; Pinecone takes at most 1000"}
    sent_whole(server)
    assert server.arrived().ids() == {"sparse-1000"}


@pytest.mark.parametrize("leading_zeros", [3, 100], ids=["few-start-with-zero", "all-start-with-zero"])
def test_zero_rows_finds_exactly_the_all_zero_rows(leading_zeros: int) -> None:
    # a few rows starting with a zero are read gathered, many in place: both find the same rows
    from vectordb.connector.backends.pinecone import zero_rows

    matrix = np.random.default_rng(0).uniform(0.5, 1.0, (100, 1536)).astype(np.float32)
    matrix[:leading_zeros, 0] = 0.0
    matrix[[1, 2], :] = 0.0
    matrix[2, 7] = -0.0
    matrix[0, -1] = 1e-30  # starts with a zero, not all zeros
    assert zero_rows(matrix) == [1, 2]
    assert zero_rows(np.zeros((0, 4), np.float32)) == []
    assert zero_rows(matrix[3:]) == []
