"""A malformed embeddings reply after well-formed ones fails its request's inputs, not the write.

One reply with a null item, an extra item, or vectors of another dimension was ``MalformedReply``,
fatal: the whole write stopped and the inputs already embedded were dropped, while a NaN vector fails
only its row. Now the request is sent again once; malformed again, its inputs fail (not retryable, the
reason quoting the reply's start), and the stream goes on. Before any reply was well-formed, a reply
malformed twice is still fatal: the server does not speak the protocol.
"""

from __future__ import annotations

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


def null_item(doc: dict[str, Any]) -> None:
    doc["data"][-1]["embedding"] = None


def extra_item(doc: dict[str, Any]) -> None:
    doc["data"].append(dict(doc["data"][0], index=len(doc["data"])))


def other_dimension(doc: dict[str, Any]) -> None:
    for item in doc["data"]:
        item["embedding"] = item["embedding"][:32] if isinstance(item["embedding"], list) else None


SPOILS: dict[str, Spoil] = {
    "null item": null_item,
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
        # one request at a time: the spoiled reply comes after well-formed ones. With several in flight it
        # could be the first answered, and the client takes the first reply's dimension for the model's
        # (then the well-formed replies are the ones "of another dimension")
        options = embedding_options(server, embed_batch_size=32, embed_max_concurrency=1, on_error="report")
        with connect(pinecone.uri, **options) as client:
            report = client.write(table)  # old code: MalformedReply, the write stopped
    assert report.ok and report.written == n, report
    arrived, expected = pinecone.arrived(), expected_vectors(texts, model=EMBED_MODEL)
    for i in range(n):
        np.testing.assert_array_equal(arrived.vector(f"r{i}").values, expected[i])


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
        Spoiling(null_item) as server,
        EmbeddingClient(parse_embed_options(options | {"url": server.url})) as client,
        pytest.raises(MalformedReply, match="not an embeddings list"),
    ):
        client.embed([POISON] + [f"text {i}" for i in range(40)])
    assert server.seen == 2  # sent again once, then fatal
