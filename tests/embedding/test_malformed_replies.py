"""A malformed embeddings reply after well-formed ones fails its request's inputs, not the write.

One reply with null items, an extra item, or vectors of another dimension was ``MalformedReply``,
fatal: the whole write stopped and the inputs already embedded were dropped, while a NaN vector fails
only its row. Now the request is sent again once; malformed again, its inputs fail (not retryable, the
reason quoting the reply's start), and the stream goes on. Before any reply was well-formed, a reply
malformed twice is still fatal: the server does not speak the protocol. (A reply in which some items
only are no vector, beside vectors, fails those items' inputs alone: ``test_null_embedding``.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest

from tests.embedding.fixtures import EMBED_MODEL, embedding_options, expected_vectors
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer, _Reply
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.errors import MalformedReply

POISON = "poison text"  # a text whose requests the server always answers malformed

Spoil = Callable[[dict[str, Any]], None]


def null_items(doc: dict[str, Any]) -> None:
    for item in doc["data"]:  # every item: with one null only, the others are taken (test_null_embedding)
        item["embedding"] = None


def extra_item(doc: dict[str, Any]) -> None:
    doc["data"].append(dict(doc["data"][0], index=len(doc["data"])))


def other_dimension(doc: dict[str, Any]) -> None:
    for item in doc["data"]:
        item["embedding"] = item["embedding"][:32] if isinstance(item["embedding"], list) else None


SPOILS: dict[str, Spoil] = {
    "null items": null_items,
    "extra item": extra_item,
    "other dimension": other_dimension,
}


class Spoiling(EmbeddingsServer):
    """Spoils the replies of the ``calls`` it is told (1-based), and of every request holding ``POISON``."""

    def __init__(self, spoil: Spoil, calls: set[int] = frozenset(), **options: Any) -> None:  # type: ignore[assignment]
        super().__init__(base64="ignore", **options)  # replies of numbers, which the spoilers edit
        self.spoil, self.calls, self.seen = spoil, calls, 0

    def _embed(self, body: bytes, *, short: bool = False) -> tuple[int, _Reply]:
        count, reply = super()._embed(body, short=short)
        self.seen += 1
        if reply.status == 200 and (self.seen in self.calls or POISON.encode() in body):
            doc = orjson.loads(reply.body)
            self.spoil(doc)
            reply = _Reply(200, orjson.dumps(doc))
        return count, reply


@pytest.mark.parametrize("spoil", SPOILS)
def test_one_malformed_reply_mid_write_is_sent_again(spoil: str, pinecone: ServerHandle) -> None:
    n = 200
    texts = [f"text number {i}" for i in range(n)]
    table = pa.table({"id": [f"r{i}" for i in range(n)], "text": texts})
    with Spoiling(SPOILS[spoil], calls={3}) as server:
        # several in flight: the first request goes alone (until a reply tells the dimension), the third
        # reply to arrive is spoiled, whichever request it answers
        options = embedding_options(server, embed_batch_size=32, embed_max_concurrency=4, on_error="report")
        with connect(pinecone.uri, **options) as client:
            report = client.write(table)  # old code: MalformedReply, the write stopped
    assert report.ok and report.written == n, report
    arrived, expected = pinecone.arrived(), expected_vectors(texts, model=EMBED_MODEL)
    for i in range(n):
        np.testing.assert_array_equal(arrived.vector(f"r{i}").values, expected[i])


@pytest.mark.parametrize("spoil", SPOILS)
def test_a_spoiled_reply_answered_first_tells_no_dimension(spoil: str, pinecone: ServerHandle) -> None:
    """The second request's reply is spoiled and answered before the others. Until a reply is
    well-formed one request is in flight, so the first request's reply tells the dimension and the
    spoiled one is sent again. Old code sent 4 at once and took the first reply answered for the
    model's: with "other dimension", the spoiled reply's 32, and every well-formed reply failed."""
    n = 400
    texts = [f"text number {i}" for i in range(n)]
    texts[20] = POISON  # in the second request (16 a request)
    table = pa.table({"id": [f"r{i}" for i in range(n)], "text": texts})
    with PoisonAnsweredFirst(SPOILS[spoil]) as server:
        options = embedding_options(server, embed_batch_size=16, embed_max_concurrency=4, on_error="report")
        with connect(pinecone.uri, **options) as client:
            report = client.write(table)
    assert report.ok and report.written == n, report
    assert report.embed_retries == 1 and server.spoiled == 1, report
    arrived, expected = pinecone.arrived(), expected_vectors(texts, model=EMBED_MODEL)
    for i in range(n):
        np.testing.assert_array_equal(arrived.vector(f"r{i}").values, expected[i])


@pytest.mark.parametrize("spoil", SPOILS)
def test_a_spoiled_first_reply_is_sent_again_when_the_write_states_its_dimension(
    spoil: str, pinecone: ServerHandle
) -> None:
    """The very first reply spoiled: with the write's dimension known (stated, or a Spark or Beam
    driver's probe), a first reply of another length is malformed and sent again. Old code took its
    32 for the model's dimension and failed the other 384 rows."""
    n = 400
    texts = [f"text number {i}" for i in range(n)]
    table = pa.table({"id": [f"r{i}" for i in range(n)], "text": texts})
    with Spoiling(SPOILS[spoil], calls={1}) as server:
        options = embedding_options(
            server, embed_batch_size=16, embed_max_concurrency=4, on_error="report", dimension=64
        )
        with connect(pinecone.uri, **options) as client:
            report = client.write(table)
    assert report.ok and report.written == n, report
    assert report.embed_retries == 1, report
    arrived, expected = pinecone.arrived(), expected_vectors(texts, model=EMBED_MODEL)
    for i in range(n):
        np.testing.assert_array_equal(arrived.vector(f"r{i}").values, expected[i])


