"""Pure decision state for the engine: the in-flight limit, backoff delays, retry and rate budgets.

No clocks and no threads here: every method takes ``now`` (monotonic seconds) where time
matters, so the rules can be tested exactly.

AIMD. The engine may start a request while fewer than ``limit`` are in flight. A throttled
reply, or a request with no reply within its timeout (a slow server's queue: it serves the requests
the client gave up on, so a limit kept at its ceiling kept the queue full), halves the limit (floor 1),
and a throttle that is retried holds new starts until the server's ``retry_after_s`` has passed (one
that is not, its budget spent, holds nothing: each next batch waited out the hint of a quota spent
for good); at most one decrease per "epoch" (until a request started after the decrease comes back),
so one burst of throttled replies halves the limit once, not once per reply.
A timeout halves it only as a sign of congestion: the engine tells an isolated one (a request sent
later was answered first, so the server is not working through a queue) and it leaves the limit alone.
After ``limit`` successes in a row the limit grows by one, up to ``ceiling``.

Backoff. Capped full jitter: a delay drawn uniformly from [0, min(cap, base · 2^attempt)],
but never less than the server's hint.

Retry budget. A token bucket shared by all requests of a client: each success deposits
one token (up to ``max_tokens``), each retry of an error withdraws one. When a server is down,
retries stop after the bucket is empty instead of multiplying the load by ``max_retries``. Not for a
host that answered before and now refuses connections or says it is unavailable (a restart): the
requests in flight spent the bucket within a few retries and every later one failed at once, so such a
request keeps its attempts (its long waits bound the load) until one request has spent them all with
none accepted since; then the host is down for good and its errors fail rows fast again. A
throttle spends none while the server is accepting some requests (one sent after the throttling
began was accepted: the reply of one sent before, a late reply, is no sign that the server takes
requests now): a rate limit says the server is there and will take the request later (AIMD
and the backoff slow the client down), and a burst of them drained the bucket the errors need, so
throttled requests got one attempt. While every request is throttled and none accepted since the
throttling began, each throttled retry spends a token as an error's does: a quota spent for good
that says nothing more (a gRPC ``RESOURCE_EXHAUSTED``, a bare 429) then fails rows fast instead
of waiting out ``max_retries`` throttle backoffs for every batch (a quota that says so, OpenAI's
``insufficient_quota``, is fatal at once). The throttling is over once ``max(2, ceiling)``
requests in a row are accepted; the next throttle begins another. A throttle is free only within the
bucket's first tokens of throttles since the last accept, so one late reply (a request sent before a
quota ran out for good) does not keep every later throttle free.

Throttle backoff. A throttle whose reply says when to come back (``Retry-After`` and kin) waits
that long while the server accepts some requests (a rate limit: its window's end, and a longer wait put
the request behind the new ones, which took the next window's room); the same request throttled again
after waiting it waits at least the throttle backoff of its attempt before (0.5-1, 1-2 s...): a hint
shorter than the window (50 ms from a window of a second) spent six attempts within 0.3 s. One that says nothing (or 0 s:
no window's end; retried at once, a request spent its attempts within a window of a few requests that
the throttling outlasted, as fewer than ``max(2, ceiling)`` accepts in a row do not end it), and any
throttle while none was accepted since the throttling began, waits far longer than a failed request
(rate-limit windows are seconds to a minute): equal jitter from 0.5-1 s, doubling, each wait at most
``throttle_cap_s`` (the request's timeout, up to a minute), or the hint if longer: 15.5 s at least over
the default 5 retries. A late reply is no accept here either: at a limit of N requests per window
the window's last accepts came back after its first throttle, and throttles retried at their 0 s hint
spent their attempts before the window rolled. Before any accept a hint is no promise: a cold or busy
index throttled every request for seconds with a 50 ms or 1 s hint, and retries that waited the hint
alone spent their attempts, and the budget, within about 20 hints, failing a write the server then
took whole. With the backoff, a request's fourth retry comes 7.5 s after its first throttle at the
earliest, and the budget
holds four retries for each request in flight (five at the default ``max_concurrency``), so at the
default ``max_retries`` and ``timeout_s`` throttling of less than the first 7.5 s of a write fails no
row, whatever the hints say; a quota spent for good fails after the same 20 retries as without a hint.

Isolation budget. A batch the server refuses whole is split until exactly the refused rows
are left (the engine's ``_isolate``); each request that costs is one token. The bucket starts
with ``reserve`` tokens and earns ``per_row`` for every row sent in a first attempt, with no
ceiling: at any moment, isolating has spent at most ``reserve + per_row * rows sent``, the bound
the README states, whatever the concurrency (a ceiling threw away what the batches in flight had
earned, and good rows failed long before the bound). One bad row in a batch of ``n`` costs about
1.5 log2(n) + 1 requests, ``k`` bad rows about 2k + 1.5 k log2(n/k); a batch of ``n`` costs at most
2n - 2, so ``per_row`` = 2 isolates everything. When it is spent, the rows of a refused batch
fail together, with a reason that says they were not isolated.

Systemic stop. While no row of the write has been accepted, rows refused one by one with one
identical reason are counted; at ``threshold`` the whole write is suspected (a schema or a limit
of the target, not its rows). A suspicion is not a verdict: requests still unanswered may be
accepts (a server can refuse faster than it accepts), so the engine sends nothing new and waits
for them; the write stops only if none of them was accepted. One accepted row, or two different
reasons, disarm it for good.

Silence. A server that answered and then hangs makes every request wait out its timeout, and be
retried: at the defaults (30 s, 5 retries) 10,000 batches took about 20 hours to fail. Requests that
end in a timeout with no reply at all are counted in a row (any reply, an error's too, starts the
count again), and so are those of them sent alone (nothing else in flight, the limit at 1); at
``max_retries + 1`` of those, one request's attempts, the next request (a retry or a new batch) is not
sent and the write stops. Requests sent together are not enough: at a slow server they time out
queued behind each other, and every one of them timed out while the server answered them all. A
write whose last requests timed out has nothing left to stop: its rows fail with their timeouts. A
slow server that answers some requests is not stopped.

Rate budget. A token bucket for rows and bytes per second (the job-wide budget divided by
the tasks that run at once); ``delay_for`` says how long to wait before sending a batch.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Protocol

from .errors import (
    MAX_HINT_S,
    ConnectError,
    ConnectorError,
    ConnectTimeout,
    DeadlineExceeded,
    ServerError,
    Throttled,
    TransportError,
    Unavailable,
)

__all__ = [
    "MAX_EMBED_INPUTS",
    "AimdLimit",
    "Backoff",
    "IsolationBudget",
    "RateBudget",
    "RetryBudget",
    "RetryCounts",
    "RetryRule",
    "SystemicWatch",
    "timed_out",
]

MAX_EMBED_INPUTS = 2048  # texts an embedding request may carry: OpenAI's limit (its API reference)


class AimdLimit:
    """Halve on throttle (floor 1), at most once per epoch; +1 after ``limit`` successes in a row."""

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError("ceiling must be at least 1")
        self.ceiling = self.limit = ceiling
        self._streak = 0
        self._hold_until = 0.0
        self._epoch = 0  # bumped on each decrease; requests remember the epoch they started in

    @property
    def epoch(self) -> int:
        return self._epoch

    def can_start(self, in_flight: int, now: float) -> bool:
        return now >= self._hold_until and in_flight < self.limit

    def wait_s(self, now: float) -> float:
        """Seconds until the server's hold expires (0 if none)."""
        return max(0.0, self._hold_until - now)

    def on_success(self) -> None:
        self._streak += 1
        if self._streak >= self.limit:
            self._streak, self.limit = 0, min(self.ceiling, self.limit + 1)

    def on_throttle(self, now: float, retry_after_s: float | None, started_epoch: int | None = None) -> None:
        self.hold(now, retry_after_s)
        self.on_congestion(started_epoch)

    def hold(self, now: float, retry_after_s: float | None) -> None:
        """Hold new starts until the server's hint has passed: its throttled request will be sent again then."""
        if retry_after_s:
            self._hold_until = max(self._hold_until, now + retry_after_s)

    def on_congestion(self, started_epoch: int | None = None) -> None:
        """A sign of congestion without a hint: a throttle's, or a request with no reply in time (a server
        whose queue holds more than it serves within the timeout). Halves once per epoch."""
        self._streak = 0
        if started_epoch is not None and started_epoch != self._epoch:
            return  # this request started before the last decrease: that decrease already counted it
        self.limit = max(1, self.limit // 2)
        self._epoch += 1


class Backoff:
    """Capped full-jitter exponential backoff that honours the server's hint.

    A server that answered before and now cannot be reached is most likely restarting, which takes
    seconds: its retries wait longer (``down_base_s``: 0.5-1, 1-2, 2-4, 4-8, 5-10 s, 12.5 s at least
    and about 19 s on average over the default 5 retries, against 1.6 s at most for a failed request)
    so a write rides out a restart instead of failing the rows in flight. Those delays take half
    their ceiling for sure ("equal jitter"): with full jitter, five draws could add up to a second or
    two and give up during a restart that takes four. A host that never answered gets no such
    patience (the engine stops the write)."""

    def __init__(
        self,
        base_s: float = 0.05,
        cap_s: float = 10.0,
        rand: Callable[[], float] = random.random,
        down_base_s: float = 0.5,
        throttle_base_s: float = 0.5,
        throttle_cap_s: float = 60.0,
    ) -> None:
        self.base_s, self.cap_s, self._rand, self.down_base_s = base_s, cap_s, rand, down_base_s
        self.throttle_base_s, self.throttle_cap_s = throttle_base_s, throttle_cap_s

    def delay_after(
        self, attempt: int, exc: ConnectorError, *, answered: bool, accepting: bool = True
    ) -> float:
        """Delay before retry ``attempt`` of a request that failed with ``exc``: the server's hint
        honoured (a throttle's first retry waits it alone; a later one at least the throttle backoff of the
        attempt before), a throttle without one (or with 0 s) waited out (``throttle_delay_s``), and a host
        that ``answered`` before and now cannot be reached given time to restart. A throttle while nothing was ``accepting``
        since the throttling began waits at least the throttle backoff, whatever its hint: a cold or busy
        server gave short hints for seconds, and retries that waited them alone failed the write."""
        hint = exc.retry_after_s if isinstance(exc, ServerError) else None
        if isinstance(exc, Throttled):
            if not hint or not accepting:
                return max(self.throttle_delay_s(attempt), min(hint or 0.0, MAX_HINT_S))
            if attempt > 1:
                # throttled again after waiting its hint: the hint proved short (a 50 ms hint from a window of a
                # second had six attempts spent within 0.3 s), so from here it is a floor under the throttle backoff
                return max(self.throttle_delay_s(attempt - 1), min(hint, MAX_HINT_S))
        return self.delay_s(attempt, hint, host_down=answered and isinstance(exc, ConnectError | Unavailable))

    def throttle_delay_s(self, attempt: int) -> float:
        """Delay before retry ``attempt`` of a throttled request, its hint aside: equal jitter from
        ``throttle_base_s`` (0.5-1, 1-2, 2-4, 4-8, 8-16 s), each at most ``throttle_cap_s``."""
        ceiling = min(self.throttle_cap_s, 2 * self.throttle_base_s * (2 ** max(0, attempt - 1)))
        return ceiling * (0.5 + 0.5 * self._rand())

    def delay_s(self, attempt: int, retry_after_s: float | None = None, *, host_down: bool = False) -> float:
        """Delay before retry number ``attempt`` (1 = the first retry)."""
        base = self.down_base_s if host_down else self.base_s
        ceiling = min(self.cap_s, base * (2 ** max(0, attempt)))
        delay = ceiling * (0.5 + 0.5 * self._rand()) if host_down else self._rand() * ceiling
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, MAX_HINT_S))
        return delay


