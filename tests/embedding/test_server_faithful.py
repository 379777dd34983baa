"""The embeddings test server speaks OpenAI's protocol: the official ``openai`` client and Baseten's
``baseten-performance-client`` get the vectors each text derives to, and OpenAI's errors, from it.

What the connector's own client is tested against is only worth as much as this: if these two
clients, written against the real services, agree with the server, so does the protocol it speaks.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator

import numpy as np
import openai
import pytest
from baseten_performance_client import PerformanceClient, RequestProcessingPreference

from tests.embedding.fixtures import expected_vectors, too_long, words
from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, EmbeddingsServer, Fault

TEXTS = [words(i) for i in range(50)] + ["héllo wörld ☃", "a", "日本語のテキスト", "tab\tand\nnewline"]


_made: list[openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _close_openai_clients() -> Iterator[None]:
    """Each test's OpenAI clients closed at its end: an unclosed one's socket is a ResourceWarning raised
    wherever the collector next runs, in some later test."""
    yield
    while _made:
        _made.pop().close()


def openai_client(server: EmbeddingsServer, key: str = DEFAULT_KEY, **kwargs: object) -> openai.OpenAI:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, **kwargs)  # type: ignore[arg-type]
    _made.append(client)
    return client


def baseten(server: EmbeddingsServer, key: str = DEFAULT_KEY) -> PerformanceClient:
    return PerformanceClient(base_url=server.url, api_key=key)


def as_matrix(data: list) -> np.ndarray:
    return np.array([item.embedding for item in data], dtype=np.float32)


def test_openai_client_gets_each_texts_vector_in_base64_and_float(
    embeddings_server: EmbeddingsServer,
) -> None:
    client = openai_client(embeddings_server)
    reply = client.embeddings.create(input=TEXTS, model=DEFAULT_MODEL)  # the client asks for base64
    assert embeddings_server.stats.formats == {"base64": 1}
    np.testing.assert_array_equal(as_matrix(reply.data), expected_vectors(TEXTS))
    assert [item.index for item in reply.data] == list(range(len(TEXTS)))
    assert reply.model == DEFAULT_MODEL and reply.usage.prompt_tokens > len(TEXTS)

    reply = client.embeddings.create(input=TEXTS, model=DEFAULT_MODEL, encoding_format="float", dimensions=32)
    assert embeddings_server.stats.formats == {"base64": 1, "float": 1}
    np.testing.assert_array_equal(as_matrix(reply.data), expected_vectors(TEXTS, 32))


def test_async_openai_client_gets_the_same_vectors(embeddings_server: EmbeddingsServer) -> None:
    async def run() -> np.ndarray:
        async with openai.AsyncOpenAI(base_url=f"{embeddings_server.url}/v1", api_key=DEFAULT_KEY) as client:
            replies = await asyncio.gather(
                *(
                    client.embeddings.create(input=TEXTS[i : i + 10], model=DEFAULT_MODEL)
                    for i in range(0, 50, 10)
                )
            )
        return np.concatenate([as_matrix(reply.data) for reply in replies])

    np.testing.assert_array_equal(asyncio.run(run()), expected_vectors(TEXTS[:50]))


def test_openai_client_raises_openais_errors(embeddings_server: EmbeddingsServer) -> None:
    client = openai_client(embeddings_server, max_retries=0)
    with pytest.raises(openai.BadRequestError) as bad:
        client.embeddings.create(input=[TEXTS[0], too_long(1)], model=DEFAULT_MODEL)
    assert bad.value.status_code == 400
    assert "maximum context length is 512 tokens" in bad.value.message
    assert isinstance(bad.value.body, dict) and bad.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError, match=r"\$\.input' is invalid"):
        client.embeddings.create(input=["fine", ""], model=DEFAULT_MODEL)  # OpenAI refuses empty strings
    with pytest.raises(openai.NotFoundError) as missing:
        client.embeddings.create(input=TEXTS, model="no-such-model")
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.AuthenticationError) as auth:
        openai_client(embeddings_server, key="sk-wrong-0000000000001234", max_retries=0).embeddings.create(
            input=TEXTS, model=DEFAULT_MODEL
        )
    assert auth.value.code == "invalid_api_key"
    assert "sk-wrong-0000000000001234" not in auth.value.message  # quoted masked, as OpenAI does
    with pytest.raises(openai.BadRequestError, match="'dimensions' = 4096"):
        client.embeddings.create(input=TEXTS, model=DEFAULT_MODEL, dimensions=4096)


def test_openai_client_retries_a_throttle_after_retry_after_and_a_503(
    embeddings_server: EmbeddingsServer,
) -> None:
    embeddings_server.script(Fault.throttle(0.4), Fault.error(503))
    client = openai_client(embeddings_server, max_retries=3)
    started = time.monotonic()
    reply = client.embeddings.create(input=TEXTS, model=DEFAULT_MODEL)
    assert time.monotonic() - started >= 0.4  # the client waited as Retry-After said
    np.testing.assert_array_equal(as_matrix(reply.data), expected_vectors(TEXTS))
    assert embeddings_server.stats.statuses == {429: 1, 503: 1, 200: 1}
    (t_429, _, s1), (t_503, _, s2), (_, n, s3) = embeddings_server.stats.log
    assert (s1, s2, s3, n) == (429, 503, 200, len(TEXTS))
    assert t_503 - t_429 >= 0.4


def test_openai_client_survives_a_dropped_connection(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.script(Fault.drop(), Fault.cut())
    reply = openai_client(embeddings_server, max_retries=3).embeddings.create(
        input=TEXTS, model=DEFAULT_MODEL
    )
    np.testing.assert_array_equal(as_matrix(reply.data), expected_vectors(TEXTS))
    assert embeddings_server.pending_faults() == 0


def test_baseten_performance_client_gets_each_texts_vector(embeddings_server: EmbeddingsServer) -> None:
    client = baseten(embeddings_server)
    preference = RequestProcessingPreference(batch_size=8, max_concurrent_requests=4, timeout_s=10.0)
    reply = client.embed(input=TEXTS, model=DEFAULT_MODEL, preference=preference)
    np.testing.assert_array_equal(reply.numpy(), expected_vectors(TEXTS))
    assert embeddings_server.stats.requests == -(-len(TEXTS) // 8)  # its own batching, one request each
    assert embeddings_server.stats.formats == {"float": embeddings_server.stats.requests}

    reply = client.embed(input=TEXTS, model=DEFAULT_MODEL, encoding_format="base64", dimensions=48)
    decoded = np.stack([np.frombuffer(base64.b64decode(item.embedding), "<f4") for item in reply.data])
    np.testing.assert_array_equal(decoded, expected_vectors(TEXTS, 48))


def test_baseten_performance_client_meets_openais_errors(embeddings_server: EmbeddingsServer) -> None:
    preference = RequestProcessingPreference(batch_size=8, max_concurrent_requests=2, max_retries=0)
    with pytest.raises(Exception, match=r"400 Bad Request.*maximum context length is 512 tokens"):
        baseten(embeddings_server).embed(
            input=[too_long(0), *TEXTS], model=DEFAULT_MODEL, preference=preference
        )
    with pytest.raises(Exception, match=r"401 Unauthorized.*invalid_api_key"):
        baseten(embeddings_server, "sk-wrong-0000000000001234").embed(input=TEXTS, model=DEFAULT_MODEL)
    with pytest.raises(Exception, match=r"404.*model_not_found"):
        baseten(embeddings_server).embed(input=TEXTS, model="no-such-model", preference=preference)


def test_baseten_performance_client_retries_scripted_faults(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.script(Fault.error(500), Fault.throttle(0.1))
    preference = RequestProcessingPreference(batch_size=64, max_concurrent_requests=1, max_retries=3)
    reply = baseten(embeddings_server).embed(input=TEXTS, model=DEFAULT_MODEL, preference=preference)
    np.testing.assert_array_equal(reply.numpy(), expected_vectors(TEXTS))
    assert embeddings_server.stats.statuses == {500: 1, 429: 1, 200: 1}
