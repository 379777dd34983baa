"""Replies of OpenAI's embeddings wire decoded exactly, by the native decoder and by msgspec alike, and
every malformed reply named as such."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator

import hypothesis.strategies as st
import numpy as np
import orjson
import pytest
from hypothesis import given, settings

from vectordb.connector.embedding import wire
from vectordb.connector.embedding.wire import MalformedReply, decode_reply
from vectordb.connector.redaction import Secrets

WHERE = "POST http://127.0.0.1:1/v1/embeddings"


def reply(items: list[dict[str, object]]) -> bytes:
    return orjson.dumps({"object": "list", "data": items, "model": "m", "usage": {"total_tokens": 1}})


def b64(vector: np.ndarray) -> str:
    return base64.b64encode(vector.astype("<f4").tobytes()).decode()


DECODERS = ["native", "msgspec"]


@contextlib.contextmanager
def decoder(name: str) -> Iterator[None]:
    """Decode with ``name`` only: the native decoder where it is built, or msgspec with it switched off."""
    if name == "native" and not wire.native_decoder():
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    saved = wire._native_decode
    if name == "msgspec":
        wire._native_decode = None
    try:
        yield
    finally:
        wire._native_decode = saved


@pytest.mark.parametrize("name", DECODERS)
@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 40),
    d=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
    encoding=st.sampled_from(["base64", "float"]),
    shuffled=st.booleans(),
    escaped_slashes=st.booleans(),
)
def test_any_reply_decodes_to_the_exact_matrix_in_input_order(
    name: str, n: int, d: int, seed: int, encoding: str, shuffled: bool, escaped_slashes: bool
) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, d)).astype(np.float32)
    order = rng.permutation(n) if shuffled else np.arange(n)
    items: list[dict[str, object]] = [
        {
            "object": "embedding",
            "index": int(i),
            "embedding": b64(matrix[i]) if encoding == "base64" else matrix[i].tolist(),
        }
        for i in order
    ]
    body = reply(items)
    if escaped_slashes:  # JSON may escape '/', which base64 uses
        body = body.replace(b"/", b"\\/")
    with decoder(name):
        decoded = decode_reply(body, n, WHERE, secrets=Secrets())
    assert decoded.dtype == np.float32
    assert decoded.shape == (n, d)
    assert np.array_equal(decoded, matrix)


VECTOR = np.arange(4, dtype=np.float32)


@pytest.mark.parametrize(
    ("body", "count", "message"),
    [
        (b"<html>502 Bad Gateway</html>", 1, "not an embeddings list .*<html>502"),
        (b'{"object": "list"}', 1, "not an embeddings list .*data"),
        (b'{"data": {"index": 0}}', 1, r"not an embeddings list .*\$\.data"),
        (reply([{"embedding": b64(VECTOR)}]), 1, r"not an embeddings list .*index"),
        (reply([{"index": 0}]), 1, r"not an embeddings list .*embedding"),
        (reply([{"index": 0, "embedding": "not base64!"}]), 1, r"not an embeddings list .*base64"),
        (reply([{"index": 0, "embedding": [1, "x"]}]), 1, r"not an embeddings list"),
        (reply([{"index": 0, "embedding": b64(VECTOR)}]), 2, "1 items for 2 inputs"),
        (reply([{"index": i, "embedding": b64(VECTOR)} for i in (0, 0)]), 2, r"indices are not 0\.\.1"),
        (reply([{"index": i, "embedding": b64(VECTOR)} for i in (1, 2)]), 2, r"indices are not 0\.\.1"),
        (
            reply([{"index": 0, "embedding": b64(VECTOR)}, {"index": 1, "embedding": b64(VECTOR[:3])}]),
            2,
            "base64 embeddings of unequal lengths",
        ),
        (
            reply([{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}]),
            2,
            "embeddings of unequal lengths",
        ),
        (
            reply([{"index": 0, "embedding": b64(VECTOR)}, {"index": 1, "embedding": VECTOR.tolist()}]),
            2,
            "neither all base64 strings nor all lists of numbers",
        ),
        (
            reply([{"index": 0, "embedding": base64.b64encode(b"abcdef").decode()}]),
            1,
            "whole, non-empty float32",
        ),
        (reply([{"index": i, "embedding": ""} for i in (0, 1)]), 2, "whole, non-empty float32"),
        (b'{"x": ' + b"[" * 5000 + b"]" * 5000 + b', "data": []}', 1, "not an embeddings list"),
        (b"[" + reply([{"index": 0, "embedding": b64(VECTOR)}]) + b"]", 1, "not an embeddings list"),
        (b'{"data": [[0, "' + b64(VECTOR).encode() + b'"]]}', 1, "not an embeddings list"),
        (b'[[[0, "' + b64(VECTOR).encode() + b'"]]]', 1, "not an embeddings list"),
        (reply([{"index": i, "embedding": []} for i in (0, 1)]), 2, "empty embeddings"),
    ],
)
@pytest.mark.parametrize("name", DECODERS)
def test_a_malformed_reply_is_fatal_and_says_what_is_wrong(
    name: str, body: bytes, count: int, message: str
) -> None:
    with decoder(name), pytest.raises(MalformedReply, match=message) as caught:
        decode_reply(body, count, WHERE, secrets=Secrets())
    assert caught.value.fatal
    assert str(caught.value).startswith(WHERE)
