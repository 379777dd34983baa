"""Refused inputs fail alone, with the server's own reason, wherever they sit; the rest are embedded.

The server refuses a whole request when one input is over the model's context (OpenAI's message,
which names no input and quotes the request's total token count, so two requests holding the same
bad input get different messages). Only the client's splitting can find them. An empty string, which
the server refuses too, is failed by the client without being sent.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.embedding.fixtures import expected_vectors, too_long, words
from tests.servers.embeddings import (
    DEFAULT_KEY,
    DEFAULT_MODEL,
    EmbeddingsServer,
    context_error_message,
    tokens_of,
)
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.errors import SystemicRejection


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, EmbeddingsServer]]:
    with (
        EmbeddingsServer(context_tokens=512) as plain,
        EmbeddingsServer(context_tokens=512, name_index=True) as named,
    ):
        yield {"plain": plain, "named": named}


def refused_alike(i: int) -> str:
    """Over the context, as long as every other one: refused alone with one identical message."""
    return f"long {i:06d} " + "x" * (4 * 512 + 8)


def bad_text(i: int, kind: str) -> str:
    if kind == "empty":
        return ""
    return too_long(i) if kind == "long" else refused_alike(i)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(
    n=st.integers(1, 300),
    batch_size=st.integers(1, 64),
    concurrency=st.integers(1, 4),
    server_kind=st.sampled_from(["plain", "named"]),
    data=st.data(),
)
def test_exactly_the_refused_inputs_fail_with_the_servers_reason_for_them_alone(
    servers: dict[str, EmbeddingsServer],
    n: int,
    batch_size: int,
    concurrency: int,
    server_kind: str,
    data: st.DataObject,
) -> None:
    placement = data.draw(st.sampled_from(["none", "few", "first", "last", "dense", "all"]))
    if placement == "none":
        bad: set[int] = set()
    elif placement == "few":
        bad = set(data.draw(st.lists(st.integers(0, n - 1), max_size=6)))
    elif placement == "first":
        bad = set(range(min(n, data.draw(st.integers(1, 40)))))
    elif placement == "last":
        bad = set(range(max(0, n - data.draw(st.integers(1, 40))), n))
    elif placement == "all":
        bad = set(range(n))
    else:
        rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
        bad = {i for i in range(n) if rng.random() < 0.5}
    kinds = {i: data.draw(st.sampled_from(["long", "long", "alike", "empty"])) for i in sorted(bad)}
    texts = [bad_text(i, kinds[i]) if i in bad else words(i, 5) for i in range(n)]

    server = servers[server_kind]
    options = {"url": server.url, "model": DEFAULT_MODEL, "api_key": DEFAULT_KEY, "dimensions": 16}
    options |= {"batch_size": batch_size, "max_concurrency": concurrency, "isolation_budget": 100}
    with EmbeddingClient(parse_embed_options(options)) as client:
        try:
            result = client.embed(texts)
        except SystemicRejection as exc:
            # only when the first inputs examined alone were refused alike, and none was accepted
            assert len(bad) >= 32 and "refused each of the first" in str(exc)
            return
    assert {f.index for f in result.failures} == bad
    for failure in result.failures:
        if kinds[failure.index] == "empty":  # failed here, never sent
            assert (failure.error_type, failure.retryable, failure.attempts) == ("InvalidInput", False, 0)
            assert (
                failure.message == f"input {failure.index} is an empty string, which embedding servers refuse"
            )
            continue
        assert failure.error_type == "Rejected" and not failure.retryable and failure.attempts >= 1
        # the reason the server gives for this input sent alone
        reason = context_error_message(512, tokens_of(texts[failure.index]))
        assert failure.message.endswith(f"HTTP 400: {reason}") or failure.message.endswith(
            f"HTTP 400: Invalid 'input[0]': {reason}"
        ), failure.message
    good = [i for i in range(n) if i not in bad]
    np.testing.assert_array_equal(result.vectors[good], expected_vectors([texts[i] for i in good], 16))
    assert np.isnan(result.vectors[sorted(bad)]).all()


def test_isolation_costs_about_two_requests_per_refused_input() -> None:
    texts = [words(i, 5) for i in range(2000)]
    for i in range(0, 2000, 100):
        texts[i + 37] = too_long(i)
    with EmbeddingsServer() as server:
        options = {"url": server.url, "model": DEFAULT_MODEL, "api_key": DEFAULT_KEY, "batch_size": 100}
        with EmbeddingClient(parse_embed_options(options)) as client:
            result = client.embed(texts)
            isolation = client.stats.isolation_requests
    assert [f.index for f in result.failures] == [i + 37 for i in range(0, 2000, 100)]
    assert isolation <= 20 * 2 * 8  # each of 20 refused requests of 100 split down to one: ~1.5 log2(100)


def test_past_the_isolation_budget_inputs_fail_as_not_isolated_saying_they_may_be_good() -> None:
    texts = [too_long(i) if i % 10 == 0 else words(i, 5) for i in range(400)]
    with EmbeddingsServer() as server:
        options = {"url": server.url, "model": DEFAULT_MODEL, "api_key": DEFAULT_KEY, "batch_size": 40}
        options |= {"max_concurrency": 1, "isolation_budget": 0}
        with EmbeddingClient(parse_embed_options(options)) as client:
            result = client.embed(texts)
    assert len(result.failures) == 400  # every request held a bad input; none could be split
    assert {f.error_type for f in result.failures} == {"NotIsolated"}
    assert "the isolation budget (0 requests) is spent" in result.failures[0].message
    assert "may be good" in result.failures[0].message


@pytest.mark.parametrize("concurrency", [1, 4, 16, 32])
def test_a_server_that_refuses_faster_than_it_embeds_cannot_stop_a_stream_with_good_inputs(
    concurrency: int,
) -> None:
    """Three inputs in four refused alike (over the context), one input a request, and every answer with vectors 100 ms
    slower than a refusal: the first 32 answers are refusals alike, but the requests in flight behind
    them are waited for, and the stream goes on to the end instead of stopping as systemic."""
    n = 120
    texts = [words(i) if i % 4 == 0 else refused_alike(i) for i in range(n)]
    with EmbeddingsServer(accept_delay_s=0.1) as server:
        options = {"url": server.url, "model": DEFAULT_MODEL, "api_key": DEFAULT_KEY, "dimensions": 16}
        options |= {"batch_size": 1, "max_concurrency": concurrency}
        with EmbeddingClient(parse_embed_options(options)) as client:
            result = client.embed(texts)
    assert sorted(f.index for f in result.failures) == [i for i in range(n) if i % 4]
    good = [i for i in range(n) if i % 4 == 0]
    np.testing.assert_array_equal(result.vectors[good], expected_vectors([texts[i] for i in good], dim=16))
