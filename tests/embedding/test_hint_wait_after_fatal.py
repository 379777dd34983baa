"""A fatal error ends another request's wait for a server's hint at once.

README: "Ctrl-C or a fatal error ends any wait for a server's hint at once". A request waiting out a 429's
``Retry-After`` waited on its stream's stop alone, which is set only when the stream is closed, and the close
waits for that request: a 401 of another request was raised only after the hint (up to 300 s).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer, Fault, _write
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.errors import AuthError

pytestmark = pytest.mark.timeout(90)

HINT_S = 30.0


class ThrottleThenRefusal(EmbeddingsServer):
    """Throttles the ``alpha`` request with a long ``Retry-After`` once the ``beta`` request arrived;
    refuses the ``beta`` request's key (401) once the throttle is out and its request waits."""

    alpha_requests = 0

    async def _embeddings(
        self, headers: dict[bytes, bytes], body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        if not hasattr(self, "_throttled"):
            self._throttled = asyncio.Event()  # made on the server's own loop
            self._beta_arrived = asyncio.Event()
        if b"alpha" in body:
            self.alpha_requests += 1
            # both requests on the wire first: a request sent after the throttle would be held by it
            await self._beta_arrived.wait()
            _, reply = self._answer(headers, body, Fault.throttle(HINT_S), False)
            _write(writer, reply)
            self._throttled.set()
            return True
        if b"beta" in body:
            self._beta_arrived.set()
            await self._throttled.wait()
            await asyncio.sleep(0.2)  # the alpha request is waiting out its hint by now
            _, reply = self._answer(headers, body, Fault.error(401), False)
            _write(writer, reply)
            return True
        return await super()._embeddings(headers, body, writer)


def test_a_fatal_error_ends_another_requests_wait_for_a_retry_after() -> None:
    with ThrottleThenRefusal() as server:
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
            start = time.monotonic()
            with pytest.raises(AuthError):
                client.embed([f"alpha {i}" for i in range(4)] + [f"beta {i}" for i in range(4)])
            elapsed = time.monotonic() - start
        assert elapsed < 5, f"raised after {elapsed:.2f} s"  # old code: after the 30 s hint
        assert server.alpha_requests == 1  # not sent again after the stop
