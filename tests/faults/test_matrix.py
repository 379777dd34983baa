"""Faults on every database, with read-back: database × fault, each a real write of a few thousand rows.

Every case writes ``ROWS`` rows in batches of ``BATCH`` with several requests in flight through
``connect(...).upsert``, hurts the server at the worst moment, then reads every row back with the
database's own client and checks the account (tests/faults/tools.py: ``assert_account``): each row is
stored exactly once with its exact vector and metadata or is in the report as failed with its reason,
none lost silently, none twice.

- killed mid-write: once a quarter of the rows are stored, SIGKILL, a pause, then the server starts
  again on the same port and data (the embedded default: the connector must start it itself);
- frozen mid-write: the server's processes stopped (SIGSTOP) for longer than ``timeout_s``, so replies
  come late; requests time out, are retried, and every row lands exactly once (upserts by id);
- never answers: a listener that accepts and stays silent; the write ends within a bound derived from
  ``timeout_s`` and ``max_retries``, with an error naming the host and no secret;
- refused at start: nothing listens; a clear error naming the host, no row claimed written (the
  embedded default: its server died before the write, and the connector starts a new one).

The write is paced (``max_rows_per_second``) so that it lasts a few seconds whatever the database's
speed, and the fault thread strikes while it is under way.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.faults.conftest import DATABASES, Target
from tests.faults.tools import (
    FreezeMidWrite,
    KillMidWrite,
    Outcome,
    assert_account,
    expected_rows,
    rows,
    run_write,
)
from tests.net import closed_port, silent_listener
from vectordb.connector import connect
from vectordb.connector.backends.milvus import lite as embedded
from vectordb.connector.errors import StoppedAnswering
from vectordb.connector.report import STOPPED

ROWS = 3000
BATCH = 25
RATE = 1500  # rows per second: a write lasts at least two seconds
SECRET = "sk-FAULTS-7c1d2e9f0a"
BASE = {"batch_size": BATCH, "max_concurrency": 4, "on_error": "report", "max_rows_per_second": RATE}

pytestmark = pytest.mark.timeout(120)


def write(target: Target, uri: str | None = None, **options: Any) -> Outcome:
    table = rows(ROWS, seed=7)

    def upsert() -> Any:
        with connect(uri or target.uri, **{**BASE, **target.options, **options}) as client:
            return client.upsert(table)

    return run_write(upsert)


def sent() -> dict[str, Any]:
    return expected_rows(rows(ROWS, seed=7))


@pytest.mark.parametrize("db", DATABASES)
def test_killed_and_restarted_mid_write(db: str, target: Target, fault_log: Any) -> None:
    fault = KillMidWrite(
        count=target.count, at_rows=ROWS // 4, kill=target.kill, restart=target.restart, pause_s=0.5
    )
    with fault:
        outcome = write(target, timeout_s=5)  # the default retries: a restart is ridden out with them
    fault.wait()
    numbers = assert_account(sent(), outcome, target.read_back())
    assert outcome.report is not None, outcome.describe()
    assert outcome.report.ok, outcome.describe()  # every row written: none failed for the restart
    restarted = fault.timeline.get("restarted", fault.timeline["killed"])
    recovered = fault.timeline.get("recovered")
    fault_log(
        struck_at=fault.struck_at_rows,
        **numbers,
        retries=outcome.report.retries,
        down_s=restarted - fault.timeline["killed"],  # killed until it answered ready again
        recovered_s=recovered - restarted if recovered else None,  # ready until the next row landed
        after_restart_s=outcome.ended - restarted,
        elapsed_s=outcome.elapsed_s,
    )
    # the write went on after the restart: it stored rows the server did not hold when it was killed
    assert numbers["stored"] > (fault.struck_at_rows or 0), outcome.describe()


@pytest.mark.parametrize("db", DATABASES)
def test_frozen_mid_write_replies_later_than_timeout(db: str, target: Target, fault_log: Any) -> None:
    timeout_s, frozen_s = 0.5, 2.5  # longer than timeout_s, and than PostgreSQL's timeout_s + 1 s
    fault = FreezeMidWrite(count=target.count, at_rows=ROWS // 4, pids=target.pids, frozen_s=frozen_s)
    with fault:
        outcome = write(target, max_retries=8, timeout_s=timeout_s)
    fault.wait()
    numbers = assert_account(sent(), outcome, target.read_back())
    report = outcome.report
    assert report is not None, outcome.describe()
    fault_log(
        struck_at=fault.struck_at_rows,
        **numbers,
        retries=report.retries,
        after_thaw_s=outcome.ended - fault.timeline["thawed"],
        elapsed_s=outcome.elapsed_s,
    )
    # requests outlived timeout_s and were sent again; each row still landed once (the account above)
    assert report.retries > 0, report
    assert report.ok, report


SMALL = 400  # rows of the cases where every request left times out: each costs timeout_s


@pytest.mark.parametrize("db", DATABASES)
def test_stops_answering_mid_write(db: str, target: Target, fault_log: Any) -> None:
    """Frozen for good once some batches landed: the write ends within a bound derived from timeout_s
    and max_retries, every row left fails with a retryable reason naming the server, none is lost. Once
    max_concurrency x (max_retries + 1) requests in a row timed out the server stopped answering: the write
    stops (``StoppedAnswering``) if batches are left, and the rows it never read are the input's tail."""
    timeout_s, max_retries = 0.5, 1
    table = rows(SMALL, seed=3)
    fault = FreezeMidWrite(count=target.count, at_rows=SMALL // 4, pids=target.pids, frozen_s=120)
    options = {**BASE, **target.options, "timeout_s": timeout_s, "max_retries": max_retries}
    options["max_rows_per_second"] = SMALL  # a second for the whole write, had nothing gone wrong
    with fault:
        try:
            with connect(target.uri, **options) as client:
                outcome = run_write(lambda: client.upsert(table))
        finally:
            fault.thaw()
    fault.wait()
    frozen_for = outcome.ended - fault.timeline["frozen"]
    if outcome.error is not None:
        # max_concurrency x (max_retries + 1) requests in a row timed out before the last batch was sent:
        # the server stopped answering, the write stopped (the rows it never read are in no report)
        text = str(outcome.error)
        assert isinstance(outcome.error, StoppedAnswering), outcome.describe()
        assert target.where in text and "raise option timeout_s" in text, text
        outcome = dataclasses.replace(outcome, report=outcome.error.report)
    numbers = assert_account(expected_rows(table), outcome, target.read_back())
    report = outcome.report
    assert report is not None, outcome.describe()
    fault_log(
        struck_at=fault.struck_at_rows,
        **numbers,
        retries=report.retries,
        frozen_for_s=frozen_for,
        stopped=outcome.error is not None,
        errors=",".join(sorted({f.error_type for f in report.failures})),
    )
    assert report.failed > 0, report
    for failure in report.failures:
        # no reply (a new connection: no handshake) within timeout_s, or the connection lost; or not sent
        # because the server had stopped answering
        assert failure.error_type in (
            "DeadlineExceeded",
            "ConnectError",
            "ConnectTimeout",
            "TransportError",
            STOPPED,
        ), failure
        assert failure.retryable and target.where in failure.error, failure
    # each batch left costs at most (max_retries + 1) attempts, options["max_concurrency"] at a time; an
    # attempt ends after timeout_s, plus a second of slack (libpq: a new connection waits at least 2 s)
    left = -(-(SMALL - (fault.struck_at_rows or 0)) // BATCH)
    rounds = -(-left // options["max_concurrency"])
    bound = rounds * (max_retries + 1) * (max(timeout_s + 1.0, 2.0) + 0.3) + 3.0
    assert frozen_for < bound, f"{frozen_for:.1f} s frozen, bound {bound:.1f} s; {report!r}"


def exception_text(exc: BaseException) -> str:
    """The error as a user sees it: its message, its repr, and those of its chained causes."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def assert_failed_at_start(outcome: Outcome, where: str) -> str:
    """Nothing was claimed written and the error names ``where`` and shows no secret; returns its text."""
    if outcome.report is not None:  # a report is allowed, if it claims nothing
        assert outcome.report.written == 0, outcome.describe()
        text = repr(outcome.report) + "".join(f.error for f in outcome.report.failures)
    else:
        assert outcome.error is not None
        text = exception_text(outcome.error)
    assert where in text, text
    assert SECRET not in text and SECRET[3:15] not in text, text
    return text


NETWORK = [db for db in DATABASES if db != "lite"]


@pytest.mark.parametrize("db", NETWORK)
def test_a_server_that_never_answers(db: str, target: Target, fault_log: Any) -> None:
    """It accepts connections and stays silent (a PostgreSQL client's startup message goes unanswered
    too): the write fails within a bound derived from timeout_s and max_retries, naming the host."""
    timeout_s, max_retries = 0.5, 2
    with silent_listener() as port:
        outcome = write(
            target, target.uri_at(port), timeout_s=timeout_s, max_retries=max_retries, api_key=SECRET
        )
    text = assert_failed_at_start(outcome, f"127.0.0.1:{port}")
    assert_account(sent(), outcome, target.read_back())  # the real target was never written
    fault_log(elapsed_s=outcome.elapsed_s, error=text.splitlines()[0][:100])
    # the first call (the target's check, or a batch) is tried max_retries + 1 times, each ending after
    # timeout_s (a second of slack: libpq waits at least 2 s for a connection) with at most 1.6 s of backoff
    bound = (max_retries + 1) * max(timeout_s + 1.0, 2.0) + 1.6 + 2.0
    assert outcome.elapsed_s < bound, f"{outcome.elapsed_s:.1f} s, bound {bound:.1f} s: {text}"


@pytest.mark.parametrize("db", ["pinecone-grpc", "pinecone-rest"])
def test_a_server_that_never_answers_when_nothing_checks_it_first(
    db: str, target: Target, fault_log: Any
) -> None:
    """As a Spark task writes (its driver checked the target) or with verify=false: the first batch meets
    the silence. Once it has spent its retries on a host that never answered, the write stops, instead
    of every later batch waiting out timeout_s in turn (3,000 rows: 18 s here, days at the defaults)."""
    timeout_s, max_retries = 0.5, 2
    with silent_listener() as port:
        outcome = write(
            target,
            target.uri_at(port),
            timeout_s=timeout_s,
            max_retries=max_retries,
            api_key=SECRET,
            verify=False,
        )
    text = assert_failed_at_start(outcome, f"127.0.0.1:{port}")
    fault_log(elapsed_s=outcome.elapsed_s, error=text.splitlines()[0][:100])
    bound = (max_retries + 1) * (timeout_s + 1.0) + 1.6 + 2.0
    assert outcome.elapsed_s < bound, f"{outcome.elapsed_s:.1f} s, bound {bound:.1f} s: {text}"


@pytest.mark.parametrize("db", NETWORK)
def test_connection_refused_at_start(db: str, target: Target, fault_log: Any) -> None:
    port = closed_port()
    outcome = write(target, target.uri_at(port), timeout_s=0.5, max_retries=2, api_key=SECRET)
    text = assert_failed_at_start(outcome, f"127.0.0.1:{port}")
    assert_account(sent(), outcome, target.read_back())
    fault_log(elapsed_s=outcome.elapsed_s, error=text.splitlines()[0][:100])
    assert outcome.elapsed_s < 5.0, text


def test_the_embedded_server_frozen_before_the_write(target_lite: Target, fault_log: Any) -> None:
    """The embedded default's "never answers": its server runs (holds the data) but is stopped (SIGSTOP)."""
    timeout_s, max_retries = 0.5, 2
    target = target_lite
    target.count()  # the server runs, and this process has seen it answer
    fault = FreezeMidWrite(count=lambda: 0, at_rows=0, pids=target.pids, frozen_s=60)
    with fault:
        while "frozen" not in fault.timeline:
            time.sleep(0.01)
        try:
            outcome = write(target, timeout_s=timeout_s, max_retries=max_retries)
        finally:
            fault.thaw()
    text = assert_failed_at_start(outcome, target.where)
    assert_account(sent(), outcome, target.read_back())
    fault_log(elapsed_s=outcome.elapsed_s, error=text.splitlines()[0][:100])
    bound = (max_retries + 1) * (timeout_s + 1.0) + 1.6 + 2.0
    assert outcome.elapsed_s < bound, f"{outcome.elapsed_s:.1f} s, bound {bound:.1f} s: {text}"


def test_a_new_process_is_told_soon_that_the_embedded_server_is_frozen(
    target_lite: Target, fault_log: Any
) -> None:
    """A new process (a new job, a Spark executor) has not seen the server answer: it asks for 5 s, gives
    it ``SHUTDOWN_WAIT_S`` to go away, then fails naming the pid, not after the 60 s start timeout."""
    target = target_lite
    target.count()
    fault = FreezeMidWrite(count=lambda: 0, at_rows=0, pids=target.pids, frozen_s=60)
    code = (
        "import sys, time\n"
        "from vectordb.connector.backends.milvus import lite\n"
        "started = time.monotonic()\n"
        "try:\n"
        "    lite.ensure_server(sys.argv[1])\n"
        "except Exception as e:\n"
        "    print(f'{time.monotonic() - started:.2f}', type(e).__name__, e)\n"
    )
    with fault:
        while "frozen" not in fault.timeline:
            time.sleep(0.01)
        try:
            done = subprocess.run(
                [sys.executable, "-c", code, target.extra["path"]], capture_output=True, text=True, timeout=50
            )
        finally:
            fault.thaw()
    elapsed, kind, message = done.stdout.strip().split(" ", 2)
    fault_log(elapsed_s=float(elapsed), error=message[:100])
    assert kind == "ConnectError" and "does not answer" in message and "pid" in message, done
    assert float(elapsed) < 5 + embedded.SHUTDOWN_WAIT_S + 3, done.stdout


def test_the_embedded_server_dead_at_start_is_started_again(target_lite: Target, fault_log: Any) -> None:
    """The embedded default's "refused": its server died (SIGKILL) before the write; the write starts a
    fresh one on the same data and every row lands."""
    target = target_lite
    target.count()
    target.kill()
    assert embedded.running(target.extra["path"]) is None
    outcome = write(target, max_retries=2, timeout_s=5)
    numbers = assert_account(sent(), outcome, target.read_back())
    assert outcome.report is not None and outcome.report.ok, outcome.describe()
    assert embedded.running(target.extra["path"]) is not None
    fault_log(**numbers, elapsed_s=outcome.elapsed_s)