class RetryBudget:
    """Token bucket: retries spend a token, successes earn one; starts with ``initial`` tokens."""

    def __init__(self, initial: float = 20.0, max_tokens: float = 100.0, per_success: float = 1.0) -> None:
        self.tokens, self.max_tokens, self.per_success = initial, max_tokens, per_success
        self.initial = initial

    def refill(self) -> None:
        """A new write starts with at least the first tokens: a storm an earlier write met (an outage
        since over) must not fail the next one's rows at their first transient error, unretried."""
        self.tokens = max(self.tokens, self.initial)

    @classmethod
    def for_concurrency(cls, max_concurrency: int) -> RetryBudget:
        """20 tokens, or twice the first burst of throttles (2 x 2 x ``max_concurrency``) if more."""
        initial = max(20.0, 4.0 * max_concurrency)
        return cls(initial=initial, max_tokens=max(100.0, initial))

    def on_success(self) -> None:
        self.tokens = min(self.max_tokens, self.tokens + self.per_success)

    def try_spend(self) -> bool:
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class RetryCounts(Protocol):
    throttled: int
    retries: int


class RetryRule:
    """Whether a failed request is sent again, after how long, and whether its failure stops the whole
    stream: one rule for the upsert engine and the embedding client, which keep their own counters."""

    def __init__(
        self,
        max_concurrency: int,
        max_retries: int,
        rand: Callable[[], float] = random.random,
        *,
        throttle_cap_s: float = 60.0,
    ) -> None:
        self.limit = AimdLimit(max_concurrency)
        self.budget = RetryBudget.for_concurrency(max_concurrency)
        self.backoff = Backoff(rand=rand, throttle_cap_s=throttle_cap_s)
        self.max_retries = max_retries
        self._throttling = False  # a throttle since the server last accepted requests freely
        self._accepting = False  # and a request sent after that throttling began accepted since
        self._began = 0  # attempts sent (numbered as sent) when the throttle that began it came back
        self._accepted_in_a_row = 0
        self._free_again = max(2, max_concurrency)  # accepted in a row: the throttling is over
        # throttles since the last request accepted that are still free: past them, one late reply (a request
        # sent before a quota ran out for good) no longer keeps every later throttle free
        self._throttles_since_accepted = 0
        self._free_throttles = int(self.budget.initial)
        # a request spent all its attempts on a host that is down, none accepted since: the outage outlasted
        # one request's patience, and host-down errors spend the budget again (then fail fast)
        self._down_for_good = False

    def on_success(self, number: int | None = None) -> None:
        """A request accepted; ``number``: its attempt's, in the order attempts were sent (``None``: unknown,
        taken as sent after any throttle). One sent before the throttle that began the throttling came back
        (a late reply, or one sent with it, which the server may have taken first) says nothing of the
        server accepting now: at a limit of N requests per window the window's last accepts came back
        after its first throttle, and taken as "accepting" they had the throttled requests retried at a
        hint of 0 s, which spent their attempts before the window rolled."""
        self.limit.on_success()
        self.budget.on_success()
        self._throttles_since_accepted = 0
        self._down_for_good = False
        if self._throttling:
            if number is None or number > self._began:
                self._accepting = True
            self._accepted_in_a_row += 1
            if self._accepted_in_a_row >= self._free_again:
                self._throttling = self._accepting = False

    def _throttle_is_free(self, sent: int | None) -> bool:
        """A throttle (``sent`` attempts sent as it came back): free while the server accepted a request
        sent after the throttling began, and not more throttles than the budget's first tokens came since
        the last one it accepted."""
        self._accepted_in_a_row = 0
        self._throttles_since_accepted += 1
        if not self._throttling:
            self._throttling, self._accepting = True, False
            self._began = sent or 0
        return self._accepting and self._throttles_since_accepted <= self._free_throttles

    def may_retry(
        self,
        exc: ConnectorError,
        attempts: int,
        epoch: int,
        now: float,
        counts: RetryCounts,
        *,
        congested: bool = True,
        answered: bool = False,
        sent: int | None = None,
    ) -> bool:
        """After failed attempt number ``attempts`` (started in ``epoch``): a throttle lowers the limit,
        and so does a timeout unless it is isolated (``congested`` False: a request sent after it was
        answered first); no when the error is fatal or not retryable, the attempts are spent, or the
        retry budget is (spent by an error, and by a throttle while no request was accepted since the
        throttling began). ``counts`` (the caller's report) counts the throttles and the retries;
        ``sent``: how many attempts were sent so far, numbered in order (see ``on_success``).

        ``answered``: the host answered before; now it cannot be reached or says it is unavailable (a restart).
        With the budget spent, such a request still gets its attempts (their long waits are the load's
        bound): the requests in flight spent the budget within a few retries, so every later one failed at
        once and a restart of 11 s failed nearly every row of a write. Only until one request spent all its
        attempts that way with none accepted since: then the host is down for good and the rows fail fast.
        A throttle holds new starts for its hint only if it is retried: one that is not (a quota spent for
        good) held each next batch for the hint, and a write took batches x hint to fail."""
        free = False
        if isinstance(exc, Throttled):
            counts.throttled += 1
            self.limit.on_congestion(epoch)
            free = self._throttle_is_free(sent)
        elif timed_out(exc) and congested:
            # a slow server's queue: requests past their timeout are served anyway, after the client gave
            # up on them; unlowered, the limit kept that queue full and every request timed out
            self.limit.on_congestion(epoch)
        if exc.fatal or not exc.retryable:
            return False
        # not a timeout: a silent server is the silence watch's (StoppedAnswering)
        host_down = answered and isinstance(exc, ConnectError | Unavailable) and not timed_out(exc)
        if attempts > self.max_retries:
            if host_down:
                self._down_for_good = True  # its patience ran out with the host still down
            return False
        if not free and not self.budget.try_spend() and not (host_down and not self._down_for_good):
            return False
        if isinstance(exc, Throttled):
            self.limit.hold(now, exc.retry_after_s)
        counts.retries += 1
        return True

    def delay_s(self, attempts: int, exc: ConnectorError, *, answered: bool) -> float:
        """The backoff's delay; for a throttle while none was accepted since the throttling began, at least
        the throttle backoff, whatever its hint: a cold or busy index gave short hints for seconds, and
        retries that waited them alone failed the write (a rate limit that accepts some keeps its hint)."""
        return self.backoff.delay_after(attempts, exc, answered=answered, accepting=self._accepting)

    @staticmethod
    def stops_stream(exc: ConnectorError, *, answered: bool) -> bool:
        """A fatal error, or a transport error from a host that has not answered once (refused, or
        silent: otherwise every later request waits out its timeout on it too)."""
        return exc.fatal or (isinstance(exc, TransportError) and not answered)


