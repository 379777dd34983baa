from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from vectordb.connector.errors import (
    AuthError,
    ConnectError,
    DeadlineExceeded,
    Rejected,
    Throttled,
    Unavailable,
)
from vectordb.connector.limits import AimdLimit, Backoff, RateBudget, RetryBudget, RetryRule, SystemicWatch
from vectordb.connector.report import WriteReport


def test_throttle_halves_and_successes_grow_back() -> None:
    limit = AimdLimit(8)
    limit.on_throttle(now=0.0, retry_after_s=None)
    assert limit.limit == 4
    for _ in range(4):
        limit.on_success()
    assert limit.limit == 5


def test_one_decrease_per_epoch() -> None:
    limit = AimdLimit(16)
    epoch = limit.epoch
    for _ in range(5):  # five replies of requests that all started before the first decrease
        limit.on_throttle(now=0.0, retry_after_s=None, started_epoch=epoch)
    assert limit.limit == 8
    limit.on_throttle(now=0.0, retry_after_s=None, started_epoch=limit.epoch)
    assert limit.limit == 4


def test_retry_after_holds_new_starts() -> None:
    limit = AimdLimit(4)
    limit.on_throttle(now=10.0, retry_after_s=2.0)
    assert not limit.can_start(0, now=11.0)
    assert limit.wait_s(11.0) == 1.0
    assert limit.can_start(0, now=12.0)


def test_backoff_is_full_jitter_capped_and_honours_hint() -> None:
    backoff = Backoff(base_s=0.1, cap_s=1.0, rand=lambda: 1.0)
    assert [round(backoff.delay_s(a), 3) for a in (1, 2, 3, 4, 5)] == [0.2, 0.4, 0.8, 1.0, 1.0]
    assert Backoff(rand=lambda: 0.0).delay_s(1) == 0.0
    assert Backoff(rand=lambda: 0.0).delay_s(1, retry_after_s=3.0) == 3.0


def test_retry_budget_runs_out_and_refills() -> None:
    budget = RetryBudget(initial=2, max_tokens=3)
    assert budget.try_spend() and budget.try_spend()
    assert not budget.try_spend()
    budget.on_success()
    assert budget.try_spend()


def test_rate_budget_paces_rows() -> None:
    rate = RateBudget(rows_per_s=100, bytes_per_s=None, now=0.0)
    assert rate.delay_for(10, 0, now=0.0) == 0.0  # a tenth of a second's burst
    assert rate.delay_for(50, 0, now=0.0) == pytest.approx(0.5)
    assert rate.delay_for(10, 0, now=2.0) == 0.0  # idle time refills no more than the burst
    assert rate.delay_for(50, 0, now=2.0) == pytest.approx(0.5)


def test_rate_budget_paces_bytes() -> None:
    rate = RateBudget(rows_per_s=None, bytes_per_s=1000, now=0.0)
    assert rate.delay_for(1, 3000, now=0.0) == pytest.approx(2.9)


class AimdMachine(RuleBasedStateMachine):
    """The limit stays within [1, ceiling] whatever replies arrive, in any order."""

    def __init__(self) -> None:
        super().__init__()
        self.ceiling = 16
        self.limit = AimdLimit(self.ceiling)
        self.now = 0.0

    @rule()
    def success(self) -> None:
        before = self.limit.limit
        self.limit.on_success()
        assert self.limit.limit in (before, before + 1)

    @rule(stale=st.booleans(), hint=st.one_of(st.none(), st.floats(0, 5)))
    def throttle(self, stale: bool, hint: float | None) -> None:
        before = self.limit.limit
        epoch = self.limit.epoch - 1 if stale else self.limit.epoch
        self.limit.on_throttle(self.now, hint, epoch)
        assert self.limit.limit == (before if stale else max(1, before // 2))

    @rule(dt=st.floats(0, 3))
    def tick(self, dt: float) -> None:
        self.now += dt

    @invariant()
    def bounded(self) -> None:
        assert 1 <= self.limit.limit <= self.ceiling
        assert not self.limit.can_start(self.limit.limit, self.now)


TestAimdMachine = AimdMachine.TestCase


def test_a_host_that_went_down_is_waited_for_long_enough_to_restart() -> None:
    backoff = Backoff(rand=lambda: 1.0)
    failed_request = [backoff.delay_s(a) for a in range(1, 6)]
    host_down = [backoff.delay_s(a, host_down=True) for a in range(1, 6)]
    assert failed_request == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6])
    assert host_down == pytest.approx([1.0, 2.0, 4.0, 8.0, 10.0])  # 25 s at most over the default retries
    unlucky = Backoff(rand=lambda: 0.0)  # the shortest draws: a restart of seconds is still waited for
    assert sum(unlucky.delay_s(a, host_down=True) for a in range(1, 6)) == pytest.approx(12.5)
    assert sum(unlucky.delay_s(a) for a in range(1, 6)) == 0.0  # a failed request: full jitter


