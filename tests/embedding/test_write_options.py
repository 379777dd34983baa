"""The write's ``max_retries``, ``timeout_s`` and ``isolation_budget`` are per request, and an embedding
request is one of the write's: the embedding stage honours them as the upserts do."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.embedding.fixtures import embedding_options, too_long, words
from tests.servers.embeddings import EmbeddingsServer, Fault
from tests.servers.fixtures import ServerHandle
from vectordb.connector import ConfigError, connect
from vectordb.connector.options import BackendOptions


def embedding(server: EmbeddingsServer, **extra: Any) -> dict[str, Any]:
    return embedding_options(server, dimension=64, on_error="report") | extra


def test_the_embedding_options_take_the_writes_request_options() -> None:
    options = BackendOptions(
        uri="chroma://127.0.0.1:1/c",
        embed_url="http://127.0.0.1:9",
        embed_model="m",
        text_column="t",
        max_retries=2,
        timeout_s=7.5,
        isolation_budget=0.5,
    )
    embed = options.embed_options()
    assert embed is not None
    assert (embed.max_retries, embed.timeout_s, embed.isolation_budget) == (2, 7.5, 0.5)


def test_max_retries_0_sends_an_embedding_request_once(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    with connect(pinecone.uri, **embedding(embeddings_server, max_retries=0)) as client:
        assert client.embedding is not None
        client.embedding.probe()  # the endpoint has answered: a 503 after it is not a host that is down
        embeddings_server.reset()
        embeddings_server.script(*[Fault.error(503, retry_after="0.01")] * 4)
        report = client.upsert([{"id": "a", "text": "hello"}])
    assert embeddings_server.stats.requests == 1
    assert (report.written, report.failed) == (0, 1)
    assert report.failures[0].error_type == "Unavailable"


def test_timeout_s_bounds_the_wait_for_an_embedding_reply(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    with connect(pinecone.uri, **embedding(embeddings_server, max_retries=0, timeout_s=0.5)) as client:
        assert client.embedding is not None
        client.embedding.probe()
        embeddings_server.script(Fault.slow(4.0))
        started = time.monotonic()
        report = client.upsert([{"id": "a", "text": "hello"}])
        took = time.monotonic() - started
    assert took < 2.5, f"waited {took:.1f} s for a reply with timeout_s=0.5"
    assert (report.written, report.failed) == (0, 1)
    assert report.failures[0].error_type == "DeadlineExceeded"


def test_isolation_budget_0_fails_a_refused_embedding_request_whole(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    rows = [{"id": f"r{i}", "text": too_long(i) if i == 2 else words(i)} for i in range(4)]
    with connect(pinecone.uri, **embedding(embeddings_server, isolation_budget=0)) as client:
        assert client.embedding is not None
        client.embedding.probe()  # base64 is known to work: a refusal is not tried again as floats
        embeddings_server.reset()
        report = client.upsert(rows)
    assert embeddings_server.stats.requests == 1  # not split: no request left to isolate with
    assert (report.written, report.failed) == (0, 4)
    assert {failure.error_type for failure in report.failures} == {"NotIsolated"}


def test_embed_max_batch_chars_bounds_the_characters_of_each_embedding_request(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    """Texts of 100 characters each, at most 350 a request: 3 texts a request, where 64 would go without."""
    n = 40
    rows = [{"id": f"r{i}", "text": f"{i:03d} " + "x" * 96} for i in range(n)]
    assert {len(row["text"]) for row in rows} == {100}
    options = embedding(embeddings_server, embed_max_batch_chars="350")  # as Spark hands it: a string
    with connect(pinecone.uri, **options) as client:
        report = client.upsert(rows)
    assert report.written == n and not report.failures
    sent = sorted(inputs for _, inputs, status in embeddings_server.stats.log if status == 200)
    assert sent == [1] + [3] * 13  # each request full up to the limit; the last takes what is left


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "option embed_max_batch_chars: '0' is not an integer from 1 to 1073741824"),
        ("lots", "option embed_max_batch_chars: 'lots' is not an integer from 1 to 1073741824"),
    ],
)
def test_a_bad_embed_max_batch_chars_is_a_config_error_naming_it(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        connect("chroma://127.0.0.1:1/c", **embedding_without_server(embed_max_batch_chars=value))


def embedding_without_server(**extra: Any) -> dict[str, Any]:
    return {"text_column": "text", "embed_url": "http://127.0.0.1:9", "embed_model": "m"} | extra


def test_vectordb_load_hands_embed_max_batch_chars_to_the_writer() -> None:
    from vectordb.spark.load import parse_args, writer_options

    flags = [
        "--input",
        "docs.jsonl",
        "--text-column",
        "text",
        "--embed-url",
        "http://h",
        "--embed-model",
        "m",
    ]
    args = parse_args([*flags, "--embed-max-batch-chars", "5000"])
    assert writer_options(args, None, "reports")["embed_max_batch_chars"] == "5000"
