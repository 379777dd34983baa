"""Texts left unisolated in a refused request (the isolation budget spent) "may be good": they fail as
``NotIsolated``, retryable, for the upsert engine and the embedding client alike (they were not
retryable). ``embed()`` takes ``isolation_budget``, and its default is a writer's, 1.0 per input: with
0.25, 5% of texts over the context failed good texts of ``embed()`` and of a default client."""

from __future__ import annotations

import random

import pytest

from tests.embedding.fixtures import too_long
from tests.engine.test_engine import OK, client_with, ids_in, rows
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from vectordb.connector.embedding import EmbeddingFailed, EmbedOptions, embed
from vectordb.connector.errors import Rejected
from vectordb.connector.transports.base import WireReply, WireRequest


def test_embed_isolates_five_percent_of_texts_over_the_context_and_fails_no_good_one(
    embeddings_server: EmbeddingsServer,
) -> None:
    assert EmbedOptions(url="http://x", model="m").isolation_budget == 1.0
    rng = random.Random(1)
    bad = {i for i in range(20_000) if rng.random() < 0.05}
    texts = [too_long(i) if i in bad else f"text {i}" for i in range(20_000)]
    with pytest.raises(EmbeddingFailed) as caught:
        embed(texts, url=embeddings_server.url, model="test-embed-64", api_key=DEFAULT_KEY)
    assert {f.index for f in caught.value.failures} == bad
    assert {f.error_type for f in caught.value.failures} == {"Rejected"}


def test_unisolated_texts_fail_retryable(embeddings_server: EmbeddingsServer) -> None:
    texts = [too_long(0), *(f"text {i}" for i in range(1, 64))]
    with pytest.raises(EmbeddingFailed) as caught:
        embed(
            texts, url=embeddings_server.url, model="test-embed-64", api_key=DEFAULT_KEY, isolation_budget=0
        )
    failures = caught.value.failures
    assert len(failures) == 64 and {(f.error_type, f.retryable) for f in failures} == {("NotIsolated", True)}
    assert "may be good" in failures[1].message


def test_unisolated_rows_of_an_upsert_fail_retryable() -> None:
    def refuse_r3(request: WireRequest) -> WireReply:
        if "r3" in ids_in(request):
            raise Rejected("INVALID_ARGUMENT: bad vector", status="INVALID_ARGUMENT")
        return OK

    client, _ = client_with(refuse_r3, on_error="report", isolation_budget=0)
    report = client.upsert(rows(10))
    [failure] = report.failures
    assert (failure.error_type, failure.retryable, len(failure.ids)) == ("NotIsolated", True, 10)
