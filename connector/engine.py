"""The engine: upserts (and any batch of rows a backend encodes) on the one dispatcher.

The caller's thread pulls a batch only when a send slot is free (so memory stays bounded
whatever the input size), encodes it while earlier requests are on the wire, and hands it
to a sender thread. With ``ENCODE_AHEAD`` set, JSON bodies whose floats the native writer
formats with Python's lock released are the exception: that many batches are pulled ahead and
encoded on the process's encoder threads, several at once (still bounded: that many batches more). At most ``limit`` requests are in flight, where ``limit`` adapts
(AIMD) below ``max_concurrency``. Retries, isolation of refused rows, the isolation budget
and the systemic stop are the dispatcher's (``dispatch.py``), shared with the embedding client;
this module says how a batch of rows is sent (``backend.request_for``, ``transport.send``,
``backend.outcome_of``) and accounted for in the ``WriteReport``. Every row ends in the report
as written or failed, with its reason.

Order per id. A batch that shares an id with a batch in flight waits until that one is done,
so the same id twice in one write lands in input order: the last occurrence wins.

A fatal error (bad credentials, no such index, a host that never answered) stops the
pulling, lets the requests in flight finish, and is raised: nothing later could succeed.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from dataclasses import dataclass
from typing import Any

from .backends.base import Backend
from .dispatch import Dispatcher
from .errors import (
    ConnectorError,
    DeadlineExceeded,
    Rejected,
    ServerTimedOut,
    SystemicRejection,
    TransportError,
)
from .limits import RateBudget
from .options import BackendOptions
from .report import STOPPED, BatchFailure, WriteReport
from .rows import RowBatch
from .rows.ops import DELETE
from .transports.base import Transport, WireRequest

__all__ = ["ENCODE_AHEAD", "Engine", "oversize_row"]

# JSON bodies encoded at once ahead of the sends, on encoder threads (0: every body on the caller's thread).
# Off: it pays only where a core is free for it (jobs.bench.rest_encoding, side by side); on a machine whose
# cores are busy it measured no gain for about 5 % more CPU a vector.
ENCODE_AHEAD = 0
MAX_PACE_S = 86_400.0  # the longest the rate budget holds one request back
_encoders: ThreadPoolExecutor | None = None
_encoders_lock = threading.Lock()


def _encoder_pool() -> ThreadPoolExecutor:
    """The process's encoder threads, shared by every engine (made on first use)."""
    global _encoders
    with _encoders_lock:
        if _encoders is None:
            _encoders = ThreadPoolExecutor(max_workers=4, thread_name_prefix="vectordb-encode")
        return _encoders


def lost_after_sending(exc: ConnectorError) -> bool:
    """A request sent whose reply never came (a timeout, a connection lost mid-reply): the server may
    have applied it. Not a connection that was never made, nor a server's own answer."""
    if isinstance(exc, ServerTimedOut):  # the server's own answer: it rolled the request back
        return False
    return isinstance(exc, DeadlineExceeded) or type(exc) is TransportError


def oversize_row(encoded: int, limit: int, why: str) -> str:
    """Why a row fails whose request alone is ``encoded`` bytes, over ``limit`` (``why``: which limit)."""
    return f"row is {encoded} bytes encoded (a request of it alone); a request takes at most {limit} ({why})"


def _native_json() -> bool:
    from . import jsonvec  # numpy and orjson: not at import

    return jsonvec.native_encoder()


@dataclass(slots=True)
class _Sending:
    """A batch on its way: the request the caller's thread encoded for it (``None``: encode on the
    sender thread, as isolation's halves are)."""

    batch: RowBatch
    report: WriteReport  # its write's: a sender still busy after its write was interrupted counts there
    request: WireRequest | None = None
    held: tuple[object, list[Any]] | None = None  # (scope, keys) its rows hold while it is on its way

    def __len__(self) -> int:
        return len(self.batch)


