"""The one shell of threads and clocks around the pure rules in ``limits.py``, for anything sent in
batches: upserts (``engine.Engine``) and embedding requests (``embedding.client.EmbeddingClient``).

A ``Dispatcher`` owns the sender threads, the AIMD slots, the retry rule, the isolation budget and the
systemic watch; a ``Channel`` says how one unit (a batch of rows, a request of texts) is sent, split and
accounted for. The caller takes a slot (``take_slot``), then ``submit``s a unit; on a sender thread the
unit is sent with retries until it lands or fails, and a unit refused whole is split until exactly the
refused rows are left (``isolation.isolate``). Every row ends accounted for by the channel.

Systemic stop. While nothing has been accepted, rows refused one by one for one identical reason
are counted; at the watch's threshold new requests (new units and isolation probes alike) wait, and
the stream stops only once every request then unanswered has answered and none was accepted: a
server that refuses faster than it accepts cannot stop a stream with good rows in it. A channel that
has a request known to be good (``control``: the embedding client's probe text) sends it then too (not
after a stop), through the same attempt loop as any request, with retries: accepted, the refusals were
the rows' own (many texts over a model's context at the start of a stream, refused in one constant
message), and the stream goes on; only refused does it count toward the verdict (a throttle or a 5xx
says nothing about the rows).

Silence. A timeout lowers the in-flight limit as a throttle does (once per epoch): a slow server whose
queue outlasts ``timeout_s`` still serves the requests the client gave up on, so a limit left at its
ceiling kept that queue full and every request timed out. Not an isolated timeout, though: each attempt
is numbered as it is sent, and one that times out after an attempt sent later was answered (the server
answers newer requests: one slow request, not a queue, which serves in turn) leaves the limit alone;
otherwise one slow request in 30 halved the limit again before it had grown back. The same watch counts requests in a row that
timed out with no reply at all (any reply, an error's too, starts it again); once the limit is down to 1
and ``max_retries + 1`` requests sent alone in a row got no reply (one request's attempts) the server
is taken to have stopped answering: the next request (a retry, or a unit's first) is not sent and the
stream stops (``StoppedAnswering``), instead of every unit left waiting out ``timeout_s`` and its
retries.

Fatal errors (bad credentials, no such target, a host that never answered, a systemic refusal, a
server that stopped answering) stop the caller's pulling; the requests in flight finish, and the
caller raises ``fatal``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sized
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar

from .errors import (
    ConnectorError,
    Rejected,
    ServerError,
    StoppedAnswering,
    SystemicRejection,
    TransportError,
)
from .isolation import ACCEPTED, GONE, isolate
from .limits import IsolationBudget, RetryCounts, RetryRule, SystemicWatch, timed_out
from .report import STOPPED

__all__ = ["Channel", "Dispatcher"]

U = TypeVar("U", bound=Sized)


class Channel(Protocol[U]):
    """How one kind of unit is sent and accounted for. ``send`` and ``failed`` run on sender threads;
    ``accepted`` runs under the dispatcher's lock."""

    noun: str  # what the rows are called in messages: "rows", "inputs"
    whole: str  # and what they are part of: "write", "stream"

    def counts(self, unit: U) -> RetryCounts:
        """Where ``unit``'s retries and throttles are counted (its write's report)."""
        ...

    @property
    def answered(self) -> bool:
        """The host has answered once (then a transport error may be a restart, worth waiting for)."""
        ...

    def send(self, unit: U) -> object:
        """One request for ``unit``: its reply's outcome, or a ``ServerError``/``TransportError``."""
        ...

    def accepted(self, unit: U, outcome: Any) -> tuple[bool, ConnectorError | None]:
        """Account for a reply: (whether any row was accepted, an error that fails the unit instead)."""
        ...

    def failed(
        self, unit: U, exc: ConnectorError, attempts: int, note: str = "", error_type: str | None = None
    ) -> None:
        """Account for ``unit``'s rows as failed with ``exc`` (and ``note``, ``error_type`` if given)."""
        ...

    def halves(self, unit: U) -> tuple[U, U]: ...

    def isolates(self, error: Rejected) -> bool:
        """Whether a refusal of a whole unit is split to find its rows (a server may refuse whole)."""
        ...

    def probing(self, unit: U) -> None:
        """An isolation request is about to be sent for ``unit`` (for the channel's counters)."""
        ...

    def systemic(self, count: int, error: Rejected) -> SystemicRejection:
        """The error that stops the stream: ``count`` rows refused alone for ``error``'s reason."""
        ...