def test_a_model_of_another_dimension_than_the_writes_stops_the_write_naming_it(
    pinecone: ServerHandle,
) -> None:
    table = pa.table({"id": [f"r{i}" for i in range(40)], "text": [f"text {i}" for i in range(40)]})
    with EmbeddingsServer(api_key=DEFAULT_KEY) as server:
        options = embedding_options(server, embed_batch_size=8, dimension=32)
        with connect(pinecone.uri, **options) as client, pytest.raises(MalformedReply) as caught:
            client.write(table)
    message = str(caught.value)
    assert "returned 64-dimensional vectors; the write's dimension (option dimension) is 32" in message


def test_until_a_reply_tells_the_dimension_one_request_is_in_flight() -> None:
    """Then the requests go several at once (the window is not held to one)."""
    options = {"model": EMBED_MODEL, "api_key": DEFAULT_KEY, "batch_size": 4, "max_concurrency": 4}
    with (
        Counting(delay_s=0.05) as server,
        EmbeddingClient(parse_embed_options(options | {"url": server.url})) as client,
    ):
        assert client.embed([f"text {i}" for i in range(64)]).ok
    assert len(server.at_arrival) == 16, server.at_arrival
    assert server.at_arrival[:2] == [1, 1], server.at_arrival  # the first alone, the next after its reply
    assert max(server.at_arrival) > 1, server.at_arrival  # then several


class Counting(EmbeddingsServer):
    """Records, for each request as it arrives, how many are in flight with it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.at_arrival: list[int] = []

    async def _embeddings(self, headers: dict[bytes, bytes], body: bytes, writer: Any) -> bool:
        self.at_arrival.append(self.stats.in_flight + 1)
        return await super()._embeddings(headers, body, writer)


class PoisonAnsweredFirst(EmbeddingsServer):
    """Spoils its first reply to a request holding ``POISON`` and answers the others 0.3 s late: with
    several requests in flight, the spoiled reply is the first answered."""

    def __init__(self, spoil: Spoil) -> None:
        super().__init__(base64="ignore")
        self.spoil, self.spoiled = spoil, 0

    async def _embeddings(self, headers: dict[bytes, bytes], body: bytes, writer: Any) -> bool:
        if POISON.encode() not in body:
            await asyncio.sleep(0.3)
        return await super()._embeddings(headers, body, writer)

    def _embed(self, body: bytes, *, short: bool = False) -> tuple[int, _Reply]:
        count, reply = super()._embed(body, short=short)
        if reply.status == 200 and POISON.encode() in body and not self.spoiled:
            self.spoiled += 1
            doc = orjson.loads(reply.body)
            self.spoil(doc)
            reply = _Reply(200, orjson.dumps(doc))
        return count, reply


@pytest.mark.parametrize("spoil", SPOILS)
def test_a_reply_malformed_twice_after_well_formed_ones_fails_its_inputs_alone(spoil: str) -> None:
    options = {"model": EMBED_MODEL, "api_key": DEFAULT_KEY, "batch_size": 8}
    texts = [f"text {i}" for i in range(40)]
    texts[13] = POISON  # its request (inputs 8-15) is answered malformed every time
    with (
        Spoiling(SPOILS[spoil]) as server,
        EmbeddingClient(parse_embed_options(options | {"url": server.url})) as client,
    ):
        assert client.embed([f"first {i}" for i in range(20)]).ok  # the server speaks the protocol
        result = client.embed(texts)
    assert sorted(f.index for f in result.failures) == list(range(8, 16))
    for failure in result.failures:
        assert failure.error_type == "MalformedReply" and not failure.retryable, failure
        assert "malformed twice" in failure.message and len(failure.message) < 600, failure.message
    good = [i for i in range(40) if not 8 <= i < 16]
    expected = expected_vectors([texts[i] for i in good], model=EMBED_MODEL)
    np.testing.assert_array_equal(result.vectors[good], expected)


def test_a_server_whose_replies_are_malformed_from_the_start_stops_the_stream() -> None:
    options = {"model": EMBED_MODEL, "api_key": DEFAULT_KEY, "batch_size": 8, "max_concurrency": 1}
    with (
        Spoiling(null_items) as server,
        EmbeddingClient(parse_embed_options(options | {"url": server.url})) as client,
        pytest.raises(MalformedReply, match="not an embeddings list"),
    ):
        client.embed([POISON] + [f"text {i}" for i in range(40)])
    assert server.seen == 2  # sent again once, then fatal