def test_the_retry_rule_stops_the_stream_on_fatal_errors_and_on_hosts_that_never_answered() -> None:
    timeout = DeadlineExceeded("127.0.0.1:1: no answer within 0.5 s")
    unavailable = Unavailable("503 from 127.0.0.1:1", status=503)
    assert RetryRule.stops_stream(AuthError("401", status=401), answered=True)
    assert RetryRule.stops_stream(timeout, answered=False)
    assert RetryRule.stops_stream(ConnectError("refused"), answered=False)
    assert not RetryRule.stops_stream(timeout, answered=True)  # a host that answered may be restarting
    assert not RetryRule.stops_stream(unavailable, answered=False)  # it answered: with a 503


def test_the_retry_rule_spends_attempts_and_budget_and_lowers_the_limit_on_throttles() -> None:
    rule = RetryRule(max_concurrency=8, max_retries=2, rand=lambda: 1.0)
    counts = WriteReport()
    unavailable = Unavailable("503", status=503)
    assert rule.may_retry(unavailable, attempts=2, epoch=rule.limit.epoch, now=0.0, counts=counts)
    assert not rule.may_retry(unavailable, attempts=3, epoch=rule.limit.epoch, now=0.0, counts=counts)
    assert not rule.may_retry(
        Rejected("400", status=400), attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts
    )
    throttled = Throttled("429", status=429, retry_after_s=3.0)
    assert rule.may_retry(throttled, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
    assert rule.limit.limit == 4
    assert rule.delay_s(1, throttled, answered=True) == 3.0  # the server's hint, over the jitter's 0.1 s
    assert rule.delay_s(1, ConnectError("refused"), answered=True) == 1.0  # a host down: restarting
    spent = 0
    while rule.may_retry(unavailable, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts):
        spent += 1
    # the budget, less the one retry of an error above and the throttle's: none was accepted since
    # the throttling began
    assert spent == RetryBudget.for_concurrency(8).tokens - 2
    assert (counts.throttled, counts.retries) == (1, spent + 2)  # the caller's report counts them
    rule.on_success()
    assert rule.may_retry(unavailable, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)


def test_a_throttle_spends_the_budget_only_while_no_request_was_accepted_since_the_throttling_began() -> None:
    rule = RetryRule(max_concurrency=4, max_retries=5)
    counts = WriteReport()
    throttled = Throttled("429", status=429)
    tokens = rule.budget.tokens
    assert rule.may_retry(throttled, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
    assert rule.budget.tokens == tokens - 1  # every request throttled so far: spends
    rule.on_success()  # the server accepts some: the throttles that follow are free
    for _ in range(5):
        before = rule.budget.tokens
        for _ in range(int(rule.budget.initial)):  # as many as the budget's first tokens between accepts
            assert rule.may_retry(throttled, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
        assert rule.budget.tokens == before  # none spent
        rule.on_success()
    tokens = rule.budget.tokens
    for _ in range(4):  # accepted freely again: the throttling is over, the next one begins another
        rule.on_success()
    assert rule.may_retry(throttled, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
    assert rule.budget.tokens == tokens + 4 - 1
    while rule.may_retry(throttled, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts):
        pass  # a quota spent for good: the budget drains and the rows fail
    assert rule.budget.tokens < 1


def test_one_late_accept_does_not_keep_every_later_throttle_free() -> None:
    """A quota ran out for good while a request was on the wire: its reply, accepted after the first
    throttle, made every later throttle free, so each batch was retried max_retries times with long waits
    (hours for a large write). Past the budget's first tokens of throttles since the last accept, throttles
    spend again and the budget drains."""
    rule = RetryRule(max_concurrency=4, max_retries=5)
    counts = WriteReport()
    throttled = Throttled("429", status=429)
    assert rule.may_retry(throttled, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
    rule.on_success()  # the late reply
    allowed = 0
    while allowed < 10_000 and rule.may_retry(
        throttled, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts
    ):
        allowed += 1
    assert allowed <= 2 * rule.budget.initial + 1, allowed


def test_silence_is_timeouts_in_a_row_and_any_reply_starts_the_count_again() -> None:
    watch = SystemicWatch(silence=3)

    def timeouts(count: int, into: SystemicWatch = watch) -> bool:
        for _ in range(count):
            into.on_timeout()
        return into.silent

    assert not timeouts(2)
    watch.on_reply()  # an answer, an error's too: the server is there
    assert not timeouts(2)
    assert timeouts(1) and watch.timed_out == 3
    watch.on_accepted()  # accepts disarm the refusal watch, not the silence one
    assert timeouts(1)
    assert not timeouts(1000, SystemicWatch())  # no silence threshold: never


def test_a_timeout_halves_the_limit_once_per_epoch_as_a_throttle_does() -> None:
    rule = RetryRule(max_concurrency=32, max_retries=2)
    counts, epoch = WriteReport(), rule.limit.epoch
    for _ in range(20):  # a burst of requests that all started before the first decrease
        rule.may_retry(DeadlineExceeded("no reply"), attempts=1, epoch=epoch, now=0.0, counts=counts)
    assert rule.limit.limit == 16 and counts.throttled == 0
    rule.may_retry(DeadlineExceeded("no reply"), attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
    assert rule.limit.limit == 8
    assert rule.limit.wait_s(0.0) == 0.0  # no hold: a timeout gives no time to wait


def test_silence_counts_only_requests_sent_alone() -> None:
    watch = SystemicWatch(silence=3)
    for _ in range(100):  # requests sent together: they may time out queued behind each other
        watch.on_timeout(alone=False)
    assert not watch.silent and watch.timed_out == 100
    watch.on_timeout(alone=True)
    watch.on_timeout(alone=True)
    assert not watch.silent
    watch.on_timeout(alone=True)
    assert watch.silent and watch.alone == 3


def test_an_isolated_timeout_leaves_the_limit_alone() -> None:
    rule = RetryRule(max_concurrency=32, max_retries=2)
    counts = WriteReport()
    for _ in range(5):  # a request sent later was answered first: one slow request, not a queue
        assert rule.may_retry(
            DeadlineExceeded("no reply"),
            attempts=1,
            epoch=rule.limit.epoch,
            now=0.0,
            counts=counts,
            congested=False,
        )
    assert rule.limit.limit == 32 and counts.retries == 5
    rule.may_retry(DeadlineExceeded("no reply"), attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
    assert rule.limit.limit == 16  # congestion (the default): halved


def test_a_restart_is_ridden_out_after_the_budget_is_spent_until_one_request_runs_out_of_patience() -> None:
    """The requests in flight during a restart spent the budget (4 x max_concurrency) within four retries,
    and every request after that failed at its first 503 or refused connection: an 11 s restart failed
    nearly every row of a write at max_concurrency 8. A host that answered before is now given each
    request's attempts whatever the budget, until one request spent them all with none accepted since."""
    rule = RetryRule(max_concurrency=8, max_retries=5)
    counts = WriteReport()
    epoch = rule.limit.epoch
    while rule.budget.try_spend():
        pass
    for exc in (Unavailable("503", status=503), ConnectError("refused")):
        assert rule.may_retry(exc, attempts=1, epoch=epoch, now=0.0, counts=counts, answered=True)
        assert not rule.may_retry(exc, attempts=1, epoch=epoch, now=0.0, counts=counts)  # never answered
    # a timeout is the silence watch's, and a refusal is no outage
    assert not rule.may_retry(
        DeadlineExceeded("no reply"), attempts=1, epoch=epoch, now=0.0, counts=counts, answered=True
    )
    assert not rule.may_retry(
        Throttled("429", status=429), attempts=1, epoch=epoch, now=0.0, counts=counts, answered=True
    )
    unavailable = Unavailable("503", status=503)
    assert not rule.may_retry(unavailable, attempts=6, epoch=epoch, now=0.0, counts=counts, answered=True)
    # one request's patience ran out with the host still down: the rest fail fast
    assert not rule.may_retry(unavailable, attempts=1, epoch=epoch, now=0.0, counts=counts, answered=True)
    rule.on_success()  # back: the earned token, then again each request's attempts
    assert rule.may_retry(unavailable, attempts=1, epoch=epoch, now=0.0, counts=counts, answered=True)
    assert rule.may_retry(unavailable, attempts=2, epoch=epoch, now=0.0, counts=counts, answered=True)


def test_a_throttle_that_is_not_retried_does_not_hold_new_starts() -> None:
    """A quota spent for good with Retry-After on every reply: each throttle held new starts for the hint
    although the budget was spent and its request failed, so each next batch waited the hint (Retry-After
    1 on 60 batches: 76 s instead of 20). Only a throttle that is retried holds new starts now."""
    rule = RetryRule(max_concurrency=4, max_retries=3)
    counts = WriteReport()
    throttled = Throttled("429", status=429, retry_after_s=60.0)
    assert rule.may_retry(throttled, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
    assert rule.limit.wait_s(0.0) == 60.0  # retried: new starts wait for the hint too
    now = 60.0
    while rule.may_retry(throttled, attempts=1, epoch=rule.limit.epoch, now=now, counts=counts):
        now += 60.0
    assert rule.limit.wait_s(now) == 0.0  # spent: its request fails and holds nothing
    assert not rule.may_retry(throttled, attempts=4, epoch=rule.limit.epoch, now=now + 1, counts=counts)
    assert rule.limit.wait_s(now + 1) == 0.0
