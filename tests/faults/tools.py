"""What every fault case shares: the rows, the faults themselves, and the account of a write after one.

The account (``assert_account``) is the point of the suite. After the write returned a report (or
raised), every row is read back with the database's own client, duplicates kept, and:

- no id is stored twice, and every stored row is one the write sent, with its exact float32 vector
  and metadata (also a row the report calls failed: a request the server applied after the client
  gave up on it is stored, which is allowed, but it must be stored right);
- every row the report does not name as failed is stored: nothing lost silently;
- the report adds up (written + failed = rows sent, each failed id once, each failure with a reason);
- a write that raised instead of reporting claimed nothing, so the database must hold nothing.

Faults: ``KillMidWrite`` watches the database's row count from a thread and, once some batches have
landed, SIGKILLs the server and starts it again on the same port and data after a pause (then marks
when the first row after the restart lands);
``FreezeMidWrite`` stops the server's processes (SIGSTOP) for a while, so replies come later than
``timeout_s``; ``tests.net`` has the port that never answers and the one that refuses.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from tests.contract.suite import StoredRow, make_table
from vectordb.connector import ConnectorError
from vectordb.connector.report import WriteReport

__all__ = [
    "Fault",
    "FreezeMidWrite",
    "KillMidWrite",
    "Outcome",
    "assert_account",
    "expected_rows",
    "run_write",
]

DIM = 8


@dataclass
class Outcome:
    """What a write left: its report, or the error it raised; and how long it took."""

    report: WriteReport | None
    error: ConnectorError | None
    elapsed_s: float
    ended: float  # monotonic seconds when the write returned or raised

    def describe(self) -> str:
        return repr(self.report) if self.report is not None else f"raised {self.error!r}"


def run_write(write: Callable[[], WriteReport]) -> Outcome:
    started = time.monotonic()
    try:
        report = write()
    except ConnectorError as exc:
        ended = time.monotonic()
        return Outcome(None, exc, ended - started, ended)
    ended = time.monotonic()
    return Outcome(report, None, ended - started, ended)


def expected_rows(table: pa.Table) -> dict[str, StoredRow]:
    """What the database should hold for each row of a ``make_table`` table."""
    ids = table.column("id").to_pylist()
    vectors = np.asarray(table.column("values").to_pylist(), dtype=np.float32)
    titles, ranks = table.column("title").to_pylist(), table.column("rank").to_pylist()
    return {
        row_id: StoredRow(vectors[i], {"title": titles[i], "rank": ranks[i]}) for i, row_id in enumerate(ids)
    }


def rows(n: int, *, seed: int) -> pa.Table:
    return make_table(n, DIM, seed=seed)


def assert_account(
    sent: dict[str, StoredRow], outcome: Outcome, stored: list[tuple[str, StoredRow]]
) -> dict[str, int]:
    """The exact account above; returns its numbers (sent, stored, reported written and failed)."""
    counts = Counter(row_id for row_id, _ in stored)
    duplicates = sorted(row_id for row_id, n in counts.items() if n > 1)
    assert not duplicates, (
        f"stored more than once: {duplicates[:10]} ({len(duplicates)} ids); {outcome.describe()}"
    )
    strangers = sorted(set(counts) - set(sent))
    assert not strangers, f"stored but never sent: {strangers[:10]}"
    wrong = [row_id for row_id, row in stored if not _same(row, sent[row_id])]
    assert not wrong, f"stored with another vector or metadata: {wrong[:10]} ({len(wrong)} rows)"
    if outcome.report is None:
        assert not counts, (
            f"the write raised ({outcome.error!r}) and claimed nothing, yet {len(counts)} rows are stored: "
            "the caller cannot tell which"
        )
        return {"sent": len(sent), "stored": 0, "written": 0, "failed": len(sent)}
    report = outcome.report
    failed = report.failed_ids
    assert len(failed) == len(set(failed)), f"a row failed twice in the report: {report!r}"
    assert set(failed) <= set(sent), "the report fails ids that were never sent"
    assert report.failed == len(failed)
    for failure in report.failures:
        assert failure.error and failure.error_type, f"a failure without its reason: {failure!r}"
    lost = sorted(set(sent) - set(failed) - set(counts))
    if report.stopped and outcome.error is not None:
        # a write stopped by a fatal error never read the rest of its input: those rows are in no report,
        # and they are the input's tail (every row read is stored or failed), which the caller sends again
        order = {row_id: i for i, row_id in enumerate(sent)}
        read = [order[row_id] for row_id in (*failed, *counts) if row_id is not None]
        unread = [order[row_id] for row_id in lost]
        assert not unread or not read or min(unread) > max(read), (
            f"rows neither stored nor reported failed before rows that were: {lost[:10]}; {report!r}"
        )
        assert report.written + report.failed + len(unread) == len(sent), (
            f"the report does not add up: {report!r}"
        )
        return {"sent": len(sent), "stored": len(counts), "written": report.written, "failed": report.failed}
    assert report.written + report.failed == len(sent), f"the report does not add up: {report!r}"
    assert not lost, (
        f"{len(lost)} rows neither stored nor reported failed (lost silently), e.g. {lost[:10]}; {report!r}"
    )
    return {"sent": len(sent), "stored": len(counts), "written": report.written, "failed": report.failed}


def _same(row: StoredRow, expected: StoredRow) -> bool:
    if row.vector is None or expected.vector is None:
        return row.vector is expected.vector
    exact = row.vector.astype("<f4").tobytes() == expected.vector.astype("<f4").tobytes()
    return exact and {k: row.metadata.get(k) for k in expected.metadata} == expected.metadata


# -- faults ------------------------------------------------------------------------------------------


@dataclass
class Fault:
    """A fault a thread injects mid-write, with what it saw (for the test's report)."""

    count: Callable[[], int]  # rows the database holds now
    at_rows: int  # strike once it holds at least this many
    give_up_s: float = 60.0
    struck_at_rows: int | None = None
    timeline: dict[str, float] = field(default_factory=dict)  # event -> monotonic seconds
    error: BaseException | None = None
    _thread: threading.Thread | None = None
    _write_ended: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Fault:
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._thread is not None
        self._write_ended.set()
        self._thread.join(self.give_up_s + 60)

    def wait(self) -> None:
        """Block until the fault has run its course; re-raise what went wrong in its thread."""
        assert self._thread is not None
        self._thread.join(self.give_up_s + 60)
        if self.error is not None:
            raise self.error
        assert self.struck_at_rows is not None, f"the write never reached {self.at_rows} rows stored"

    def _run(self) -> None:
        try:
            deadline = time.monotonic() + self.give_up_s
            while time.monotonic() < deadline:
                with contextlib.suppress(Exception):  # the database may be busy; ask again
                    held = self.count()
                    if held >= self.at_rows:
                        self.struck_at_rows = held
                        self.strike()
                        return
                time.sleep(0.05)
        except BaseException as exc:
            self.error = exc

    def strike(self) -> None:
        raise NotImplementedError

    def mark(self, event: str) -> None:
        self.timeline[event] = time.monotonic()


@dataclass
class KillMidWrite(Fault):
    """SIGKILL the server, wait ``pause_s``, start it again (``restart`` is None: the connector must).

    After a restart it watches the count once more and marks ``recovered`` when the database first
    holds more rows than just after the restart: the write's first batch after it has landed, which
    says how long the retries took to find the server back (nothing is marked if no row lands within
    ``recover_wait_s``, or before the write ended). Not without ``restart``: counting would start the
    embedded server itself.
    """

    kill: Callable[[], object] = lambda: None
    restart: Callable[[], object] | None = None
    pause_s: float = 0.5
    recover_wait_s: float = 30.0

    def strike(self) -> None:
        self.mark("killed")
        self.kill()
        if self.restart is not None:
            time.sleep(self.pause_s)
            self.mark("restarting")
            self.restart()
            self.mark("restarted")
            self._watch_recovery()

    def _watch_recovery(self) -> None:
        deadline = time.monotonic() + self.recover_wait_s
        baseline: int | None = None
        while time.monotonic() < deadline and not self._write_ended.is_set():
            with contextlib.suppress(Exception):  # still loading its data: ask again
                held = self.count()
                if baseline is None:
                    baseline = held
                elif held > baseline:
                    self.mark("recovered")
                    return
            time.sleep(0.05)


@dataclass
class FreezeMidWrite(Fault):
    """SIGSTOP every process of the server for ``frozen_s`` (or until ``thaw``), then SIGCONT: it accepts
    connections and reads requests into its socket buffers meanwhile, and answers nothing."""

    pids: Callable[[], list[int]] = list
    frozen_s: float = 1.5
    _thaw: threading.Event = field(default_factory=threading.Event)

    def thaw(self) -> None:
        self._thaw.set()

    def strike(self) -> None:
        pids = self.pids()
        self.mark("frozen")
        try:
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
            self._thaw.wait(self.frozen_s)
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
            self.mark("thawed")


def noop(*_: Any) -> None:
    """Nothing to do."""
