"""Rate limits: a 429 says when to come back in ``Retry-After``, Azure's ``retry-after-ms`` or OpenAI's
``x-ratelimit-reset-requests``/``-tokens`` (``"3s"``, ``"6m0s"``, ``"120ms"``), or not at all. Only
``Retry-After`` was read, a throttle without it was retried after 0.05-1.6 s, and throttles drained the
retry budget meant for errors: a rate limit of a second or two failed rows (throttled requests got
one attempt once the budget ran dry)."""

from __future__ import annotations

import time

import pytest

from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer, Fault
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.errors import Throttled, Unavailable
from vectordb.connector.limits import Backoff, RetryRule
from vectordb.connector.redaction import Secrets
from vectordb.connector.report import WriteReport
from vectordb.connector.transports import http


def embed_through(server: EmbeddingsServer, n: int = 200) -> tuple[EmbeddingClient, float, int]:
    options = {"url": server.url, "model": "test-embed-64", "api_key": DEFAULT_KEY}
    with EmbeddingClient(parse_embed_options(options | {"batch_size": 10, "max_concurrency": 4})) as client:
        start = time.monotonic()
        result = client.embed([f"text {i}" for i in range(n)])
        return client, time.monotonic() - start, len(result.failures)


@pytest.mark.parametrize("hint", ["none", "retry-after-ms", "openai"])
def test_a_rate_limit_of_seconds_fails_no_input(hint: str) -> None:
    with EmbeddingsServer(throttle_s=2.0, throttle_hint=hint) as server:  # type: ignore[arg-type]
        client, elapsed, failed = embed_through(server)
    assert failed == 0 and client.stats.embedded == 200
    assert client.stats.throttled >= 1 and elapsed < 10


def test_the_reset_headers_are_waited_out_not_guessed() -> None:
    with EmbeddingsServer(throttle_s=1.5, throttle_hint="openai") as server:
        _, elapsed, failed = embed_through(server)
    assert failed == 0
    assert 1.4 < elapsed < 4  # held until the reset, then everything at once
    assert server.stats.statuses[429] <= 8  # not one per retry of every request in flight


def test_the_hints_are_read_from_each_header() -> None:
    assert http.retry_hint_s(429, {"retry-after-ms": "1500"}) == 1.5
    assert http.retry_hint_s(429, {"retry-after": "2"}) == 2.0
    openai = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-remaining-tokens": "1000",
        "x-ratelimit-reset-tokens": "120ms",
    }
    assert http.retry_hint_s(429, openai) == 360.0  # the limit that ran out: requests
    assert (
        http.retry_hint_s(429, {"x-ratelimit-reset-tokens": "1.5s", "x-ratelimit-reset-requests": "20ms"})
        == 1.5
    )
    assert http.retry_hint_s(500, openai) is None  # on every reply: no hint for an error that is no throttle
    assert http.retry_hint_s(429, {}) is None
    assert [http.parse_duration_s(d) for d in ("3s", "1h2m3.5s", "120ms", "2", "soon", "3s later")] == [
        3.0,
        3723.5,
        0.12,
        2.0,
        None,
        None,
    ]
    throttled = http.error_for_status(429, b"{}", "POST /x", {"retry-after-ms": "250"}, secrets=Secrets())
    assert isinstance(throttled, Throttled) and throttled.retry_after_s == 0.25


def test_a_throttle_without_a_hint_backs_off_for_seconds_and_spends_no_retry_budget_while_some_are_accepted() -> (
    None
):
    shortest = Backoff(rand=lambda: 0.0, throttle_cap_s=30.0)
    bare = Throttled("429", status=429)
    waits = [shortest.delay_after(a, bare, answered=True) for a in range(1, 6)]
    assert waits == pytest.approx([0.5, 1.0, 2.0, 4.0, 8.0])
    assert Backoff(rand=lambda: 1.0, throttle_cap_s=30.0).delay_after(7, bare, answered=True) == 30.0
    rule = RetryRule(max_concurrency=4, max_retries=5)
    counts = WriteReport()
    rule.may_retry(bare, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)  # the throttling begins
    rule.on_success()  # and the server still accepts some requests: a rate limit, not a quota spent for good
    for throttle in range(100):  # far more throttles than the budget has tokens, accepts among them
        assert rule.may_retry(bare, attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts)
        if throttle % 10 == 9:
            rule.on_success()
    assert rule.may_retry(
        Unavailable("503", status=503), attempts=1, epoch=rule.limit.epoch, now=0.0, counts=counts
    )
    assert not rule.may_retry(bare, attempts=6, epoch=rule.limit.epoch, now=0.0, counts=counts)


def test_a_scripted_throttle_carries_the_hint_it_is_given() -> None:
    with EmbeddingsServer(api_key=DEFAULT_KEY) as server:
        server.script(Fault.throttle(0.3, hint="retry-after-ms"), Fault.throttle(0.3, hint="openai"))
        client, elapsed, failed = embed_through(server, n=1)
    assert failed == 0 and client.stats.throttled == 2 and elapsed >= 0.55