def timed_out(exc: ConnectorError) -> bool:
    """No reply at all within ``timeout_s``: the request's, or its connection's (a server frozen with its
    port open accepts the connection and leaves the handshake unanswered: a gRPC or PostgreSQL client
    that dropped its timed-out connection meets that next). A refused connection (a server restarting)
    is no timeout."""
    return isinstance(exc, (DeadlineExceeded, ConnectTimeout))


class IsolationBudget:
    """Requests that isolating refused rows may spend: ``reserve``, plus ``per_row`` per row sent."""

    def __init__(self, per_row: float, reserve: float = 1000.0) -> None:
        self.per_row, self.reserve = per_row, reserve
        self.tokens = reserve if per_row > 0 else 0.0
        self.spent = 0

    def on_rows_sent(self, rows: int) -> None:
        if self.per_row > 0:
            self.tokens += rows * self.per_row

    @property
    def available(self) -> bool:
        return self.tokens >= 1.0

    def try_spend(self) -> bool:
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        self.spent += 1
        return True


class SystemicWatch:
    """Tells a whole-write cause from bad rows: ``threshold`` single-row refusals alike, none accepted,
    and none of the requests that were unanswered then accepted either. And a server that stopped
    answering: ``silence`` requests in a row that timed out with no reply at all."""

    def __init__(self, threshold: int = 32, silence: int | None = None) -> None:
        self.threshold = threshold
        self.armed = True
        self.reason: str | None = None
        self.count = 0
        self.silence = silence  # None: never concluded from timeouts
        self.timed_out = 0  # requests in a row that ended in a timeout, no reply at all
        self.alone = 0  # and of them, the last ones in a row that were sent alone

    def on_reply(self) -> None:
        """Any reply, an error's too: the server is answering."""
        self.timed_out = self.alone = 0

    def on_timeout(self, alone: bool = True) -> None:
        """A request got no reply within its timeout; ``alone``: it was the only one in flight, the limit
        at 1 (``silent`` once ``silence`` of those came in a row). Requests sent together may time out in a
        slow server's queue, behind each other; one alone has no queue of the client's to wait behind."""
        self.timed_out += 1
        if alone:
            self.alone += 1

    @property
    def silent(self) -> bool:
        return self.silence is not None and self.alone >= self.silence

    def on_accepted(self) -> None:
        self.armed = False

    def reopen(self) -> None:
        """The suspicion could not be tested (the control request failed for another reason): count the
        refusals again from nought, and suspect again at ``threshold`` more."""
        self.count = 0

    def on_row_refused(self, reason: str) -> bool:
        """Count a row refused on its own; True while the write is suspected."""
        if not self.armed:
            return False
        if self.reason is not None and reason != self.reason:
            self.armed = False  # rows refused for different reasons: their own faults
            return False
        self.reason = reason
        self.count += 1
        return self.suspected

    @property
    def suspected(self) -> bool:
        """Enough single rows were refused alike and none accepted: send nothing new until the
        requests in flight answer."""
        return self.armed and self.count >= self.threshold

    def concluded(self, unanswered: int) -> bool:
        """The verdict: suspected, and no request that could still be accepted is unanswered."""
        return self.suspected and unanswered == 0