class Settings(Protocol):
    """The options a dispatcher reads (the connector's and the embedding client's have them)."""

    @property
    def max_concurrency(self) -> int: ...

    @property
    def max_retries(self) -> int: ...

    @property
    def isolation_budget(self) -> float: ...

    @property
    def timeout_s(self) -> float: ...


class Dispatcher(Generic[U]):
    """Bounded, adaptive, retrying, isolating dispatch of units through one channel."""

    def __init__(
        self,
        channel: Channel[U],
        settings: Settings,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
        thread_name: str = "vectordb-send",
        control: Callable[[], None] | None = None,
    ) -> None:
        """``control``, if given, sends one request known to be good (the embedding client's probe text),
        raising its error if it was not accepted: sent, with retries, when the systemic watch suspects
        the stream, before its verdict; accepted, the refusals are about the rows and the watch is
        disarmed; only a refusal (``Rejected``) lets the verdict follow."""
        self.channel = channel
        self._control = control
        # a throttle without a hint is waited out, each wait at most a request's timeout (and a minute)
        throttle_cap_s = min(60.0, settings.timeout_s)
        self.retry = RetryRule(
            settings.max_concurrency, settings.max_retries, rand, throttle_cap_s=throttle_cap_s
        )
        self.limit = self.retry.limit
        self.isolation = IsolationBudget(settings.isolation_budget)
        self.clock, self.sleep = clock, sleep
        # one lock, entered as ``lock`` (C methods: no Python frame at which a signal's handler can run
        # with the lock half taken or half given back, as Condition's own __enter__/__exit__ have)
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.pool = ThreadPoolExecutor(max_workers=settings.max_concurrency, thread_name_prefix=thread_name)
        self.in_flight = 0
        self.fatal: BaseException | None = None
        self._timeout_s = settings.timeout_s
        # timeouts in a row that stop the stream, once timeouts have lowered the limit to 1: a request sent
        # alone spent all its attempts on silence (requests sent together may only queue at a slow server)
        self._silence = settings.max_retries + 1
        self._systemic = SystemicWatch(silence=self._silence)
        self._suspect: Rejected | None = None  # the refusal that made the systemic watch suspect the stream
        self._unanswered = 0  # units submitted and probes paid for whose answer is not accounted for yet
        self._last_timeout: ConnectorError | None = None  # the last request's that timed out: where
        # attempts sent and not yet answered (units waiting to retry are in_flight, not here)
        self._on_wire = 0
        self._waiting_for_room = 0  # retries after a timeout waiting for room under the limit
        self._sent = 0  # attempts numbered as they are sent
        self._newest_answered = 0  # the number of the newest attempt the server answered well

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def begin(self) -> None:
        """A new write or stream: no fatal error, "nothing accepted" is about this one, and its retries have
        at least the budget a new client's have. With nothing in flight, nothing is unanswered either."""
        with self.lock:
            self.fatal = None
            self._systemic, self._suspect = SystemicWatch(silence=self._silence), None
            self.retry.budget.refill()
            if self.in_flight == 0:
                self._unanswered = 0

    def set_fatal(self, exc: BaseException) -> None:
        with self.lock:
            if self.fatal is None:
                self.fatal = exc
            self.cond.notify_all()

    # -- slots, on the caller's thread --------------------------------------------------------------

    def take_slot(
        self, ready: Callable[[], bool] = lambda: True, stopped: Callable[[], bool] = lambda: False
    ) -> bool:
        """Wait for a free slot under the AIMD limit (and for ``ready()``, under the lock); False if the
        stream stopped. Nothing new starts while the stream is suspected systemic. A slot taken as the
        caller is interrupted (Ctrl-C) is given back."""
        taken = False
        try:
            with self.lock:
                while self.fatal is None and not stopped():
                    now = self.clock()
                    if not self._systemic.suspected and ready() and self.limit.can_start(self.in_flight, now):
                        self.in_flight += 1
                        taken = True
                        return True
                    hold = self.limit.wait_s(now)
                    self.cond.wait(timeout=hold if hold > 0 and not self._systemic.suspected else None)
                return False
        except BaseException:
            if taken:
                self.give_slot()
            raise

    def give_slot(self) -> None:
        with self.lock:
            self.in_flight -= 1
            self.cond.notify_all()

    def ticket(self, unit: U, on_done: Callable[[U], None] = lambda unit: None) -> _Ticket[U]:
        """``unit`` to be sent on the slot the caller took; from here on, ``on_done(unit)`` and the slot's
        release are the ticket's: the sender's once it takes it, else ``call_off``'s."""
        return _Ticket(unit, on_done)

    def send(self, ticket: _Ticket[U]) -> Future[None]:
        """Hand ``ticket`` to a sender thread. Raising (Ctrl-C, a shut-down pool), the ticket may or may
        not have been queued: the caller calls it off (``call_off``), which does nothing if a sender
        took it."""
        with self.lock:
            self._unanswered += 1
            ticket.counted = True
        return self.pool.submit(self._run_ticket, ticket)

    def call_off(self, ticket: _Ticket[U], *, done: bool = True) -> None:
        """Undo a ticket no sender took (and none will): its slot is given back, its unit counted out,
        and ``on_done`` run (with ``done``). Does nothing once a sender took it."""
        with self.lock:
            if ticket.state != _QUEUED:
                return
            ticket.state = _CALLED_OFF
            if ticket.counted:
                self._unanswered -= 1
                self._conclude_systemic()
            self.in_flight -= 1
            self.cond.notify_all()
        if done:
            ticket.on_done(ticket.unit)

    def submit(self, unit: U, on_done: Callable[[U], None] = lambda unit: None) -> Future[None]:
        """Send ``unit`` on a sender thread, on the slot the caller took; ``on_done(unit)`` and the slot's
        release run on the sender however it ends. If it cannot be submitted, the slot is given back
        (and ``on_done`` is the caller's)."""
        ticket = self.ticket(unit, on_done)
        try:
            return self.send(ticket)
        except BaseException:
            self.call_off(ticket, done=False)
            raise

    def _run_ticket(self, ticket: _Ticket[U]) -> None:
        """The work item: the slot's release and ``on_done`` run here, however the sender ends (not in a
        done-callback the caller's thread attaches, which an interrupt can leave unattached)."""
        with self.lock:
            if ticket.state != _QUEUED:
                return  # called off: the caller was interrupted before it knew this was queued
            ticket.state = _TAKEN
        try:
            self._deliver_or_stop(ticket.unit)
        finally:
            # the slot's release follows on_done whatever it does, and wakes every waiter: a channel whose
            # on_done frees something a waiter waits for (the engine's held ids) need not wake them itself
            try:
                ticket.on_done(ticket.unit)
            finally:
                self.give_slot()

    # -- one unit, on a sender thread ---------------------------------------------------------------

    def _deliver_or_stop(self, unit: U) -> None:
        try:
            self._deliver(unit)
        except (
            BaseException
        ) as exc:  # a bug on a sender thread: stop the stream and raise it, never swallow it
            self.set_fatal(exc)
            raise

    def _deliver(self, unit: U) -> None:
        """Send one unit until it lands or fails; every row ends accounted for."""
        with self.lock:
            self.isolation.on_rows_sent(len(unit))
        error, attempts = self._attempt(unit)
        if error is None:
            return
        if isinstance(error, Rejected) and not error.fatal and self.channel.isolates(error):
            if len(unit) > 1:
                self._isolate(unit, error)
            else:
                self._refused_row(unit, error, attempts)
        else:
            self._give_up(unit, error, attempts)

    def _attempt(self, unit: U) -> tuple[ConnectorError | None, int]:
        """Send with retries; ``(None, n)`` once the reply is accounted for, else the last error. The
        caller counted the request as unanswered; this counts its answer (a reply's in the same hold
        of the lock as the reply itself)."""
        answer: list[bool] = []  # set once the answer is accounted for
        try:
            return self._send_until_answered(unit, answer)
        finally:
            if not answer:
                self._answer_accounted()

    def _send_until_answered(
        self, unit: U, answer: list[bool], control: Callable[[], None] | None = None
    ) -> tuple[ConnectorError | None, int]:
        """Attempts are counted in the second item: 0 if the unit was never sent (the server had stopped
        answering before its turn). With ``control``, that request is sent instead (``unit``'s report counts
        its retries) and its reply is accounted for by the caller: one loop numbers, counts and times every
        request, so a control request's timeouts count toward the silence watch and an isolated one leaves
        the limit alone."""
        silenced = self._silenced()
        if silenced is not None:
            return silenced, 0
        attempts = 0
        last: ConnectorError | None = None  # the last attempt's error
        while True:
            after_timeout = last is not None and timed_out(last)
            start = self._start_attempt(after_timeout)
            if start is None:  # stopped before it was sent (again): nothing is sent after a stop
                return (last if last is not None else self._stop_reason()), attempts
            epoch, alone, number = start
            attempts += 1
            try:
                outcome = self.channel.send(unit) if control is None else control()
            except (ServerError, TransportError) as exc:
                congested = self._heard(exc, alone=alone, number=number)
                if self.fatal is not None:
                    return exc, attempts
                last = exc
                # it would be sent again, to a server that stopped answering: nothing more is sent
                retry = timed_out(exc) and attempts <= self.retry.max_retries
                if retry and self._silenced() is not None:
                    return exc, attempts
                if not self._may_retry(unit, exc, attempts, epoch, congested=congested):
                    return exc, attempts
                self._wait_out(self.retry.delay_s(attempts, exc, answered=self.channel.answered))
                if self.fatal is not None:  # stopped meanwhile: nothing is sent after a stop
                    return exc, attempts
                continue
            finally:
                self._off_the_wire()
            with self.lock:
                limit, suspected = self.limit.limit, self._systemic.suspected
                self._systemic.on_reply()
                self._newest_answered = max(self._newest_answered, number)
                self.retry.on_success(number)
                error = None
                if control is None:
                    try:
                        any_accepted, error = self.channel.accepted(unit, outcome)
                        if any_accepted:
                            self._systemic.on_accepted()
                    finally:
                        answer.append(True)
                        self._unanswered -= 1
                        self._conclude_systemic()
                # wake waiters only for what they wait on: a free slot comes with the slot's release
                # (each waking of the caller here found its slot still taken and cost a thread switch)
                if self.limit.limit != limit or self._systemic.suspected != suspected:
                    self.cond.notify_all()
            return error, attempts

    def _start_attempt(self, after_timeout: bool) -> tuple[int, bool, int] | None:
        """Count an attempt as on the wire; returns the limit's epoch, whether it goes alone (nothing
        else on the wire, the limit at 1) and its number (attempts are numbered as they are sent). A retry after a timeout first waits for room under the limit:
        sent at once, the retries of the requests that timed out kept a slow server's queue as long as
        the limit they started under, and the retries timed out in it too. ``None``: the stream stopped
        (or the server stopped answering) meanwhile, and nothing is sent."""
        with self.lock:
            if after_timeout:
                self._waiting_for_room += 1
                try:
                    while (
                        self.fatal is None and not self._systemic.silent and self._on_wire >= self.limit.limit
                    ):
                        self.cond.wait()
                finally:
                    self._waiting_for_room -= 1
                if self.fatal is not None or self._silenced() is not None:
                    return None
            if self.fatal is not None:  # a unit handed to its sender just before the stop
                return None
            alone = self._on_wire == 0 and self.limit.limit == 1
            self._on_wire += 1
            self._sent += 1
            return self.limit.epoch, alone, self._sent

    def _stop_reason(self) -> ConnectorError:
        """Why a unit that was never sent was not: the error that stopped the stream (a bug's stops it as a
        plain connector error naming it)."""
        fatal = self.fatal
        if isinstance(fatal, ConnectorError):
            return fatal
        return ConnectorError(f"the {self.channel.whole} stopped on {type(fatal).__name__}")

    def _off_the_wire(self) -> None:
        with self.lock:
            self._on_wire -= 1
            if self._waiting_for_room:
                self.cond.notify_all()

    def _heard(self, exc: ConnectorError, *, alone: bool, number: int) -> bool:
        """Count a request that failed: a reply (a server's error) ends a run of timeouts, a timeout adds
        to it (other transport errors, a refused connection among them, count neither way); ``alone``: it
        was sent with nothing else in flight, the limit at 1. Returns whether a timeout is a sign of
        congestion: False once an attempt sent after this one (``number``) was answered well, as a server
        that queues requests answers them in turn, not past one stuck in its queue."""
        with self.lock:
            if isinstance(exc, ServerError):
                self._systemic.on_reply()
                if not exc.retryable:  # a refusal of the rows, not of the load: the server answers
                    self._newest_answered = max(self._newest_answered, number)
            elif timed_out(exc):
                self._systemic.on_timeout(alone)
                self._last_timeout = exc
            return self._newest_answered <= number

    def _silenced(self) -> StoppedAnswering | None:
        """Before a request is sent (a unit's, or a retry): if the watch's run of timeouts is at its
        threshold, the stream stops and this is why. Not at the timeout itself: a stream whose last
        requests timed out has nothing left to stop, and its units fail with their own timeouts."""
        with self.lock:
            if not self._systemic.silent:
                return None
            error = self._stopped_answering()
            if self.fatal is None:
                self.fatal = error
                self.cond.notify_all()
            return error

    def _stopped_answering(self) -> StoppedAnswering:
        """The error that stops a stream whose server stopped answering; the last timeout (the
        transport's, which names the host and port, credentials blanked) says where."""
        last, count, whole = self._last_timeout, self._systemic.timed_out, self.channel.whole
        alone = self._systemic.alone
        before = ", though it answered before" if self.channel.answered else ""
        return StoppedAnswering(
            f"{last}; the server stopped answering: {count} requests in a row got no reply within "
            f"timeout_s={self._timeout_s:g} s{before}, the last {alone} sent alone once the timeouts had "
            f"lowered the requests in flight to 1. The {whole} stopped instead of waiting that out for "
            "every request left; if the server is only slow, raise option timeout_s"
        )

    def _wait_out(self, delay_s: float) -> None:
        """Wait before a retry (a server's hint may ask minutes); a stop (``set_fatal``, Ctrl-C or a fatal
        error of another unit) ends the wait at once. An injected ``sleep`` (tests) is the wait itself."""
        if self.sleep is not time.sleep:
            self.sleep(delay_s)
            return
        deadline = time.monotonic() + delay_s
        with self.lock:
            while self.fatal is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.cond.wait(left)

    def _may_retry(
        self, unit: U, exc: ConnectorError, attempts: int, epoch: int, *, congested: bool = True
    ) -> bool:
        with self.lock:
            counts = self.channel.counts(unit)
            return self.retry.may_retry(
                exc,
                attempts,
                epoch,
                self.clock(),
                counts,
                congested=congested,
                answered=self.channel.answered,
                sent=self._sent,
            )

    # -- isolation ----------------------------------------------------------------------------------

    def _isolate(self, unit: U, error: Rejected) -> None:
        """Split a unit refused whole until exactly the rows the server refuses are left (the walk is
        ``isolation.isolate``); stops early on a systemic cause or a fatal error, failing what is left
        with a reason that says it was not isolated."""
        isolate(unit, error, halves=self.channel.halves, probe=self._probe, may_go_on=self._may_isolate)

    def _may_isolate(self, part: U, known: Rejected, *, sending: bool = False) -> bool:
        """True if one more isolation request may be sent (with ``sending``, it is paid for and counted
        as unanswered); else ``part`` fails whole, saying why. Waits while the stream is suspected
        systemic: the verdict comes from the requests already sent."""
        with self.lock:
            while self.fatal is None and self._systemic.suspected:
                self.cond.wait()
            allowed = self.fatal is None and self.isolation.available
            spent = self.isolation.spent
            if allowed and sending:
                self.isolation.try_spend()
                self._unanswered += 1
        if allowed:
            return True
        noun, whole = self.channel.noun, self.channel.whole
        note = (
            f"not isolated: the {whole} stopped"
            if self.fatal is not None
            else f"not isolated: the isolation budget ({spent} requests) is spent; these {noun} were in "
            "a request the server refused and may be good"
        )
        # retryable: the refusal may be another row's (a write again, with a larger budget, may pass them)
        unisolated = _NotIsolated(str(known), status=known.status)
        self.channel.failed(part, unisolated, 1, note, error_type="NotIsolated")
        return False

    def _probe(self, part: U, known: Rejected) -> Rejected | object:
        """Send ``part`` whole. Returns its refusal (a single row's is accounted for here), ``ACCEPTED``,
        or ``GONE`` (failed for another reason, or not sent: budget or stop)."""
        if not self._may_isolate(part, known, sending=True):
            return GONE
        self.channel.probing(part)
        error, attempts = self._attempt(part)
        if error is None:
            return ACCEPTED
        if not isinstance(error, Rejected) or error.fatal:
            self._give_up(part, error, attempts)
            return GONE
        if len(part) == 1:
            self._refused_row(part, error, attempts)
        return error

    def _refused_row(self, row: U, error: Rejected, attempts: int) -> None:
        """One row the server refused on its own; enough of them alike, and nothing accepted, suspect
        the stream (and send the control request, if there is one, before the verdict)."""
        self.channel.failed(row, error, attempts)
        control = False
        with self.lock:
            if self._systemic.on_row_refused(str(error)) and self._suspect is None:
                self._suspect = error
                # nothing is sent after a stop: a stopped stream needs no verdict
                control = self._control is not None and self.fatal is None
                if control:
                    self._unanswered += 1  # no verdict before the control request's answer
            self._conclude_systemic()
            self.cond.notify_all()  # a disarmed watch lets waiting senders go on
        if control:
            self._send_control(row)

    def _send_control(self, row: U) -> None:
        """Send the control request (counted as unanswered by the caller): accepted, a server that
        refuses rows alike one by one still takes a good one, so they are the rows' own faults (texts
        over a model's context, refused in a constant message): disarm the watch. Refused too, the
        verdict may follow. Neither (a throttle, a 5xx, a timeout after its retries): nothing is known,
        and the suspicion is dropped (the watch counts again from nought) instead of read as a refusal."""
        verdict: bool | None = None
        try:
            verdict = self._control_verdict(row)
        finally:
            with self.lock:
                if verdict is True:
                    self._systemic.on_accepted()
                elif verdict is None and self.fatal is None:
                    self._systemic.reopen()
                    self._suspect = None
                self._unanswered -= 1
                self._conclude_systemic()
                self.cond.notify_all()

    def _control_verdict(self, row: U) -> bool | None:
        """The control request, sent and retried as any request is (``row``'s report counts its retries):
        True if accepted, False if refused (``Rejected``), ``None`` if it failed otherwise or was not sent
        (the stream stopped; a fatal error of its own, such as a revoked key, stops the stream)."""
        assert self._control is not None
        if self.fatal is not None:
            return None
        error, attempts = self._send_until_answered(row, [], control=self._control)
        if error is None:
            return True
        if attempts and self.retry.stops_stream(error, answered=self.channel.answered):
            self.set_fatal(error)
        return False if isinstance(error, Rejected) and not error.fatal else None

    def _answer_accounted(self) -> None:
        """One request's answer (or its last failure) is accounted for: a suspected stream may now be
        concluded systemic, if nothing else is unanswered."""
        with self.lock:
            self._unanswered -= 1
            self._conclude_systemic()

    def _conclude_systemic(self) -> None:
        """Under the lock: stop the stream if the systemic watch's verdict is in."""
        error = self._suspect
        if self.fatal is not None or error is None or not self._systemic.concluded(self._unanswered):
            return
        self.fatal = self.channel.systemic(self._systemic.count, error)
        self.cond.notify_all()

    def _give_up(self, unit: U, exc: ConnectorError, attempts: int) -> None:
        """Account for a unit that will not be sent again; a fatal error stops the stream, and so does
        a unit that spent its retries on a host that never answered (refused, or silent: otherwise
        every later unit waits out its timeout on it too)."""
        if attempts == 0:  # its turn came after the stream stopped: never sent
            self.channel.failed(unit, exc, 0, "not sent", error_type=STOPPED)
            return
        if self.retry.stops_stream(exc, answered=self.channel.answered):
            self.set_fatal(exc)
        stopped = self.fatal is not None and self.fatal is not exc
        note = f"not retried: the {self.channel.whole} stopped" if stopped else ""
        self.channel.failed(unit, exc, attempts, note)


_QUEUED, _TAKEN, _CALLED_OFF = 0, 1, 2


class _Ticket(Generic[U]):
    """A unit on its way to a sender, with what is owed once it is done: ``on_done`` and the slot."""

    __slots__ = ("counted", "on_done", "state", "unit")

    def __init__(self, unit: U, on_done: Callable[[U], None]) -> None:
        self.unit, self.on_done = unit, on_done
        self.state = _QUEUED  # changed under the dispatcher's lock
        self.counted = False  # counted as unanswered


class _NotIsolated(ServerError):
    """The refusal quoted for rows left in a refused request unisolated: retryable, they may be good."""

    retryable = True
