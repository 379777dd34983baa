"""A reply naming another model than the earlier ones is malformed: a gateway (LiteLLM, Portkey) that falls
back to another model when the first is throttled names it in the reply, and two models of one length
(text-embedding-3-small and ada-002 are both 1536-d) pass every dimension check while mixing two vector
spaces in one index. Before, every such reply was taken and its rows written, with nothing said.

The model the first well-formed reply names is the one compared with, not the name asked for (Azure and
OpenAI may answer a deployment's or a version's name); a reply naming none is taken. Both decoders (the
native one, where built, and msgspec) read the model alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import orjson
import pytest

from tests.embedding.fixtures import EMBED_MODEL, embedding_options, expected_vectors
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options, wire
from vectordb.connector.redaction import Secrets

FALLBACK = "fallback-64"  # a gateway's other model, of the same length
ROWS = 200
BATCH = 20
DECODERS = ["native", "msgspec"]


@pytest.fixture(params=DECODERS)
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Decode with one decoder only: the native one where it is built, or msgspec with it switched off."""
    name: str = request.param
    if name == "native" and not wire.native_decoder():
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    if name == "msgspec":
        monkeypatch.setattr(wire, "_native_decode", None)
    return name


class Gateway(EmbeddingsServer):
    """An embeddings server whose requests after the first ``good`` are answered by ``FALLBACK`` (its own
    vectors, its name in the reply), and whose replies' model ``rename`` may rewrite (``None``: dropped)."""

    def __init__(self, good: int | None = None, rename: Callable[[str], str | None] | None = None) -> None:
        super().__init__(models={EMBED_MODEL: 64, FALLBACK: 64})
        self.good, self.rename, self.answered = good, rename, 0

    def _embed(self, body: bytes, *, short: bool = False) -> tuple[int, Any]:
        self.answered += 1
        if self.good is not None and self.answered > self.good:
            body = orjson.dumps(orjson.loads(body) | {"model": FALLBACK})
        n, reply = super()._embed(body, short=short)
        if self.rename is not None and reply.status == 200:
            doc = orjson.loads(reply.body)
            name = self.rename(doc.pop("model"))
            reply.body = orjson.dumps(doc if name is None else doc | {"model": name})
        return n, reply


def serve(server: Gateway) -> Iterator[Gateway]:
    with server:
        yield server


def table() -> Any:
    import pyarrow as pa

    return pa.table({"id": [f"d{i}" for i in range(ROWS)], "text": [f"doc {i}" for i in range(ROWS)]})


def write(server: EmbeddingsServer, db: ServerHandle) -> Any:
    options = embedding_options(server, embed_batch_size=BATCH, embed_max_concurrency=1, on_error="report")
    with connect(db.uri, **options) as client:
        return client.upsert(table())


def stored_as_the_model(db: ServerHandle, ids: list[str]) -> None:
    arrived = db.arrived()
    assert arrived.ids() == set(ids)
    for i in ids:
        want = expected_vectors([f"doc {i[1:]}"], model=EMBED_MODEL)[0]
        np.testing.assert_array_equal(arrived.vector(i).values, want)


