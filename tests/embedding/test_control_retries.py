"""The control request (the probe text alone, sent before the systemic verdict) is retried as any
request is, and only a refusal of it counts toward the verdict. It was sent once, and any error, one
transient 503 or 429 among them, read as "the probe was refused": a stream whose first inputs were
over the model's context stopped with ``SystemicRejection`` and none of its good inputs was embedded."""

from __future__ import annotations

from typing import Any

import pytest

from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer, Fault, _error, _Reply
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.embedding.client import PROBE_TEXT

LONG = "x" * 5000  # over the server's 512-token context: refused alone, always for the same reason
FAULTS = {
    "503": (503, "The server is overloaded, please retry", "server_error", {}),
    "429": (429, "Rate limit reached for requests.", "requests", {"retry_after": "0.05"}),
}


class FailingProbes(EmbeddingsServer):
    """Answers the probe text with ``fault`` the first ``times`` it comes (every time: ``None``)."""

    def __init__(self, fault: str, times: int | None, **options: Any) -> None:
        super().__init__(**options)
        self.fault, self.times, self.probes = FAULTS[fault], times, 0

    def _answer(
        self, headers: dict[bytes, bytes], body: bytes, fault: Fault | None, over_quota: bool
    ) -> tuple[int, _Reply]:
        if PROBE_TEXT.encode() in body:
            self.probes += 1
            if self.times is None or self.probes <= self.times:
                status, message, kind, extra = self.fault
                return 0, _error(status, message, kind, **extra)
        return super()._answer(headers, body, fault, over_quota)


def embed(server: EmbeddingsServer, texts: list[str], **extra: Any) -> tuple[EmbeddingClient, Any]:
    options = {"url": server.url, "model": "test-embed-64", "api_key": DEFAULT_KEY, "batch_size": 8}
    with EmbeddingClient(parse_embed_options(options | extra)) as client:
        return client, client.embed(texts)


@pytest.mark.parametrize("fault", ["503", "429"])
def test_one_transient_error_on_the_control_request_is_retried(fault: str) -> None:
    texts = [LONG] * 300 + [f"good text {i}" for i in range(300)]
    with FailingProbes(fault, times=1) as server:
        client, result = embed(server, texts)  # old code: SystemicRejection, nothing embedded
    assert sorted(f.index for f in result.failures) == list(range(300))
    assert {f.error_type for f in result.failures} == {"Rejected"}
    assert client.stats.embedded == 300
    assert server.probes >= 2  # the failed control request was sent again


def test_a_control_request_that_keeps_failing_is_no_systemic_verdict() -> None:
    """Every probe answered 503: nothing is known about the refusals, so no SystemicRejection; the
    refused inputs fail alone and the good ones are embedded."""
    texts = [LONG] * 300 + [f"good text {i}" for i in range(100)]
    with FailingProbes("503", times=None) as server:
        client, result = embed(server, texts, max_retries=1, max_concurrency=4)
    assert sorted(f.index for f in result.failures) == list(range(300))
    assert {f.error_type for f in result.failures} == {"Rejected"}
    assert client.stats.embedded == 100
    assert server.probes >= 4  # suspected again after each 32 more refusals, each control sent twice
