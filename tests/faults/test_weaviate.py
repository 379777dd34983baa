"""Faults of Weaviate's own: its rows go over gRPC, to another port than the schema's REST.

The matrix (test_matrix.py) hurts the whole server. Here the schema's port answers and only the rows'
port is silent or refused, which no check before the write can see (``check_target`` speaks REST);
and the server is killed while a write declares, over REST, a property a later chunk of its input
brings, which a write does in the middle of its rows. Every row is read back with weaviate-client
(tests/faults/conftest.py: ``read_weaviate``) and the account checked as in the matrix.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from tests.contract.suite import StoredRow
from tests.faults.conftest import Target
from tests.faults.test_matrix import assert_failed_at_start, write
from tests.faults.tools import (
    KillMidWrite,
    assert_account,
    expected_rows,
    rows,
    run_write,
)
from tests.net import closed_port, silent_listener
from vectordb.connector import connect

pytestmark = pytest.mark.timeout(120)


def test_the_rows_port_never_answers(target_weaviate: Target, fault_log: Any) -> None:
    """The schema's REST port answers (the collection is made), the rows' gRPC port accepts and stays
    silent: the first batch spends its retries there and the write stops, naming that port, instead
    of every later batch waiting out ``timeout_s`` in turn; nothing is claimed, nothing stored."""
    target = target_weaviate
    timeout_s, max_retries = 0.5, 2
    with silent_listener() as port:
        outcome = write(target, grpc_port=port, timeout_s=timeout_s, max_retries=max_retries)
    text = assert_failed_at_start(outcome, f"127.0.0.1:{port}")
    assert_account(expected_rows(rows(3000, seed=7)), outcome, target.read_back())
    fault_log(elapsed_s=outcome.elapsed_s, error=text.splitlines()[0][-120:])
    bound = (max_retries + 1) * (timeout_s + 1.0) + 1.6 + 2.0
    assert outcome.elapsed_s < bound, f"{outcome.elapsed_s:.1f} s, bound {bound:.1f} s: {text}"


def test_the_rows_port_refuses(target_weaviate: Target, fault_log: Any) -> None:
    """As above, with nothing listening on the gRPC port: a clear error naming it, soon."""
    target = target_weaviate
    port = closed_port()
    outcome = write(target, grpc_port=port, timeout_s=0.5, max_retries=2)
    text = assert_failed_at_start(outcome, f"127.0.0.1:{port}")
    assert_account(expected_rows(rows(3000, seed=7)), outcome, target.read_back())
    fault_log(elapsed_s=outcome.elapsed_s, error=text.splitlines()[0][-120:])
    assert outcome.elapsed_s < 5.0, text


FIRST = 600  # rows of the first chunk, all stored before the kill


def two_chunks(fault: KillMidWrite) -> tuple[Iterator[pa.Table], dict[str, StoredRow]]:
    """The input in two chunks, the second bringing the property ``late``, and only once the server was
    killed; and what each row should be stored as."""
    first = rows(FIRST, seed=5)
    second = rows(FIRST, seed=6).set_column(0, "id", pa.array([f"s{i}" for i in range(FIRST)]))
    late = [f"late {i}" for i in range(FIRST)]
    second = second.append_column("late", pa.array(late))
    sent = expected_rows(first)
    for i, (row_id, row) in enumerate(expected_rows(second).items()):
        sent[row_id] = StoredRow(row.vector, {**row.metadata, "late": late[i]})

    def chunks() -> Iterator[pa.Table]:
        yield first
        while "killed" not in fault.timeline and fault.error is None:
            time.sleep(0.01)
        yield second

    return chunks(), sent


OPTIONS = {"batch_size": 25, "max_concurrency": 4, "on_error": "report", "timeout_s": 5}


def test_killed_while_a_later_chunk_declares_a_property(target_weaviate: Target, fault_log: Any) -> None:
    """The input comes in two chunks (as a Spark task's Arrow batches or a long-lived client's calls do);
    the second brings a property the collection lacks, which the write declares over REST before its
    rows go. The server is killed once the first chunk is stored and started again half a second later,
    so the declaration meets a server that is restarting: the default retries ride it out as they do
    for the rows, and every row of both chunks is stored once."""
    target = target_weaviate
    fault = KillMidWrite(
        count=target.count, at_rows=FIRST, kill=target.kill, restart=target.restart, pause_s=0.5
    )
    data, sent = two_chunks(fault)
    with fault, connect(target.uri, **{**OPTIONS, **target.options}) as client:
        outcome = run_write(lambda: client.upsert(data))
    fault.wait()
    numbers = assert_account(sent, outcome, target.read_back())
    assert outcome.report is not None, outcome.describe()
    fault_log(
        **numbers,
        down_s=fault.timeline["restarted"] - fault.timeline["killed"],
        after_restart_s=outcome.ended - fault.timeline["restarted"],
    )
    assert outcome.report.ok, outcome.describe()


def test_down_for_good_while_a_later_chunk_declares_a_property(
    target_weaviate: Target, fault_log: Any
) -> None:
    """As above, but the server stays down past the retries: the second chunk's rows fail in the report,
    retryable, naming the server, and the first chunk's are counted written; the write does not raise
    over rows it stored (its caller could not tell which)."""
    target, restart = target_weaviate, target_weaviate.restart
    assert restart is not None
    fault = KillMidWrite(count=target.count, at_rows=FIRST, kill=target.kill)
    data, sent = two_chunks(fault)
    try:
        with fault, connect(target.uri, **{**OPTIONS, **target.options, "max_retries": 1}) as client:
            outcome = run_write(lambda: client.upsert(data))
        fault.wait()
    finally:
        restart()  # for the next test
    numbers = assert_account(sent, outcome, target.read_back())
    report = outcome.report
    assert report is not None, outcome.describe()
    fault_log(**numbers, elapsed_s=outcome.elapsed_s, error=report.failures[0].error[-100:])
    # the kill comes once the server holds the first chunk, which can be before the replies of its last
    # batches reach the client: those rows are then failed (retryable), though stored, never lost
    in_flight = 4 * 25  # OPTIONS: max_concurrency requests of batch_size rows
    assert report.written + report.failed == 2 * FIRST, report
    assert FIRST - in_flight <= report.written <= FIRST, report
    second_chunk = {f"s{i}" for i in range(FIRST)}
    where = target.uri.split("://", 1)[1].split("/", 1)[0]  # the schema's REST host and port
    for failure in report.failures:
        assert failure.retryable, failure
        if set(failure.ids) & second_chunk:  # the declaration of the second chunk's property: over REST
            assert failure.error_type == "ConnectError" and where in failure.error, failure