def test_a_gateways_fallback_to_another_model_fails_its_rows(decoder: str, pinecone: ServerHandle) -> None:
    for server in serve(Gateway(good=3)):
        report = write(server, pinecone)
    assert (report.written, report.failed) == (3 * BATCH, ROWS - 3 * BATCH)
    (failure,) = report.failures
    assert failure.error_type == "MalformedReply"
    assert f"the reply names model {FALLBACK!r}; earlier replies named {EMBED_MODEL!r}" in failure.error
    assert "malformed twice" in failure.error  # sent again once: a fallback may pass
    assert failure.ids == tuple(f"d{i}" for i in range(3 * BATCH, ROWS))
    assert server.stats.requests == 3 + 2 * (ROWS // BATCH - 3)
    stored_as_the_model(pinecone, [f"d{i}" for i in range(3 * BATCH)])


def test_the_first_replys_name_counts_not_the_one_asked_for(decoder: str, pinecone: ServerHandle) -> None:
    """Asked for test-embed-64, every reply names a version of it: all taken."""
    for server in serve(Gateway(rename=lambda name: f"{name}-2024-01-25")):
        report = write(server, pinecone)
    assert (report.written, report.failed) == (ROWS, 0)
    stored_as_the_model(pinecone, [f"d{i}" for i in range(ROWS)])


def test_replies_naming_no_model_are_taken(decoder: str, pinecone: ServerHandle) -> None:
    """Some servers name no model: such a reply is taken, before and after replies that name one."""
    names = iter([EMBED_MODEL, None] * ROWS)
    for server in serve(Gateway(rename=lambda name: next(names))):
        report = write(server, pinecone)
    assert (report.written, report.failed) == (ROWS, 0)


def test_a_model_other_than_the_probes_fails_the_inputs_not_the_stream(decoder: str) -> None:
    """A worker told the model the driver's probe saw refuses the first reply naming another, and the
    stream goes on (the server speaks the protocol: a fallback may pass), its error quoting both names."""
    for server in serve(Gateway()):
        options = parse_embed_options({"url": server.url, "model": EMBED_MODEL, "api_key": DEFAULT_KEY})
        with EmbeddingClient(options) as client:
            client.expect_model(FALLBACK, "the driver's probe")
            result = client.embed(["one", "two"])
            assert client.model_answered == FALLBACK
    (failure,) = {(f.error_type, f.message) for f in result.failures}
    assert failure[0] == "MalformedReply"
    assert f"names model {EMBED_MODEL!r}; the driver's probe named {FALLBACK!r}" in failure[1]
    assert len(result.failures) == 2


def test_the_probe_keeps_the_model_its_reply_named(decoder: str, pinecone: ServerHandle) -> None:
    """What a driver hands its workers: the name the probe's reply gave (a deployment's), not the one asked."""
    for server in serve(Gateway(rename=lambda name: f"{name}-deployment")):
        with connect(pinecone.uri, **embedding_options(server)) as client:
            stage = client.embedding
            assert stage is not None
            assert stage.probe() == 64
    assert stage.model_answered == f"{EMBED_MODEL}-deployment"


def test_a_model_name_quoting_the_key_is_blanked(decoder: str) -> None:
    for server in serve(Gateway(rename=lambda name: f"{name} for {DEFAULT_KEY}")):
        options = parse_embed_options({"url": server.url, "model": EMBED_MODEL, "api_key": DEFAULT_KEY})
        with EmbeddingClient(options) as client:
            client.expect_model(EMBED_MODEL, "the driver's probe")
            result = client.embed(["one"])
    (failure,) = result.failures
    assert DEFAULT_KEY not in failure.message
    assert f"names model '{EMBED_MODEL} for ***'" in failure.message


def b64_reply(model: bytes | None) -> bytes:
    import base64

    vector = base64.b64encode(np.arange(4, dtype="<f4").tobytes())
    head = b'{"object":"list","data":[{"object":"embedding","index":0,"embedding":"' + vector + b'"}]'
    return head + (b"" if model is None else b',"model":' + model) + b"}"


@pytest.mark.parametrize(
    ("model", "named"),
    [
        (b'"text-embedding-3-small"', "text-embedding-3-small"),
        (None, None),
        (b"null", None),
        (b"5", None),
        (b'{"name": "m"}', None),
        (b'["m"]', None),
        (b'"a\\/b \\u00e9"', "a/b é"),
        (b'"a","model":"b"', "b"),  # a repeated key: the last, as msgspec reads it
    ],
)
def test_both_decoders_read_the_model_alike(decoder: str, model: bytes | None, named: str | None) -> None:
    body = b64_reply(model)
    decoded = wire.decode(body, 1, "POST /v1/embeddings", secrets=Secrets())
    assert decoded.model == named
    np.testing.assert_array_equal(decoded.matrix, np.arange(4, dtype=np.float32)[None])
    if decoder == "native":  # the native decoder took the reply itself
        native = wire._decode_native(body, 1)
        assert native is not None and native.model == named
