"""A write stopped part way by a fatal error keeps its account: the error carries the report, whose
written rows are exactly those the server holds."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import AuthError, connect
from vectordb.connector.transports.base import forget_shared


@pytest.fixture(params=["grpc", "rest"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(request.param) as handle:
        yield handle
        forget_shared()


def test_a_key_revoked_mid_write_stops_it_with_the_report_of_what_was_written(server: ServerHandle) -> None:
    server.script(api_key="k-1")

    def tables() -> Iterator[pa.Table]:
        for start in range(0, 3000, 300):
            if start == 1800:
                server.script(api_key="k-2")  # the key is revoked while the write runs
            ids = [f"r{i}" for i in range(start, start + 300)]
            values = np.repeat(np.arange(start, start + 300, dtype=np.float32), 8).reshape(300, 8)
            yield pa.table({"id": ids, "values": list(values)})

    with (
        connect(server.uri, api_key="k-1", batch_size=100, max_concurrency=2) as client,
        pytest.raises(AuthError) as info,
    ):
        client.upsert(tables())
    report = info.value.report
    assert report is not None, "the error lost the write's account"
    stored = server.arrived().ids()
    assert 0 < report.written == len(stored) < 3000, (report, len(stored))
    assert "k-1" not in str(info.value) and "k-2" not in repr(report)
