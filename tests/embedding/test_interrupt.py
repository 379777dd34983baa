"""An embedding stream closed on an error sends no retry; on an interrupt (Ctrl-C) it does not wait for
the requests on the wire either, as an interrupted upsert does not: with the server answering 503 and
``Retry-After: 5``, Ctrl-C during a write came out only after every retry was spent (27.5 s)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from types import FrameType

import pytest

from tests.embedding.fixtures import embedding_options, words
from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, EmbeddingsServer, Fault
from tests.servers.fixtures import start_server
from vectordb.connector import connect
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.embedding.result import EmbeddedChunk
from vectordb.connector.transports.base import forget_shared

RETRY_AFTER = [Fault.error(503, retry_after="5")] * 5  # every retry waits 5 s: 25 s in all


def client_for(server: EmbeddingsServer) -> EmbeddingClient:
    options = {
        "url": server.url,
        "model": DEFAULT_MODEL,
        "api_key": DEFAULT_KEY,
        "max_concurrency": 1,
        "batch_size": 1,
    }
    return EmbeddingClient(parse_embed_options(options))


def retrying_stream(server: EmbeddingsServer, client: EmbeddingClient) -> Iterator[EmbeddedChunk]:
    """A stream whose first chunk is embedded and whose second chunk's request is waiting to retry."""
    server.script(Fault.slow(0.0), *RETRY_AFTER)
    stream = client.stream([[words(0)], [words(1)]])
    next(stream)
    deadline = time.monotonic() + 5
    while server.stats.statuses[503] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.stats.statuses[503] == 1
    return stream


def test_an_interrupt_closes_the_stream_at_once_and_nothing_is_sent_after(
    embeddings_server: EmbeddingsServer,
) -> None:
    with client_for(embeddings_server) as client:
        stream = retrying_stream(embeddings_server, client)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            stream.throw(KeyboardInterrupt)  # type: ignore[attr-defined]
        assert time.monotonic() - started < 2
        time.sleep(0.2)
        assert embeddings_server.stats.requests == 2  # the retry waiting out Retry-After was not sent
        closing = time.monotonic()
    assert time.monotonic() - closing < 2  # its sender stopped waiting too: close() does not wait 5 s


def test_an_interrupt_propagating_while_the_write_closes_its_stream_does_not_wait(
    embeddings_server: EmbeddingsServer,
) -> None:
    """A write interrupted elsewhere (waiting for an upsert slot) closes its input's generators, the
    stream among them, in a ``finally``: the close comes as a ``GeneratorExit``, the interrupt behind it."""
    with client_for(embeddings_server) as client:
        stream = retrying_stream(embeddings_server, client)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            try:
                raise KeyboardInterrupt
            finally:
                stream.close()  # type: ignore[attr-defined]
        assert time.monotonic() - started < 2
        assert embeddings_server.stats.requests == 2


def test_a_stream_closed_on_an_error_sends_no_retry(embeddings_server: EmbeddingsServer) -> None:
    with client_for(embeddings_server) as client:
        stream = retrying_stream(embeddings_server, client)
        started = time.monotonic()
        with pytest.raises(ValueError, match="the consumer's"):
            stream.throw(ValueError("the consumer's"))  # type: ignore[attr-defined]
        assert time.monotonic() - started < 2  # waited for the request on the wire (none), not its retries
        assert embeddings_server.stats.requests == 2
        embeddings_server.reset()  # the faults the retries did not spend
        [chunk] = list(client.stream([[words(2)]]))
        assert chunk.ok  # the next stream runs as before


def test_ctrl_c_during_a_write_whose_embedding_requests_wait_to_retry_comes_out_at_once(
    embeddings_server: EmbeddingsServer,
) -> None:
    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    with start_server("rest") as pinecone:
        with connect(
            pinecone.uri,
            **embedding_options(embeddings_server),
            dimension=64,
            on_error="report",
        ) as client:
            embeddings_server.script(*RETRY_AFTER)
            previous = signal.signal(signal.SIGALRM, interrupt)
            try:
                signal.setitimer(signal.ITIMER_REAL, 1.0)
                started = time.monotonic()
                with pytest.raises(KeyboardInterrupt):
                    client.upsert([{"id": "a", "text": "hello"}])
                took = time.monotonic() - started
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
            assert took < 3, f"the interrupt came out {took - 1:.1f} s after the signal"
            requests = embeddings_server.stats.requests
            time.sleep(0.3)
            assert embeddings_server.stats.requests == requests == 1  # no retry after it
            closing = time.monotonic()
        assert time.monotonic() - closing < 2
        forget_shared()
