"""One item of a 200 embeddings reply that is no vector (``"embedding": null``, a number, a list holding a
string, bad base64, a list of another length or form than the reply's others) fails its input alone,
naming the reply's ``$.data[k]``, its index and why, and the reply's other vectors are written. Before,
the whole reply was ``MalformedReply`` (``Expected `str | array`, got `null` - at `$.data[5].embedding```):
sent again, then every input of the request failed, or, before any well-formed reply, the write stopped.
The native decoder takes no such reply, so the Python decoder's rule is the outcome of both."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import numpy as np
import orjson
import pytest

from tests.embedding.fixtures import EMBED_MODEL, embedding_options, expected_vectors
from tests.embedding.test_wire import DECODERS, decoder
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options, wire
from vectordb.connector.errors import MalformedReply
from vectordb.connector.redaction import Secrets

WHERE = "POST http://127.0.0.1:1/v1/embeddings"
POISON = "the text this server cannot embed"
VECTORS = np.arange(24, dtype=np.float32).reshape(6, 4)


def b64(vector: np.ndarray) -> str:
    return base64.b64encode(vector.astype("<f4").tobytes()).decode()


SHORTER = object()  # the right vector but its last number, in the reply's form


def body_with(encoding: str, bad: object, at: int = 4) -> bytes:
    """A reply to six inputs, items last to first, whose item for input ``at`` is ``bad``."""
    items: list[dict[str, object]] = []
    for i in reversed(range(6)):
        row = VECTORS[i][:3] if i == at and bad is SHORTER else VECTORS[i]
        vector: object = b64(row) if encoding == "base64" else row.tolist()
        embedding = bad if i == at and bad is not SHORTER else vector
        items.append({"object": "embedding", "index": i, "embedding": embedding})
    return orjson.dumps({"object": "list", "data": items, "model": "m"})


FAULTS: dict[str, tuple[object, str]] = {  # an item's embedding, and what its input's failure says
    "null": (None, "null"),
    "number": (7, "Expected `bytes | array`, got `int`"),
    "a string in the list": ([1.0, "x", 3.0, 4.0], "Expected `float`, got `str`"),
    "bad base64": ("not base64!", "Invalid base64"),
    "base64 of 6 bytes": (base64.b64encode(b"abcdef").decode(), "base64 of 6 bytes, not whole float32s"),
    "empty list": ([], "an empty list"),
    "shorter": (SHORTER, "a vector of 3 numbers, where the reply's others have 4"),
}


@pytest.mark.parametrize("encoding", ["base64", "float"])
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("name", DECODERS)
def test_an_item_that_is_no_vector_is_the_replys_fault_and_the_others_are_decoded(
    name: str, fault: str, encoding: str
) -> None:
    bad, why = FAULTS[fault]
    with decoder(name):
        decoded = wire.decode(body_with(encoding, bad), 6, WHERE, secrets=Secrets())
    good = [0, 1, 2, 3, 5]
    np.testing.assert_array_equal(decoded.matrix[good], VECTORS[good])
    assert np.isnan(decoded.matrix[4]).all()
    assert decoded.model == "m"
    assert list(decoded.faults) == [4]
    assert decoded.faults[4].startswith(f"{WHERE}: the reply's $.data[1] (index 4) is no vector: ")
    assert why in decoded.faults[4], decoded.faults[4]


@pytest.mark.parametrize("name", DECODERS)
def test_an_item_of_another_form_than_the_replys_others_is_its_fault(name: str) -> None:
    with decoder(name):
        decoded = wire.decode(body_with("base64", VECTORS[4].tolist()), 6, WHERE, secrets=Secrets())
    assert decoded.faults == {
        4: f"{WHERE}: the reply's $.data[1] (index 4) is no vector: a list of numbers, where the reply's "
        "others are base64"
    }


@pytest.mark.parametrize(
    ("body", "count", "message"),
    [
        # no vector at all: the reply is malformed as a whole, as before
        (orjson.dumps({"data": [{"index": i, "embedding": None} for i in range(3)]}), 3, "not an embeddings"),
        # two lengths, one vector each: no item can be named at fault
        (
            orjson.dumps({"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}]}),
            2,
            "embeddings of unequal lengths",
        ),
        # a whole fault beside an item's: the item's is not named
        (body_with("float", None)[:-20], 6, "not an embeddings list"),  # cut short
        (body_with("float", None).replace(b'"index":0', b'"index":9'), 6, "not an embeddings list"),
    ],
)
@pytest.mark.parametrize("name", DECODERS)
def test_a_reply_malformed_as_a_whole_names_no_item(name: str, body: bytes, count: int, message: str) -> None:
    with decoder(name), pytest.raises(MalformedReply, match=message):
        wire.decode(body, count, WHERE, secrets=Secrets())


@pytest.fixture(params=DECODERS)
def either_decoder(request: pytest.FixtureRequest) -> Iterator[str]:
    with decoder(request.param):
        yield request.param


@pytest.mark.parametrize("encoding", ["base64", "float"])
def test_the_client_fails_that_input_alone_and_sends_nothing_again(
    encoding: str, either_decoder: str
) -> None:
    texts = [f"text {i}" for i in range(20)]
    texts[5] = POISON
    options = {"model": EMBED_MODEL, "api_key": DEFAULT_KEY, "batch_size": 8, "encoding_format": encoding}
    with (
        EmbeddingsServer(null_for=[POISON]) as server,
        EmbeddingClient(parse_embed_options(options | {"url": server.url})) as client,
    ):
        result = client.embed(texts)  # old code: the first request's reply malformed twice, MalformedReply
        assert (client.stats.embedded, client.stats.failed, client.stats.retries) == (19, 1, 0)
        assert server.stats.requests == 3
    [failure] = result.failures
    assert (failure.index, failure.error_type, failure.retryable) == (5, "MalformedReply", False)
    assert failure.message == (
        f"POST {server.url}/v1/embeddings: the reply's $.data[5] (index 5) is no vector: null"
    )
    good = [i for i in range(20) if i != 5]
    np.testing.assert_array_equal(
        result.vectors[good], expected_vectors([texts[i] for i in good], model=EMBED_MODEL)
    )


def test_alone_in_its_request_it_is_sent_again_once_then_fails_alone(either_decoder: str) -> None:
    """A reply with no vector is malformed as a whole: sent again once, then (after well-formed replies)
    the input fails alone; the server answers null every time, and the client does not loop."""
    texts = ["a", "b", POISON, "c"]
    options = {"model": EMBED_MODEL, "api_key": DEFAULT_KEY, "batch_size": 1, "max_concurrency": 1}
    with (
        EmbeddingsServer(null_for=[POISON]) as server,
        EmbeddingClient(parse_embed_options(options | {"url": server.url})) as client,
    ):
        result = client.embed(texts)
        assert server.stats.requests == 5
    [failure] = result.failures
    assert (failure.index, failure.error_type, failure.retryable) == (2, "MalformedReply", False)
    assert "malformed twice" in failure.message and "null" in failure.message, failure.message


def test_a_write_fails_that_row_alone_and_writes_the_others(
    pinecone: ServerHandle, either_decoder: str
) -> None:
    """Through the write path as users run it: the first request's reply holds the null (before any
    well-formed reply, which stopped the write before), several requests in flight after it."""
    n = 100
    rows = [{"id": f"r{i}", "text": POISON if i in (3, 77) else f"hello {i}"} for i in range(n)]
    with (
        EmbeddingsServer(null_for=[POISON]) as server,
        connect(pinecone.uri, on_error="report", **embedding_options(server, embed_batch_size=16)) as client,
    ):
        report = client.upsert(rows)  # old code: MalformedReply, the write stopped at its first reply
    assert (report.written, report.failed, report.embedded) == (98, 2, 98), report
    failed = {failure.ids: failure.error for failure in report.failures}
    assert set(failed) == {("r3",), ("r77",)}, failed
    assert failed[("r3",)].endswith("the reply's $.data[3] (index 3) is no vector: null")
    assert failed[("r77",)].endswith("the reply's $.data[13] (index 13) is no vector: null")
    assert DEFAULT_KEY not in repr(report)
    texts = [row["text"] for row in rows]
    arrived, expected = pinecone.arrived(), expected_vectors(texts, model=EMBED_MODEL)
    assert arrived.ids() == {f"r{i}" for i in range(n) if i not in (3, 77)}
    for i in range(n):
        if i not in (3, 77):
            np.testing.assert_array_equal(arrived.vector(f"r{i}").values, expected[i])
