"""A slow embeddings server that answers every request is not stopped as one that stopped answering.

The server works on one request at a time. At the default ``embed_max_concurrency`` (32) the client's
requests queue past ``timeout_s`` at the server, which still answers the ones the client gave up on
(all with 200); a timeout did not lower the in-flight limit, so every request timed out and the stream
stopped with ``StoppedAnswering``. A timeout now halves the limit, and the verdict waits for a request
sent alone to get no reply.
"""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect

pytestmark = pytest.mark.timeout(120)

SERVICE_S = 0.05


class OneAtATime(EmbeddingsServer):
    """Answers one embeddings request at a time, ``SERVICE_S`` each, whether or not its client still waits."""

    async def _embeddings(
        self, headers: dict[bytes, bytes], body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        if not hasattr(self, "_serving"):
            self._serving = asyncio.Lock()  # made on the server's own loop
        async with self._serving:
            await asyncio.sleep(SERVICE_S)
            return await super()._embeddings(headers, body, writer)


def test_a_slow_embeddings_server_at_the_default_concurrency_is_not_stopped(pinecone: ServerHandle) -> None:
    n = 2000
    table = pa.table({"id": [f"r{i}" for i in range(n)], "text": [f"text {i}" for i in range(n)]})
    with OneAtATime() as server:
        options = embedding_options(server, embed_batch_size=16, timeout_s=1, on_error="report")
        with connect(pinecone.uri, **options) as client:
            report = client.write(table)  # old code: StoppedAnswering, 192 timeouts in a row
        statuses = dict(server.stats.statuses)
    assert not report.stopped, report
    assert set(statuses) == {200}, statuses  # it answered every request it got
    assert report.written + report.failed == n, report
    assert report.written >= n // 2, report
    for failure in report.failures:
        assert failure.error_type == "DeadlineExceeded" and failure.retryable, failure
    assert len(pinecone.arrived().ids()) == report.written
