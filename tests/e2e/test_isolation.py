"""Rows a server refuses with one message that names no row: exactly those fail, over real sockets.

The isolation case, at scale: 10,000 rows, 100 a request, about one bad id in 100, the server's
refusal the same whatever the row (as Pinecone words some of its refusals).
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import connect
from vectordb.connector.errors import SystemicRejection
from vectordb.connector.transports.base import forget_shared

DIM = 16


@pytest.fixture(params=["grpc", "rest"])
def server(request: pytest.FixtureRequest):
    with start_server(request.param) as handle:
        yield handle
        forget_shared()


def bad_ids(n: int, seed: int) -> set[str]:
    rng = random.Random(seed)
    return {f"v{i}" for i in range(n) if rng.random() < 0.01} | {"v0", f"v{n - 1}"}  # first and last too


def test_exactly_the_refused_rows_fail_and_every_other_row_is_written(server: ServerHandle) -> None:
    n = 10_000
    bad = bad_ids(n, seed=5)
    server.script(reject_ids=frozenset(bad), reject_named=False)
    matrix = np.random.default_rng(1).standard_normal((n, DIM)).astype(np.float32)
    table = pa.table({"id": [f"v{i}" for i in range(n)], "values": list(matrix)})
    with connect(server.uri, batch_size=100, on_error="report") as client:
        report = client.write(table)
    arrived = server.arrived()
    assert set(report.failed_ids) == bad and report.failed == len(bad)
    assert {f.error_type for f in report.failures} == {"Rejected"}
    assert report.written == n - len(bad)
    assert arrived.ids() == {f"v{i}" for i in range(n)} - bad
    assert all(
        arrived.vector(f"v{i}").values_f32 == matrix[i].tobytes()
        for i in range(0, n, 97)
        if f"v{i}" not in bad
    )
    # about 1.5 log2(100) + 1 requests per bad row (one per batch here), not a storm
    assert report.requests <= n / 100 + 13 * len(bad)


@pytest.mark.parametrize("concurrency", [1, 4, 16, 32])
def test_a_server_that_refuses_faster_than_it_accepts_cannot_stop_a_write_with_good_rows(
    server: ServerHandle, concurrency: int
) -> None:
    """Three rows in four bad, one row a request, and every accept 100 ms slower than a refusal: with
    many in flight, the first 32 answers are all refusals alike, but the accepts in flight behind
    them must be waited for, so the write goes on to the end instead of stopping as systemic."""
    n = 120
    bad = {f"v{i}" for i in range(n) if i % 4}
    server.script(reject_ids=frozenset(bad), reject_named=False, accept_delay_s=0.1)
    table = pa.table(
        {"id": [f"v{i}" for i in range(n)], "values": [[float(i) + 0.5] * DIM for i in range(n)]}
    )
    with connect(server.uri, batch_size=1, max_concurrency=concurrency, on_error="report") as client:
        report = client.write(table)
    assert set(report.failed_ids) == bad
    assert report.written == n - len(bad)
    assert server.arrived().ids() == {f"v{i}" for i in range(n)} - bad


@pytest.mark.parametrize("concurrency", [1, 32])
def test_a_write_every_row_of_which_is_refused_still_stops_as_systemic(
    server: ServerHandle, concurrency: int
) -> None:
    n = 2000
    server.script(reject_ids=frozenset(f"v{i}" for i in range(n)), reject_named=False)
    table = pa.table({"id": [f"v{i}" for i in range(n)], "values": [[1.0] * DIM] * n})
    with (
        connect(server.uri, batch_size=1, max_concurrency=concurrency, on_error="report") as client,
        pytest.raises(SystemicRejection, match="accepted none") as info,
    ):
        client.write(table)
    assert info.value.report is not None and info.value.report.written == 0
    assert len(server.arrived().requests) < 32 + 2 * concurrency  # stopped, not sent row by row to the end