class RateBudget:
    """Rows and bytes per second; ``None`` means unbounded.

    The buckets hold ``BURST_S`` seconds' worth: a task that starts late, or waited on a slow reply,
    catches up by at most that much, so a job-wide budget split among tasks holds second by second
    (a bucket of one second's worth let each late task add a second's rows at once).
    """

    BURST_S = 0.1

    def __init__(self, rows_per_s: float | None, bytes_per_s: float | None, now: float) -> None:
        self.rows_per_s, self.bytes_per_s = rows_per_s, bytes_per_s
        self._rows_cap = (rows_per_s or 0.0) * self.BURST_S
        self._bytes_cap = (bytes_per_s or 0.0) * self.BURST_S
        self._rows, self._bytes = self._rows_cap, self._bytes_cap
        self._last = now

    @property
    def unbounded(self) -> bool:
        return self.rows_per_s is None and self.bytes_per_s is None

    def delay_for(self, rows: int, nbytes: int, now: float) -> float:
        """Take ``rows``/``nbytes`` from the buckets; return how long to wait before sending them."""
        elapsed = max(0.0, now - self._last)
        self._last = now
        wait = 0.0
        if self.rows_per_s is not None:
            self._rows = min(self._rows_cap, self._rows + elapsed * self.rows_per_s) - rows
            wait = max(wait, -self._rows / self.rows_per_s)
        if self.bytes_per_s is not None:
            self._bytes = min(self._bytes_cap, self._bytes + elapsed * self.bytes_per_s) - nbytes
            wait = max(wait, -self._bytes / self.bytes_per_s)
        return wait
