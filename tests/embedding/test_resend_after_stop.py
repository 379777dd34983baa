"""A malformed embeddings reply that arrives after the stream stopped is not sent again.

README: a fatal error ends any wait, and nothing is sent after the stop. A malformed reply is sent again
once (``EmbeddingClient._send_checked``), and that second send did not look at the stop: a request whose
malformed reply came after another request's 401 was sent a second time.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer, Fault, _write
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.errors import AuthError

pytestmark = pytest.mark.timeout(60)


class MalformedAfterRefusal(EmbeddingsServer):
    """Refuses the ``beta`` request's key (401); answers the ``alpha`` request malformed (one vector short),
    once the 401 is out and the client has had time to stop."""

    alpha_requests = 0

    async def _embeddings(
        self, headers: dict[bytes, bytes], body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        if not hasattr(self, "_refused"):
            self._refused = asyncio.Event()  # made on the server's own loop
        if b"alpha" in body:
            self.alpha_requests += 1
            await self._refused.wait()
            await asyncio.sleep(1.0)  # the client reads the 401 and stops meanwhile (a loaded machine too)
            _, reply = self._answer(headers, body, Fault.short(), False)
        elif b"beta" in body:
            _, reply = self._answer(headers, body, Fault.error(401), False)
        else:
            return await super()._embeddings(headers, body, writer)
        _write(writer, reply)
        if b"beta" in body:
            self._refused.set()
        return True


def test_a_malformed_reply_after_a_fatal_error_is_not_sent_again() -> None:
    with MalformedAfterRefusal() as server:
        options = {
            "url": server.url,
            "model": "test-embed-64",
            "api_key": DEFAULT_KEY,
            "batch_size": 4,
            "max_concurrency": 2,
        }
        with EmbeddingClient(parse_embed_options(options)) as client:
            # a first reply tells the dimension: until then one request is in flight, and both must be
            assert client.embed(["the first text"]).ok
            first = client.stats.retries
            with pytest.raises(AuthError):
                client.embed([f"alpha {i}" for i in range(4)] + [f"beta {i}" for i in range(4)])
            retries = client.stats.retries - first
        # old code: 2, the malformed reply's request was sent again after the 401 stopped the stream
        assert server.alpha_requests == 1
        assert retries == 0
