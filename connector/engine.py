"""The engine: the thin shell of threads and clocks around the pure rules in limits.py.

The caller's thread pulls a batch only when a send slot is free (so memory stays bounded
whatever the input size), encodes it while earlier requests are on the wire, and hands it
to a sender thread. At most ``limit`` requests are in flight, where ``limit`` adapts
(AIMD) below ``max_concurrency``. Sender threads retry what is retryable, with backoff
and under a retry budget, and bisect whole-batch rejections so only the rows the server
refuses fail. Every row ends in the report as written or failed, with its reason.

A fatal error (bad credentials, no such index, a host that never answered) stops the
pulling, lets the requests in flight finish, and is raised: nothing later could succeed.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all

from .backends.base import Backend
from .errors import ConnectError, ConnectorError, Rejected, ServerError, Throttled, TransportError
from .limits import AimdLimit, Backoff, RateBudget, RetryBudget
from .options import BackendOptions
from .report import BatchFailure, WriteReport
from .rows import RowBatch
from .transports.base import Transport, WireRequest

__all__ = ["Engine"]


class Engine:
    """Bounded, adaptive, retrying dispatch of batches through one transport."""

    def __init__(
        self,
        backend: Backend,
        transport: Transport,
        options: BackendOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.backend, self.transport, self.options = backend, transport, options
        self.limit = AimdLimit(options.max_concurrency)
        self._retry_budget = RetryBudget.for_concurrency(options.max_concurrency)
        self._backoff = Backoff(rand=rand)
        self._clock, self._sleep = clock, sleep
        self._rate = RateBudget(options.max_rows_per_second, options.max_bytes_per_second, clock())
        self._pool = ThreadPoolExecutor(
            max_workers=options.max_concurrency, thread_name_prefix="vectordb-send"
        )
        self._cond = threading.Condition()
        self._in_flight = 0
        self._fatal: BaseException | None = None
        self._reached_server = False
        self._target_checked = False

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def run(self, batches: Iterable[RowBatch], report: WriteReport) -> None:
        """Send every batch, accounting for each row in ``report``; raise a fatal error after draining."""
        started = self._clock()
        self._fatal = None
        futures: list[Future[None]] = []
        source = iter(batches)
        try:
            while self._take_slot():
                future = None
                try:
                    batch = next(source, None)
                    if batch is None:
                        break
                    if not self._target_checked:
                        self.backend.check_target(self.transport, batch.dimension)
                        self._target_checked = True
                    request = self.backend.request_for(batch)
                    self._pace(len(batch), len(request.body))
                    future = self._pool.submit(self._deliver_or_stop, batch, request, report)
                finally:
                    if future is None:  # nothing was sent on this slot: a later write must get it back
                        self._give_slot()
                # release in the done-callback: it runs however the sender ends
                future.add_done_callback(lambda _f: self._give_slot())
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
        error, attempts = self._attempt(batch, request, report)
        if error is None:
            return
        if (
            isinstance(error, Rejected)
            and self.backend.bisect_rejections
            and len(batch) > 1
            and not error.fatal
        ):
            self._bisect(batch, error, report)
        else:
            self._give_up(batch, error, attempts, report)

    def _attempt(
        self, batch: RowBatch, request: WireRequest, report: WriteReport
    ) -> tuple[ConnectorError | None, int]:
        """Send with retries; ``(None, n)`` once the reply is accounted for, else the last error."""
        attempts = 0
        while True:
            attempts += 1
            with self._cond:
                epoch = self.limit.epoch
                report.requests += 1
                report.bytes_sent += len(request.body)
            try:
                reply = self.transport.send(request, timeout_s=self.options.timeout_s)
                outcome = self.backend.outcome_of(batch, reply)
            except (ServerError, TransportError) as exc:
                if self._fatal is not None or not self._should_retry(exc, attempts, epoch, report):
                    return exc, attempts
                hint = exc.retry_after_s if isinstance(exc, ServerError) else None
                self._sleep(self._backoff.delay_s(attempts, hint))
                continue
            with self._cond:
                self._reached_server = True
                self.limit.on_success()
                self._retry_budget.on_success()
                report.written += outcome.written
                for failure in outcome.failures:
                    report.failed += len(failure.ids)
                    report.failures.append(failure)
                self._cond.notify_all()
            return None, attempts

    def _bisect(self, batch: RowBatch, error: Rejected, report: WriteReport) -> None:
        """Split a rejected batch until only the rows the server refuses are left.

        When both halves are refused with the parent's very message, the cause is the whole batch
        (a dimension that does not match the index, say), not some rows: both halves fail as they
        are, which costs 3 requests instead of the 2n - 1 of splitting down to single rows.
        """
        mid = len(batch) // 2
        halves = (batch.slice(0, mid), batch.slice(mid, len(batch)))
        results = [self._attempt(half, self.backend.request_for(half), report) for half in halves]
        same = all(isinstance(err, Rejected) and str(err) == str(error) for err, _ in results)
        for half, (err, attempts) in zip(halves, results, strict=True):
            if err is None:
                continue
            if isinstance(err, Rejected) and len(half) > 1 and not same and not err.fatal:
                self._bisect(half, err, report)
            else:
                self._give_up(half, err, attempts, report)

    def _should_retry(self, exc: ConnectorError, attempts: int, epoch: int, report: WriteReport) -> bool:
        with self._cond:
            if isinstance(exc, Throttled):
                report.throttled += 1
                self.limit.on_throttle(self._clock(), exc.retry_after_s, epoch)
            if exc.fatal or not exc.retryable or attempts > self.options.max_retries:
                return False
            if not self._retry_budget.try_spend():
                return False
            report.retries += 1
            return True

    def _give_up(self, batch: RowBatch, exc: ConnectorError, attempts: int, report: WriteReport) -> None:
        """Account for a batch that will not be sent again; a fatal error stops the whole write."""
        if exc.fatal or (isinstance(exc, ConnectError) and not self._reached_server):
            self._set_fatal(exc)
        note = "not retried: the write stopped" if self._fatal is not None and self._fatal is not exc else ""
        self._fail(report, batch, exc, attempts, note)

    def _fail(
        self, report: WriteReport, batch: RowBatch, exc: ConnectorError, attempts: int, note: str = ""
    ) -> None:
        failure = BatchFailure(
            ids=batch.str_ids(),
            error=f"{exc} ({note})" if note else str(exc),
            error_type=type(exc).__name__,
            retryable=exc.retryable,
            attempts=attempts,
        )
        with self._cond:
            report.failed += len(batch)
            report.failures.append(failure)
