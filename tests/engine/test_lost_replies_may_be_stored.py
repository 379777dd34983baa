"""A request the server applied after the client gave up on its reply: its rows are stored, and were
reported failed as plain ``DeadlineExceeded``, in the report and the dead letters, with nothing saying
they may be stored. The reason now says so (a delete's rows: may be deleted); a connection never made
says nothing of the kind."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from tests.servers.fixtures import start_server
from vectordb.connector import connect
from vectordb.connector.engine import lost_after_sending
from vectordb.connector.errors import ConnectError, ConnectTimeout, DeadlineExceeded, TransportError

MAY = "the database may have applied the request before its reply was lost: the rows may be stored"


def _table(n: int) -> pa.Table:
    values = pa.array([[1.0, 2.0, 3.0, float(i + 1)] for i in range(n)], pa.list_(pa.float32()))
    return pa.table({"id": [f"r{i}" for i in range(n)], "values": values})


@pytest.mark.parametrize("kind", ["grpc", "rest"])
def test_rows_whose_reply_timed_out_say_they_may_be_stored(kind: str) -> None:
    with start_server(kind) as server:
        server.script(dimension=4)
        options = {
            "batch_size": 5,
            "max_concurrency": 1,
            "on_error": "report",
            "timeout_s": 0.5,
            "max_retries": 1,
        }
        with connect(server.uri, api_key="k", **options) as client:
            client.upsert(
                pa.table({"id": ["warm"], "values": pa.array([[1, 2, 3, 4]], pa.list_(pa.float32()))})
            )
            server.script(dimension=4, delay_s=0.8)  # each request applied 0.8 s after it arrives
            table = _table(5)
            report = client.upsert(table)
            time.sleep(1.0)  # the server applies what the client gave up on
            letters = client.dead_letters(table, report)
        stored = {i for (_, i) in server.arrived().final}
    assert report.failed == 5 and set(report.failed_ids) <= stored  # stored, though reported failed
    (failure,) = report.failures
    assert failure.error_type == "DeadlineExceeded" and failure.error.endswith(f"({MAY})")
    assert all(error.endswith(f"({MAY})") for error in letters["error"].to_pylist())


def test_only_a_reply_lost_after_sending_may_have_landed() -> None:
    assert lost_after_sending(DeadlineExceeded("x: no reply within 1 s"))
    assert lost_after_sending(TransportError("x: connection reset mid-reply"))
    assert not lost_after_sending(ConnectError("x: cannot connect: refused"))
    assert not lost_after_sending(ConnectTimeout("x: cannot connect: timed out"))
