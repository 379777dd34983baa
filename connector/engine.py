"""The engine: the thin shell of threads and clocks around the pure rules in limits.py.

The caller's thread pulls a batch only when a send slot is free (so memory stays bounded
whatever the input size), encodes it while earlier requests are on the wire, and hands it
to a sender thread. At most ``limit`` requests are in flight, where ``limit`` adapts
(AIMD) below ``max_concurrency``. Sender threads retry what is retryable, with backoff
and under a retry budget. Every row ends in the report as written or failed, with its reason.

Isolation. A batch refused whole is split until exactly the rows the server refuses are
left, whatever the messages say: two bad rows, one in each half, give both halves the same
message, which proves nothing about the batch. When a half is accepted, its twin must hold a
refused row and is split without being sent whole. Requests spent this way come from the
isolation budget; past it, a refused batch's rows fail together with a reason that says they
were not isolated. While no row has been accepted, rows refused one by one for one reason
count towards a systemic stop (``SystemicRejection``): the cause is the whole write. Reaching the
count only suspends new requests (new batches and isolation probes alike); the write stops once
every request then unanswered has answered and none was accepted, so a server that refuses faster
than it accepts cannot stop a write with good rows in it.

Order per id. A batch that shares an id with a batch in flight waits until that one is done,
so the same id twice in one write lands in input order: the last occurrence wins.

A fatal error (bad credentials, no such index, a host that never answered) stops the
pulling, lets the requests in flight finish, and is raised: nothing later could succeed.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from typing import Any

from .backends.base import Backend
from .errors import (
    ConnectorError,
    Rejected,
    ServerError,
    SystemicRejection,
    TransportError,
)
from .isolation import ACCEPTED, GONE, isolate
from .limits import IsolationBudget, RateBudget, RetryRule, SystemicWatch
from .options import BackendOptions
from .report import BatchFailure, WriteReport
from .rows import RowBatch
from .transports.base import Transport, WireRequest

__all__ = ["Engine"]


class Engine:
    """Bounded, adaptive, retrying dispatch of batches through one transport."""

    def __init__(
        self,
        backend: Backend[Any],
        transport: Transport,
        options: BackendOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.backend, self.transport, self.options = backend, transport, options
        self._retry = RetryRule(options.max_concurrency, options.max_retries, rand)
        self.limit = self._retry.limit
        self._clock, self._sleep = clock, sleep
        self._rate = RateBudget(options.max_rows_per_second, options.max_bytes_per_second, clock())
        self._pool = ThreadPoolExecutor(
            max_workers=options.max_concurrency, thread_name_prefix="vectordb-send"
        )
        self._cond = threading.Condition()
        self._in_flight = 0
        self._fatal: BaseException | None = None
        self._reached_server = False
        self._isolation = IsolationBudget(options.isolation_budget)
        self._systemic = SystemicWatch()
        self._suspect: Rejected | None = None  # the refusal that made the systemic watch suspect the write
        self._unanswered = 0  # requests sent or about to be whose answer is not accounted for yet
        self._held: dict[str | None, set[object]] = {}  # ids in flight, per namespace

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def run(self, batches: Iterable[RowBatch], report: WriteReport) -> None:
        """Send every batch, accounting for each row in ``report``; raise a fatal error after draining."""
        started = self._clock()
        self._fatal = None
        self._systemic, self._suspect = SystemicWatch(), None  # "none accepted" is about this write
        futures: list[Future[None]] = []
        source = iter(batches)
        try:
            while self._take_slot():
                future, expected = None, False
                try:
                    batch = next(source, None)
                    if batch is None or not self._hold_ids(batch):
                        break
                    try:
                        request = self.backend.request_for(batch)
                        self._pace(len(batch), len(request.body))
                        self._expect_answer()
                        expected = True
                        future = self._pool.submit(self._deliver_or_stop, batch, request, report)
                    finally:
                        if future is None:
                            self._release_ids(batch)
                            if expected:
                                self._answer_accounted()
                finally:
                    if future is None:  # nothing was sent on this slot: a later write must get it back
                        self._give_slot()
                # release in the done-callback: it runs however the sender ends
                future.add_done_callback(functools.partial(self._done, batch))
                futures.append(future)
                if len(futures) > 4 * self.options.max_concurrency:
                    futures = [f for f in futures if not f.done()]
        except BaseException as exc:
            self._set_fatal(exc)
            raise
        finally:
            wait_all(futures)
            report.elapsed_s += self._clock() - started
        if self._fatal is not None:
            raise self._fatal

    # -- slots ------------------------------------------------------------------------------------

    def _take_slot(self) -> bool:
        with self._cond:
            while self._fatal is None:
                now = self._clock()
                if self._systemic.suspected:  # nothing new until the requests in flight answer
                    self._cond.wait()
                    continue
                if self.limit.can_start(self._in_flight, now):
                    self._in_flight += 1
                    return True
                hold = self.limit.wait_s(now)
                self._cond.wait(timeout=hold if hold > 0 else None)
            return False

    def _give_slot(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def _done(self, batch: RowBatch, _future: Future[None]) -> None:
        self._release_ids(batch)
        self._give_slot()

    def _hold_ids(self, batch: RowBatch) -> bool:
        """Wait until no batch in flight shares an id with ``batch``, then hold its ids; False if the
        write stopped meanwhile. Keeps the same id twice in one write in input order."""
        with self._cond:
            held = self._held.setdefault(batch.namespace, set())
            while self._fatal is None and not held.isdisjoint(batch.ids):
                self._cond.wait()
            if self._fatal is not None:
                return False
            held.update(batch.ids)
            return True

    def _release_ids(self, batch: RowBatch) -> None:
        with self._cond:
            self._held[batch.namespace].difference_update(batch.ids)
            self._cond.notify_all()

    def _expect_answer(self) -> None:
        with self._cond:
            self._unanswered += 1

    def _answer_accounted(self) -> None:
        """One request's answer (or its last failure) is in the report: a suspected write may now be
        concluded systemic, if nothing else is unanswered."""
        with self._cond:
            self._unanswered -= 1
            self._conclude_systemic()

    def _conclude_systemic(self) -> None:
        """Under the lock: stop the write if the systemic watch's verdict is in."""
        error = self._suspect
        if self._fatal is not None or error is None or not self._systemic.concluded(self._unanswered):
            return
        self._fatal = SystemicRejection(
            f"{self.backend.describe()} refused each of the first {self._systemic.count} rows sent one by "
            f"one for the same reason and accepted none: {error}. The cause is the write itself (the "
            "target's schema or limits, the vectors' kind), not some rows: stopped instead of "
            "refusing every row at about two requests a row",
            status=error.status,
        )
        self._cond.notify_all()

    def _pace(self, rows: int, nbytes: int) -> None:
        if self._rate.unbounded:
            return
        with self._cond:
            delay = self._rate.delay_for(rows, nbytes, self._clock())
        if delay > 0:
            self._sleep(delay)

    def _set_fatal(self, exc: BaseException) -> None:
        with self._cond:
            if self._fatal is None:
                self._fatal = exc
            self._cond.notify_all()

    # -- one batch, on a sender thread ------------------------------------------------------------

    def _deliver_or_stop(self, batch: RowBatch, request: WireRequest, report: WriteReport) -> None:
        try:
            self._deliver(batch, request, report)
        except (
            BaseException
        ) as exc:  # a bug in a sender thread: stop the write and raise it, never swallow it
            self._set_fatal(exc)
            raise

    def _deliver(self, batch: RowBatch, request: WireRequest, report: WriteReport) -> None:
        """Send one batch until it lands or fails; every row ends in ``report``."""
        with self._cond:
            self._isolation.on_rows_sent(len(batch))
        error, attempts = self._attempt(batch, request, report)
        if error is None:
            return
        if isinstance(error, Rejected) and self.backend.isolate_rejections and not error.fatal:
            if len(batch) > 1:
                self._isolate(batch, error, report)
            else:
                self._refused_row(batch, error, attempts, report)
        else:
            self._give_up(batch, error, attempts, report)

    def _attempt(
        self, batch: RowBatch, request: WireRequest, report: WriteReport
    ) -> tuple[ConnectorError | None, int]:
        """Send with retries; ``(None, n)`` once the reply is accounted for, else the last error. The
        caller counted the request as unanswered (``_expect_answer``); this counts its answer."""
        try:
            return self._send_until_answered(batch, request, report)
        finally:
            self._answer_accounted()

    def _send_until_answered(
        self, batch: RowBatch, request: WireRequest, report: WriteReport
    ) -> tuple[ConnectorError | None, int]:
        attempts = 0
        while True:
            attempts += 1
            with self._cond:
                epoch = self.limit.epoch
                report.requests += 1
                report.bytes_sent += len(request.body)
            try:
                reply = self.transport.send(request, timeout_s=self.options.timeout_s)
                outcome = self.backend.outcome_of(batch, request, reply)
            except (ServerError, TransportError) as exc:
                if self._fatal is not None or not self._should_retry(exc, attempts, epoch, report):
                    return exc, attempts
                self._sleep(self._retry.delay_s(attempts, exc, answered=self._answered))
                continue
            with self._cond:
                self._reached_server = True
                self._retry.on_success()
                if outcome.written:
                    self._systemic.on_accepted()
                report.written += outcome.written
                for failure in outcome.failures:
                    report.failed += failure.rows
                    report.failures.append(failure)
                self._cond.notify_all()
            return None, attempts

    def _isolate(self, batch: RowBatch, error: Rejected, report: WriteReport) -> None:
        """Split a batch refused whole until exactly the rows the server refuses are left (the walk is
        ``isolation.isolate``); stops early on a systemic cause or a fatal error, failing what is left
        with a reason that says it was not isolated."""
        isolate(
            batch,
            error,
            halves=lambda part: (part.slice(0, len(part) // 2), part.slice(len(part) // 2, len(part))),
            probe=lambda part, known: self._probe(part, known, report),
            may_go_on=lambda part, known: self._may_isolate(part, known, report),
        )

    def _may_isolate(
        self, part: RowBatch, known: Rejected, report: WriteReport, *, sending: bool = False
    ) -> bool:
        """True if one more isolation request may be sent (with ``sending``, it is paid for and counted
        as unanswered); else ``part`` fails whole, saying why. Waits while the write is suspected
        systemic: the verdict comes from the requests already sent."""
        with self._cond:
            while self._fatal is None and self._systemic.suspected:
                self._cond.wait()
            allowed = self._fatal is None and self._isolation.available
            spent = self._isolation.spent
            if allowed and sending:
                self._isolation.try_spend()
                self._unanswered += 1
        if allowed:
            return True
        note = (
            "not isolated: the write stopped"
            if self._fatal is not None
            else f"not isolated: the isolation budget ({spent} requests) is spent; "
            "these rows were in a batch the server refused and may be good"
        )
        self._fail(report, part, known, 1, note, error_type="NotIsolated")
        return False

    def _probe(self, part: RowBatch, known: Rejected, report: WriteReport) -> Rejected | object:
        """Send ``part`` whole. Returns its refusal (a single row's is accounted for here),
        ``ACCEPTED``, or ``GONE`` (failed for another reason, or not sent: budget or stop)."""
        if not self._may_isolate(part, known, report, sending=True):
            return GONE
        error, attempts = self._attempt(part, self.backend.request_for(part), report)
        if error is None:
            return ACCEPTED
        if not isinstance(error, Rejected) or error.fatal:
            self._give_up(part, error, attempts, report)
            return GONE
        if len(part) == 1:
            self._refused_row(part, error, attempts, report)
        return error

    def _refused_row(self, row: RowBatch, error: Rejected, attempts: int, report: WriteReport) -> None:
        """One row the server refused on its own; enough of them alike, and nothing accepted, stop the write."""
        self._fail(report, row, error, attempts)
        with self._cond:
            if self._systemic.on_row_refused(str(error)) and self._suspect is None:
                self._suspect = error
            self._conclude_systemic()
            self._cond.notify_all()  # a disarmed watch lets waiting senders go on

    def _should_retry(self, exc: ConnectorError, attempts: int, epoch: int, report: WriteReport) -> bool:
        with self._cond:
            return self._retry.may_retry(exc, attempts, epoch, self._clock(), report)

    @property
    def _answered(self) -> bool:
        """The host has answered once: a request of this write, or the target's check."""
        return self._reached_server or self.backend.answered

    def _give_up(self, batch: RowBatch, exc: ConnectorError, attempts: int, report: WriteReport) -> None:
        """Account for a batch that will not be sent again; a fatal error stops the whole write, and so
        does a batch that spent its retries on a host that has not answered once, not even the target's
        check (refused, or silent: otherwise every later batch waits out ``timeout_s`` on it too)."""
        if self._retry.stops_stream(exc, answered=self._answered):
            self._set_fatal(exc)
        note = "not retried: the write stopped" if self._fatal is not None and self._fatal is not exc else ""
        self._fail(report, batch, exc, attempts, note)

    def _fail(
        self,
        report: WriteReport,
        batch: RowBatch,
        exc: ConnectorError,
        attempts: int,
        note: str = "",
        error_type: str | None = None,
    ) -> None:
        failure = BatchFailure(
            ids=batch.str_ids(),
            positions=tuple(batch.positions.tolist()),
            error=f"{exc} ({note})" if note else str(exc),
            error_type=error_type or type(exc).__name__,
            retryable=exc.retryable,
            attempts=attempts,
        )
        with self._cond:
            report.failed += len(batch)
            report.failures.append(failure)