class Engine:
    """Bounded, adaptive, retrying dispatch of batches through one transport."""

    noun, whole = "rows", "write"

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
        self.dispatch: Dispatcher[_Sending] = Dispatcher(self, options, clock=clock, sleep=sleep, rand=rand)
        self.limit = self.dispatch.limit
        self._clock, self._sleep = clock, sleep
        self._rate = RateBudget(options.max_rows_per_second, options.max_bytes_per_second, clock())
        self._cond, self._lock = self.dispatch.cond, self.dispatch.lock
        self._held: dict[object, set[object]] = {}  # the keys of rows in flight, per scope (RowRules)
        # an encoded body over this is split: option max_batch_bytes (the database's limit at most), which
        # the batcher's size estimates aim under but cannot promise
        limit = backend.limits.max_bytes
        self.max_body_bytes = min(options.max_batch_bytes or limit, limit)
        self._body_limit = (
            "option max_batch_bytes"
            if options.max_batch_bytes and options.max_batch_bytes <= limit
            else f"{backend.name}'s request limit"
        )

    def close(self) -> None:
        self.dispatch.close()

    def run(self, batches: Iterable[RowBatch], report: WriteReport) -> None:
        """Send every batch, accounting for each row in ``report``; raise a fatal error after draining."""
        started = self._clock()
        self.dispatch.begin()
        futures: list[Future[None]] = []
        source = self._encoded(batches, report)
        try:
            while self.dispatch.take_slot():
                future, ticket, sending = None, None, None
                try:
                    sending = next(source, None)
                    if sending is None:
                        break
                    if not self._hold_ids(sending):  # the write stopped: read and encoded, never sent
                        self._dropped(sending)
                        break
                    assert sending.request is not None
                    if not self._pace(len(sending.batch), len(sending.request.body)):
                        self._dropped(sending)  # the write stopped while it waited its turn: never sent
                        break
                    # from here the slot and the held ids are the ticket's: its sender gives them back
                    ticket = self.dispatch.ticket(sending, self._release_ids)
                    future = self.dispatch.send(ticket)
                finally:
                    if future is None:  # not known to be sent (Ctrl-C, a stop): a later write gets them back
                        if ticket is not None:
                            self.dispatch.call_off(ticket)  # nothing, if a sender took it after all
                        else:
                            if sending is not None:
                                self._release_ids(sending)
                            self.dispatch.give_slot()
                futures.append(future)
                if len(futures) > 4 * self.options.max_concurrency:
                    futures = [f for f in futures if not f.done()]
        except BaseException as exc:
            # Ctrl-C, or the connector's own fatal error, stops the batches on the wire at once; an error of
            # the caller's input (or an encoding bug) only stops the pulling: the rows already handed over
            # are retried and isolated as in any write, so a good row never fails for a later bad record
            if not isinstance(exc, Exception) or isinstance(exc, ConnectorError):
                self.dispatch.set_fatal(exc)
            raise
        finally:
            try:
                wait_all(futures)
            except BaseException as exc:  # Ctrl-C while the last requests are on the wire: stop them too
                self.dispatch.set_fatal(exc)
                raise
            finally:
                source.close()  # batches encoded ahead are not wanted; the caller closes its input
                report.elapsed_s += self._clock() - started
        if self.dispatch.fatal is not None:
            raise self.dispatch.fatal

    def _encoded(self, batches: Iterable[RowBatch], report: WriteReport) -> Generator[_Sending, None, None]:
        """Each batch with its request, in input order, encoded while earlier ones are on the wire. A
        body over ``max_body_bytes`` (option ``max_batch_bytes``, else the database's request limit: the
        size estimate came out small, as JSON floats longer than its sample showed) is split in halves and
        encoded again, in input order, so no request is refused for its size and the option is honoured."""
        limit = self.max_body_bytes
        requests = self._requests(batches, report)
        pending: list[tuple[RowBatch, WireRequest | None]] = []
        try:
            for batch, request in requests:
                pending.append((batch, request))
                while pending:
                    part, encoded = pending.pop()
                    if encoded is None:
                        encoded = self.backend.request_for(part)
                    if len(encoded.body) > limit and len(part) > 1:
                        middle = len(part) // 2
                        pending += [
                            (part.slice(middle, len(part)), None),
                            (part.slice(0, middle), None),
                        ]  # left first
                        continue
                    # one row: sent, it broke the option (or the server refused it)
                    if len(encoded.body) > limit:
                        self._too_big(part, len(encoded.body), report)
                        continue
                    yield _Sending(part, report, encoded)
        finally:
            # a stop between the halves of a split batch: the halves not yet yielded were read too
            self._drop_unsent([part for part, _ in reversed(pending)], report)
            requests.close()  # now, not when collected: its batches encoded ahead are accounted first

    def _requests(
        self, batches: Iterable[RowBatch], report: WriteReport
    ) -> Generator[tuple[RowBatch, WireRequest], None, None]:
        """Each batch and its request, in input order. On the caller's thread, except JSON bodies whose
        floats the native writer formats with Python's lock released: those are encoded ``ENCODE_AHEAD``
        batches ahead on the process's encoder threads, so several bodies are formatted at once, on as
        many cores, while the caller waits for a send slot (one thread formatting floats at about 25 ns
        each is otherwise the ceiling of a REST write). An error of the input or of an encoding is raised
        where it stands in the input, once the batches before it have been handed on. Batches pulled ahead
        and never handed on because the write stopped are counted in ``report`` as dropped."""
        source = iter(batches)
        first = next(source, None)
        if first is None:
            return
        request = self.backend.request_for(first)
        yield first, request
        if not (ENCODE_AHEAD and request.body[:1] == b"{" and _native_json()):
            for batch in source:
                yield batch, self.backend.request_for(batch)
            return
        pool = _encoder_pool()
        window: collections.deque[tuple[RowBatch | None, Any]] = collections.deque()
        exhausted = False
        try:
            while True:
                while not exhausted and len(window) < ENCODE_AHEAD:
                    try:
                        pulled = next(source)
                    except StopIteration:
                        exhausted = True
                    except Exception as exc:  # the input's own error: raised in its place, below
                        window.append((None, exc))
                        exhausted = True
                    else:
                        window.append((pulled, pool.submit(self.backend.request_for, pulled)))
                if not window:
                    return
                ready, item = window.popleft()
                if ready is None:
                    raise item
                yield ready, item.result()
        finally:
            for _, item in window:  # a write that stopped early: bodies not started are not wanted
                if isinstance(item, Future):
                    item.cancel()
            # read from the input, so counted: lost without a trace, their rows were neither written nor failed
            self._drop_unsent([ready for ready, _ in window if ready is not None], report)

    # -- order per id, pace -----------------------------------------------------------------------

    def _hold_ids(self, sending: _Sending) -> bool:
        """Wait until no batch in flight holds a key of ``sending``'s rows, then hold them; False if the
        write stopped meanwhile. Keeps the same id twice in one write in input order; keys are the
        database's (``RowRules.row_keys``, ``scope``): a UUID's two spellings wait for each other, and
        so do one id's rows in two namespaces of a database that keeps one row per id."""
        rules = self.backend.rules
        scope, keys = rules.scope(sending.batch.namespace), rules.row_keys(sending.batch.ids)
        with self._lock:
            held = self._held.setdefault(scope, set())
            while self.dispatch.fatal is None and not held.isdisjoint(keys):
                self._cond.wait()
            if self.dispatch.fatal is not None:
                return False
            held.update(keys)
            sending.held = (scope, keys)
            return True

    def _too_big(self, row: RowBatch, size: int, report: WriteReport) -> None:
        """Account for a row whose request alone is over ``max_body_bytes``: it fails alone, as Invalid,
        in the words of the client's own check (the size estimate it passed came out small)."""
        failure = row.failure(
            [0], oversize_row(size, self.max_body_bytes, self._body_limit), error_type="Invalid"
        )
        with self._lock:
            report.failed += 1
            report.failures.append(failure)

    def _drop_unsent(self, batches: list[RowBatch], report: WriteReport) -> None:
        """Account for batches read but never handed on because the write stopped (a fatal error, Ctrl-C);
        an error of the input is raised where it stands, with nothing pulled past it."""
        if self.dispatch.fatal is not None:
            for batch in batches:
                self._dropped(_Sending(batch, report))

    def _dropped(self, sending: _Sending) -> None:
        """Account for a batch read (and encoded) but not sent because the write stopped."""
        batch, fatal = sending.batch, self.dispatch.fatal
        failure = BatchFailure(
            ids=batch.str_ids(),
            positions=tuple(batch.positions.tolist()),
            error=f"not sent: the write stopped on {type(fatal).__name__}: {fatal}",
            error_type=STOPPED,
            retryable=True,
            op=batch.op,  # a delete's rows say so wherever their failure is read (dead letters, repr)
        )
        with self._lock:
            sending.report.failed += len(batch)
            sending.report.failures.append(failure)

    def _release_ids(self, sending: _Sending) -> None:
        # no notify: the slot's release (``Dispatcher.give_slot``) always follows and wakes the caller
        # once, instead of twice for one request
        if sending.held is None:
            return
        scope, keys = sending.held
        with self._lock:
            self._held[scope].difference_update(keys)
        sending.held = None

    def _pace(self, rows: int, nbytes: int) -> bool:
        """Wait for the rate budget's turn; False if the write stopped meanwhile. A fatal error ends the
        wait at once (``set_fatal`` notifies), so another batch's 401 is not raised seconds later, after
        a batch sent past the stop."""
        if self._rate.unbounded:
            return True
        with self._lock:
            delay = self._rate.delay_for(rows, nbytes, self._clock())
        if delay <= 0:
            return True
        # clamped: a budget divided among many tasks can ask years of one request, which time.sleep
        # refuses (OverflowError) and no job waits out; the debt stays in the budget for the next
        delay = min(delay, MAX_PACE_S)
        if self._sleep is not time.sleep:  # an injected sleep (tests) is the wait itself
            self._sleep(delay)
            return self.dispatch.fatal is None
        deadline = time.monotonic() + delay
        with self._lock:
            while self.dispatch.fatal is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return True
                self._cond.wait(left)
            return False

    # -- the channel: how a batch of rows is sent and accounted for ---------------------------------

    def counts(self, unit: _Sending) -> WriteReport:
        return unit.report

    @property
    def answered(self) -> bool:
        """The host has answered once, in this process: a request of any write, or a target's check."""
        return self.transport.host.answered

    def send(self, unit: _Sending) -> object:
        if unit.request is None:  # a half being isolated; a retry sends the bytes encoded before
            unit.request = self.backend.request_for(unit.batch)
        request = unit.request
        with self._lock:
            unit.report.requests += 1
            unit.report.bytes_sent += len(request.body)
        reply = self.transport.send(request, timeout_s=self.options.timeout_s)
        return self.backend.outcome_of(unit.batch, request, reply)

    def accepted(self, unit: _Sending, outcome: Any) -> tuple[bool, ConnectorError | None]:
        report = unit.report
        report.written += outcome.written
        for failure in outcome.failures:
            report.failed += failure.rows
            report.failures.append(failure)
        unit.request = None  # sent for good: its bytes can go
        return outcome.written > 0, None

    def failed(
        self,
        unit: _Sending,
        exc: ConnectorError,
        attempts: int,
        note: str = "",
        error_type: str | None = None,
    ) -> None:
        batch = unit.batch
        if attempts and lost_after_sending(exc):
            done = "deleted" if batch.op == DELETE else "stored"
            note = f"{note}; " if note else ""
            note += (
                f"the database may have applied the request before its reply was lost: the rows may be {done}"
            )
        failure = BatchFailure(
            ids=batch.str_ids(),
            positions=tuple(batch.positions.tolist()),
            error=f"{exc} ({note})" if note else str(exc),
            error_type=error_type or type(exc).__name__,
            retryable=exc.retryable,
            attempts=attempts,
            op=batch.op,
        )
        with self._lock:
            unit.report.failed += len(batch)
            unit.report.failures.append(failure)

    def halves(self, unit: _Sending) -> tuple[_Sending, _Sending]:
        batch, mid = unit.batch, len(unit.batch) // 2
        return _Sending(batch.slice(0, mid), unit.report), _Sending(batch.slice(mid, len(batch)), unit.report)

    def isolates(self, error: Rejected) -> bool:
        return self.backend.isolate_rejections

    def probing(self, unit: _Sending) -> None:
        pass

    def systemic(self, count: int, error: Rejected) -> SystemicRejection:
        return SystemicRejection(
            f"{self.backend.describe()} refused each of the first {count} rows sent one by one for the "
            f"same reason and accepted none: {error}. The cause is the write itself (the target's schema "
            "or limits, the vectors' kind), not some rows: stopped instead of refusing every row at "
            "about two requests a row",
            status=error.status,
        )
