"""A vector holding NaN or infinity (a base64 NaN, a float over float32's range such as 1e39) is no
embedding: its input fails alone ("the embedding server returned a non-finite vector"), on the native
and the Python decoder alike, and the other inputs of the reply are kept. They were accepted before:
``embed()`` returned them, and a write blamed the user's row for them and counted it embedded."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import orjson
import pytest

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer, _Reply, vectors_for
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options

POISON = "poison"
REASON = "the embedding server returned a non-finite vector"


class PoisonServer(EmbeddingsServer):
    """Answers the vector of ``POISON`` with ``bad`` in it, in the format asked for (base64 or floats)."""

    def __init__(self, bad: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bad = bad

    def _embed(self, body: bytes, *, short: bool = False) -> tuple[int, _Reply]:
        doc = orjson.loads(body)
        texts = doc["input"]
        vectors = vectors_for(texts, 64, doc["model"]).astype(np.float64)
        vectors[[k for k, text in enumerate(texts) if text == POISON], 3] = self.bad
        if doc.get("encoding_format") == "base64":
            items: list[Any] = [base64.b64encode(v.astype("<f4").tobytes()).decode() for v in vectors]
        else:
            items = [[float(x) for x in v] for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(items)]
        return len(texts), _Reply(200, orjson.dumps({"object": "list", "data": data, "model": doc["model"]}))


@pytest.mark.parametrize(("bad", "encoding"), [(np.nan, "base64"), (np.inf, "base64"), (1e39, "float")])
def test_a_non_finite_vector_fails_its_input_alone(bad: float, encoding: str) -> None:
    texts = ["a", POISON, "b", "c"]
    options = {"model": "test-embed-64", "api_key": DEFAULT_KEY, "encoding_format": encoding}
    with (
        PoisonServer(bad, api_key=DEFAULT_KEY) as server,
        EmbeddingClient(parse_embed_options(options | {"url": server.url})) as client,
    ):
        result = client.embed(texts)
        assert (client.stats.embedded, client.stats.failed) == (3, 1)
    [failure] = result.failures
    assert (failure.index, failure.error_type, failure.retryable) == (1, "MalformedReply", False)
    assert failure.message.endswith(REASON)
    good = [0, 2, 3]
    assert (result.vectors[good] == vectors_for([texts[i] for i in good], 64, "test-embed-64")).all()


def test_the_write_fails_that_row_with_the_servers_fault_and_writes_the_others(
    pinecone: ServerHandle,
) -> None:
    rows = [{"id": f"r{i}", "text": POISON if i == 3 else f"hello {i}"} for i in range(8)]
    with (
        PoisonServer(np.nan, api_key=DEFAULT_KEY) as server,
        connect(
            pinecone.uri,
            on_error="report",
            **embedding_options(server),
        ) as client,
    ):
        report = client.upsert(rows)
    assert (report.written, report.failed, report.embedded) == (7, 1, 7)
    [failure] = report.failures
    assert failure.ids == ("r3",) and failure.error.endswith(REASON)
    assert sorted(pinecone.arrived().ids()) == sorted(f"r{i}" for i in range(8) if i != 3)
