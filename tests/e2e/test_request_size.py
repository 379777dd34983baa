"""No request is refused for its size: a body over the database's limit is split before it is sent.

The client sizes requests by an estimate (JSON floats measured on a sample of rows); rows whose floats
write longer than the sampled ones make a body larger than estimated. The Pinecone-protocol server
refuses a request over 2 MB whole, as Pinecone does, with a message that names no row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tests.servers.fixtures import start_server
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

N, DIM = 1000, 512


def rows_the_sample_underestimates() -> tuple[pa.Table, np.ndarray]:
    """The rows the size estimate samples (every 62nd) are all 0.5 ("0.5": 3 bytes a float); the others
    random (about 11 bytes a float): the batch writes about 2.8 MB where the estimate says 0.9."""
    matrix = np.random.default_rng(3).standard_normal((N, DIM)).astype(np.float32)
    matrix[:: N // 16] = 0.5
    table = pa.table({"id": [f"r{i}" for i in range(N)], "values": pa.array(list(matrix))})
    return table, matrix


def test_a_body_over_the_limit_is_split_before_it_is_sent_not_refused() -> None:
    table, matrix = rows_the_sample_underestimates()
    with start_server("rest") as server:
        try:
            with connect(server.uri, api_key="k", batch_size=N, on_error="report") as client:
                report = client.write(table)
            arrived = server.arrived()
        finally:
            forget_shared()
    assert report.ok and report.written == N, report
    assert {r.outcome for r in arrived.requests} == {"ok"}  # none refused, none retried
    assert all(len(r.body) <= 2 << 20 for r in arrived.requests)
    assert report.requests == len(arrived.requests) < 8
    stored = arrived.final
    assert all(stored[("", f"r{i}")].values_f32 == matrix[i].tobytes() for i in range(0, N, 7))
