"""A write's report counts the embedding endpoint's retries and throttled replies, and its summary and
Spark's job report say them: a load slowed for minutes by a rate-limited embedding endpoint reported
"0 retries, 0 throttled" (those were the database's alone)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import EmbeddingsServer, Fault
from tests.servers.fixtures import start_server
from vectordb.connector import WriteReport, connect

ROWS = pa.table({"id": [f"r{i}" for i in range(200)], "text": [f"text {i}" for i in range(200)]})


def faulty(answered_first: int = 0) -> EmbeddingsServer:
    """Two throttled replies (429 with a short Retry-After) and one 503, then answers; after
    ``answered_first`` answered requests (a Spark driver's probe of the endpoint)."""
    server = EmbeddingsServer()
    answered = [Fault.slow(0.0)] * answered_first
    server.script(*answered, Fault.throttle(0.05), Fault.error(503, "0.05"), Fault.throttle(0.05))
    return server


def test_the_report_counts_the_embedding_retries_and_throttles() -> None:
    with faulty() as server, start_server("rest") as database:
        options: dict[str, Any] = {**embedding_options(server), "embed_batch_size": 50}
        with connect(database.uri, on_error="report", **options) as client:
            first = client.write(ROWS)
            second = client.write(ROWS)  # the stage counts over its life: each write its own share
        statuses = dict(server.stats.statuses)
    assert (first.embedded, first.embed_requests) == (200, 7), first  # 4 batches, 3 of them sent twice
    assert (first.embed_retries, first.embed_throttled) == (3, 2), first
    assert statuses == {429: 2, 503: 1, 200: 8}
    assert (second.embed_requests, second.embed_retries, second.embed_throttled) == (4, 0, 0), second
    assert "200 embedded in 7 requests, 3 retries, 2 throttled" in first.summary()
    merged = first.merge(second)
    assert (merged.embed_requests, merged.embed_retries, merged.embed_throttled) == (11, 3, 2)
    assert WriteReport().summary().count("embedded") == 0  # nothing embedded: nothing said
