"""The embedding client against the project's embeddings server: exact vectors, faults, errors, memory.

Every vector is compared exactly with the one the server derives from its text (computed here, not
asked of the server); faults are scripted on the server, never mocked in the client.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from tests.embedding.fixtures import expected_vectors, too_long, words
from tests.forks import in_forked_child
from tests.net import closed_port, silent_listener
from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, EmbeddingsServer, Fault
from vectordb.connector.embedding import (
    EmbeddingClient,
    EmbeddingFailed,
    MalformedReply,
    embed,
    parse_embed_options,
)
from vectordb.connector.embedding.client import WINDOW_PER_SLOT
from vectordb.connector.errors import (
    AuthError,
    ConfigError,
    ConnectError,
    DeadlineExceeded,
    NotFound,
    SystemicRejection,
)

TEXTS = [words(i) for i in range(300)]


def embed_with(server: EmbeddingsServer, texts: list[str], **options: object) -> np.ndarray:
    return embed(texts, url=server.url, model=DEFAULT_MODEL, api_key=DEFAULT_KEY, **options)  # type: ignore[arg-type]


def client_for(server: EmbeddingsServer, **options: object) -> EmbeddingClient:
    return EmbeddingClient(
        parse_embed_options({"url": server.url, "model": DEFAULT_MODEL, "api_key": DEFAULT_KEY, **options})
    )


# -- exact vectors ------------------------------------------------------------------------------


def test_base64_replies_give_exactly_each_texts_vector(embeddings_server: EmbeddingsServer) -> None:
    texts = [*TEXTS, "héllo ☃", "日本語", "x"]
    vectors = embed_with(embeddings_server, texts, batch_size=16, max_concurrency=4)
    assert vectors.dtype == np.float32 and vectors.flags.c_contiguous
    np.testing.assert_array_equal(vectors, expected_vectors(texts))
    assert embeddings_server.stats.formats == {"base64": -(-len(texts) // 16)}


def test_float_replies_give_the_same_vectors(embeddings_server: EmbeddingsServer) -> None:
    vectors = embed_with(embeddings_server, TEXTS, encoding_format="float", batch_size=50)
    np.testing.assert_array_equal(vectors, expected_vectors(TEXTS))
    assert embeddings_server.stats.formats == {"float": 6}


def test_a_server_that_refuses_base64_is_asked_for_floats_from_then_on() -> None:
    with EmbeddingsServer(base64="refuse") as server:
        with client_for(server, batch_size=10, max_concurrency=3) as client:
            result = client.embed(TEXTS)
            np.testing.assert_array_equal(result.vectors, expected_vectors(TEXTS))
            assert result.ok and client.stats.encoding_format == "float"
        refused = server.stats.statuses[400]
        assert 1 <= refused <= 3  # at most the requests sent before the first refusal came back
        assert server.stats.formats == {"float": 30}
        assert server.stats.requests == 30 + refused


def test_a_bad_input_is_still_isolated_on_a_server_without_base64() -> None:
    texts = list(TEXTS[:40])
    texts[0] = too_long(0)  # the very first request holds it: its refusal is not base64's fault
    with (
        EmbeddingsServer(base64="refuse") as server,
        client_for(server, batch_size=8, max_concurrency=1) as client,
    ):
        result = client.embed(texts)
    assert [f.index for f in result.failures] == [0]
    assert "maximum context length is 512 tokens" in result.failures[0].message
    np.testing.assert_array_equal(result.vectors[1:], expected_vectors(texts[1:]))
    assert np.isnan(result.vectors[0]).all()


@pytest.mark.parametrize("mode", ["ignore", "shuffle"])
def test_floats_for_base64_and_items_out_of_order_are_read_right(mode: str) -> None:
    kwargs = {"base64": "ignore"} if mode == "ignore" else {"shuffle": True}
    with EmbeddingsServer(**kwargs) as server:  # type: ignore[arg-type]
        vectors = embed_with(server, TEXTS, batch_size=32)
    np.testing.assert_array_equal(vectors, expected_vectors(TEXTS))


def test_dimensions_asks_the_model_for_shorter_vectors(embeddings_server: EmbeddingsServer) -> None:
    vectors = embed_with(embeddings_server, TEXTS, dimensions=32)
    np.testing.assert_array_equal(vectors, expected_vectors(TEXTS, 32))


def test_a_request_over_the_servers_token_limit_is_split_not_failed() -> None:
    with EmbeddingsServer(max_request_tokens=300) as server:  # about 2 inputs of 135 tokens each
        vectors = embed_with(server, TEXTS[:40], batch_size=40, max_batch_chars=1_000_000)
        assert server.stats.statuses[400] >= 1
    np.testing.assert_array_equal(vectors, expected_vectors(TEXTS[:40]))


def test_requests_are_cut_by_count_and_by_characters(embeddings_server: EmbeddingsServer) -> None:
    texts = [f"{i:04d}" + "y" * 96 for i in range(100)]  # 100 characters each
    vectors = embed_with(embeddings_server, texts, batch_size=30, max_batch_chars=1000, max_concurrency=1)
    np.testing.assert_array_equal(vectors, expected_vectors(texts))
    assert [n for _, n, _ in embeddings_server.stats.log] == [10] * 10
    embeddings_server.reset()
    embed_with(embeddings_server, texts, batch_size=30, max_batch_chars=100_000, max_concurrency=1)
    assert [n for _, n, _ in embeddings_server.stats.log] == [30, 30, 30, 10]


def test_no_texts_give_an_empty_matrix(embeddings_server: EmbeddingsServer) -> None:
    assert embed_with(embeddings_server, [], dimensions=8).shape == (0, 8)
    assert embeddings_server.stats.requests == 0


# -- faults -------------------------------------------------------------------------------------


def test_a_throttle_is_retried_no_sooner_than_retry_after(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.script(Fault.throttle(0.3))
    with client_for(embeddings_server, max_concurrency=1, batch_size=100) as client:
        result = client.embed(TEXTS[:100])
        assert (client.stats.throttled, client.stats.retries) == (1, 1)
    np.testing.assert_array_equal(result.vectors, expected_vectors(TEXTS[:100]))
    (t_throttled, _, first), (t_retried, n, second) = embeddings_server.stats.log
    assert (first, second, n) == (429, 200, 100)
    assert t_retried - t_throttled >= 0.3


def test_a_throttle_halves_the_requests_in_flight(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.script(Fault.throttle(0.05))
    with client_for(embeddings_server, max_concurrency=8, batch_size=4) as client:
        client.embed(TEXTS[:20])
        assert client.limit.limit <= 5  # halved to 4, and at most one step back up since


@pytest.mark.parametrize(
    "faults",
    [
        [Fault.error(500), Fault.error(503), Fault.error(502)],
        [Fault.drop(), Fault.drop()],
        [Fault.cut(), Fault.error(503, retry_after="0.1")],
    ],
    ids=["5xx", "dropped", "cut-mid-reply"],
)
def test_server_errors_and_broken_connections_are_retried(
    embeddings_server: EmbeddingsServer, faults: list[Fault]
) -> None:
    embeddings_server.script(*faults)
    with client_for(embeddings_server, max_concurrency=2, batch_size=50) as client:
        result = client.embed(TEXTS)
        assert client.stats.retries == len(faults)
    assert result.ok
    np.testing.assert_array_equal(result.vectors, expected_vectors(TEXTS))
    assert embeddings_server.pending_faults() == 0


def test_retries_run_out_as_per_input_failures_with_the_reason(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.script(*[Fault.error(503)] * 3)
    with client_for(embeddings_server, max_concurrency=1, batch_size=10, max_retries=2) as client:
        result = client.embed(TEXTS[:30])
    assert [f.index for f in result.failures] == list(range(10))
    assert {(f.error_type, f.retryable, f.attempts) for f in result.failures} == {("Unavailable", True, 3)}
    assert "HTTP 503: The server had an error while processing your request" in result.failures[0].message
    np.testing.assert_array_equal(result.vectors[10:], expected_vectors(TEXTS[10:30]))


def test_a_reply_slower_than_timeout_s_is_abandoned_and_retried(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.script(Fault.slow(2.0))
    started = time.monotonic()
    with client_for(embeddings_server, max_concurrency=1, batch_size=100, timeout_s=0.3) as client:
        result = client.embed(TEXTS[:100])
        assert client.stats.retries == 1
    assert time.monotonic() - started < 1.5
    np.testing.assert_array_equal(result.vectors, expected_vectors(TEXTS[:100]))


def test_a_server_that_answered_and_turned_slower_than_timeout_s_fails_each_input_with_the_reason() -> None:
    with (
        EmbeddingsServer() as server,
        client_for(server, batch_size=5, max_concurrency=2, timeout_s=0.1, max_retries=1) as client,
        pytest.raises(EmbeddingFailed) as info,
    ):
        client_embed_or_raise(client, TEXTS[:1])
        server.delay_s = 0.5  # it answered once: slow now, not gone, so each input fails on its own
        client_embed_or_raise(client, TEXTS[:10])
    failures = info.value.failures
    assert [f.index for f in failures] == list(range(10))
    assert {(f.error_type, f.attempts) for f in failures} == {("DeadlineExceeded", 2)}
    assert "no reply within 0.1 s" in failures[0].message


@pytest.mark.parametrize("first", [Fault.throttle(0.05), Fault.error(503)], ids=["429", "503"])
def test_a_server_whose_first_answer_was_an_error_is_not_taken_for_a_silent_one(first: Fault) -> None:
    # its next request times out: the inputs of that request fail, the call goes on (a silent server,
    # one that never answered at all, would stop it)
    with (
        EmbeddingsServer() as server,
        client_for(server, batch_size=5, max_concurrency=1, timeout_s=0.3, max_retries=1) as client,
    ):
        server.script(first, Fault.slow(0.6))
        result = client.embed(TEXTS[:20])
    assert sorted(f.index for f in result.failures) == [0, 1, 2, 3, 4]
    assert {f.error_type for f in result.failures} == {"DeadlineExceeded"}
    assert np.array_equal(result.vectors[5:], expected_vectors(TEXTS[5:20]))


def client_embed_or_raise(client: EmbeddingClient, texts: list[str]) -> np.ndarray:
    result = client.embed(texts)
    if result.failures:
        raise EmbeddingFailed(result.failures, len(texts), result.vectors)
    return result.vectors


def test_connections_the_server_closed_while_idle_are_reopened() -> None:
    with (
        EmbeddingsServer(idle_timeout_s=0.05) as server,
        client_for(server, max_concurrency=2, batch_size=50) as client,
    ):
        for _ in range(3):
            np.testing.assert_array_equal(client.embed(TEXTS).vectors, expected_vectors(TEXTS))
            time.sleep(0.15)  # every pooled connection is closed by the server meanwhile
        assert (client.stats.requests, client.stats.retries) == (18, 0)  # reopened, not retried


def test_a_reply_missing_a_vector_stops_the_stream(embeddings_server: EmbeddingsServer) -> None:
    # twice, before any reply was well-formed: the server does not speak the protocol (once is sent again)
    embeddings_server.script(Fault.short(), Fault.short())
    with pytest.raises(MalformedReply, match="the reply has 9 items for 10 inputs"):
        embed_with(embeddings_server, TEXTS, batch_size=10, max_concurrency=1)


# -- errors that stop everything ----------------------------------------------------------------


def test_a_bad_key_is_an_auth_error_whose_text_holds_no_key() -> None:
    key = "sk-proj-a-wrong-key-0123456789abcdef"
    with EmbeddingsServer(echo_key=True) as server:  # a server that quotes the key it got, whole
        with pytest.raises(AuthError) as info:
            embed(TEXTS, url=server.url, model=DEFAULT_MODEL, api_key=key)
        client = client_for(server, api_key=key)
        shown = [repr(client), repr(client.options), str(client.options), repr(client._transport)]
        client.close()
    assert server.stats.auth_headers == {f"Bearer {key}"}  # the server did get the key
    assert info.value.status == 401 and "Incorrect API key provided: ***" in str(info.value)
    for text in [str(info.value), repr(info.value), *map(str, info.value.args), *shown]:
        assert key not in text
    assert server.stats.requests <= 32  # stopped at the first 401: at most the requests already sent


def test_the_key_can_come_from_an_environment_variable(
    embeddings_server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", DEFAULT_KEY)
    vectors = embed(TEXTS[:5], url=embeddings_server.url, model=DEFAULT_MODEL, api_key_env="TEST_EMBED_KEY")
    np.testing.assert_array_equal(vectors, expected_vectors(TEXTS[:5]))
    with pytest.raises(ConfigError, match="option api_key_env: environment variable 'NOT_SET_ANYWHERE'"):
        embed(TEXTS[:5], url=embeddings_server.url, model=DEFAULT_MODEL, api_key_env="NOT_SET_ANYWHERE")


def test_no_key_for_a_server_that_wants_one_is_an_auth_error(embeddings_server: EmbeddingsServer) -> None:
    with pytest.raises(AuthError, match="You didn't provide an API key"):
        embed(TEXTS, url=embeddings_server.url, model=DEFAULT_MODEL)


def test_an_unknown_model_is_not_found_with_the_servers_reason(embeddings_server: EmbeddingsServer) -> None:
    with pytest.raises(NotFound, match="The model `text-embedding-9` does not exist"):
        embed(TEXTS, url=embeddings_server.url, model="text-embedding-9", api_key=DEFAULT_KEY)


def test_a_bad_dimensions_option_stops_after_a_few_inputs_not_one_failure_per_input(
    embeddings_server: EmbeddingsServer,
) -> None:
    texts = [words(i) for i in range(5000)]
    with pytest.raises(SystemicRejection, match=r"'dimensions' = 4096\. Must be between 1 and 768"):
        embed_with(embeddings_server, texts, dimensions=4096, batch_size=100, max_concurrency=2)
    assert embeddings_server.stats.requests < 200


def test_nothing_listening_is_a_connect_error() -> None:
    # a port no earlier server of this process answered on: one that did is waited for as a restart
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(ConnectError, match="cannot connect"):
        embed(TEXTS, url=url, model=DEFAULT_MODEL, timeout_s=2)


def test_a_server_that_never_answers_stops_the_call_instead_of_every_batch_waiting_out_the_timeout() -> None:
    texts = [words(i) for i in range(2000)]
    with silent_listener() as port:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match=f"127.0.0.1:{port}"):
            embed(texts, url=f"http://127.0.0.1:{port}", model=DEFAULT_MODEL, batch_size=10, timeout_s=0.3)
    # 200 requests of 0.3 s each, 8 at a time and retried: over 40 s if each waited its turn
    assert time.monotonic() - started < 15


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "localhost:8000"}, "option url: 'localhost:8000' is not an http:// or https:// URL"),
        ({"model": ""}, "option model"),
        ({"batch_size": 0}, r"option batch_size: Expected `int` >= 1"),
        ({"max_concurrency": "many"}, "option max_concurrency: Expected `int`"),
        ({"encoding_format": "binary"}, "option encoding_format"),
        ({"api_key_env": "X"}, "options api_key and api_key_env exclude each other"),
        ({"bach_size": 3}, "unknown option 'bach_size'"),
    ],
)
def test_bad_options_are_config_errors_naming_the_option(options: dict, message: str) -> None:
    raw = {"url": "http://127.0.0.1:9", "model": "m", "api_key": "sk-secret-value", **options}
    with pytest.raises(ConfigError, match=message) as info:
        parse_embed_options(raw)
    assert "sk-secret-value" not in str(info.value)


def test_the_endpoint_follows_openais_base_url_rules() -> None:
    def endpoint(url: str) -> str:
        return parse_embed_options({"url": url, "model": "m"}).endpoint

    assert endpoint("http://h:1") == "http://h:1/v1/embeddings"
    assert endpoint("http://h:1/v1/") == "http://h:1/v1/embeddings"
    assert endpoint("https://h/openai/v1") == "https://h/openai/v1/embeddings"
    assert endpoint("https://h/custom/embeddings") == "https://h/custom/embeddings"


# -- streaming ----------------------------------------------------------------------------------


@pytest.mark.timeout(60)  # it used to wait forever: the full window held back the chunk's last requests
def test_one_chunk_far_longer_than_the_window_is_embedded(embeddings_server: EmbeddingsServer) -> None:
    texts = [words(i, 3) for i in range(2000)]  # 500 requests through a window of 4
    vectors = embed_with(embeddings_server, texts, batch_size=4, max_concurrency=1)
    np.testing.assert_array_equal(vectors, expected_vectors(texts))


def test_stream_reads_ahead_of_a_slow_consumer_only_as_far_as_the_window() -> None:
    chunk_rows, batch_size, concurrency = 50, 20, 2
    pulled = 0

    def source() -> Iterator[list[str]]:
        nonlocal pulled
        for c in range(200):
            pulled += chunk_rows
            yield [words(c * chunk_rows + k, 3) for k in range(chunk_rows)]

    # the first chunk, the window's requests, the inputs held for the next request, the chunk being read
    bound = chunk_rows + WINDOW_PER_SLOT * concurrency * batch_size + batch_size + chunk_rows
    ahead = []
    with EmbeddingsServer(delay_s=0.002) as server:
        with client_for(server, batch_size=batch_size, max_concurrency=concurrency) as client:
            for k, chunk in enumerate(client.stream(source())):
                assert (chunk.offset, chunk.count) == (k * chunk_rows, chunk_rows)
                texts = [words(k * chunk_rows + i, 3) for i in range(chunk_rows)]
                np.testing.assert_array_equal(chunk.vectors, expected_vectors(texts))
                assert chunk.indices.tolist() == list(range(k * chunk_rows, (k + 1) * chunk_rows))
                time.sleep(0.01 if k < 5 else 0)  # a slow consumer at first: the feeder must wait
                ahead.append(pulled - (k + 1) * chunk_rows)
        assert server.stats.peak_in_flight <= concurrency
    assert len(ahead) == 200 and max(ahead) <= bound
    assert max(ahead[:5]) >= WINDOW_PER_SLOT * concurrency * batch_size // 2  # it does read ahead


def test_closing_a_stream_early_stops_reading_and_waits_for_requests_in_flight(
    embeddings_server: EmbeddingsServer,
) -> None:
    pulled = 0

    def source() -> Iterator[list[str]]:
        nonlocal pulled
        for c in range(10_000):
            pulled += 1
            yield [words(c)]

    with client_for(embeddings_server, batch_size=1, max_concurrency=2) as client:
        stream = client.stream(source())
        first = next(iter(stream))
        stream.close()  # type: ignore[attr-defined]
        np.testing.assert_array_equal(first.vectors, expected_vectors([words(0)]))
        in_flight = embeddings_server.stats.in_flight
    assert in_flight == 0 and pulled < 100
    assert [t.name for t in threading.enumerate() if t.name.startswith("vectordb-embed")] == []


def test_an_error_in_the_input_comes_out_after_the_chunks_before_it(
    embeddings_server: EmbeddingsServer,
) -> None:
    def source() -> Iterator[list[str]]:
        yield TEXTS[:10]
        yield TEXTS[10:20]
        raise OSError("the input file is truncated")

    got = []
    with client_for(embeddings_server, batch_size=3) as client, pytest.raises(OSError, match="truncated"):
        for chunk in client.stream(source()):
            got.append(chunk.vectors)
    np.testing.assert_array_equal(np.concatenate(got), expected_vectors(TEXTS[:20]))


def test_inputs_that_are_not_strings_fail_alone(embeddings_server: EmbeddingsServer) -> None:
    texts: list = [*TEXTS[:5], None, 17, *TEXTS[5:10]]
    with client_for(embeddings_server, batch_size=4) as client:
        result = client.embed(texts)
    assert [(f.index, f.error_type, f.attempts) for f in result.failures] == [
        (5, "InvalidInput", 0),
        (6, "InvalidInput", 0),
    ]
    assert result.failures[1].message == "input 6 is int, not a string"
    np.testing.assert_array_equal(
        result.vectors[[0, 1, 2, 3, 4, 7, 8, 9, 10, 11]], expected_vectors(TEXTS[:10])
    )


def test_an_empty_string_fails_alone_without_being_sent(embeddings_server: EmbeddingsServer) -> None:
    """OpenAI-compatible servers refuse a whole request for one empty input: finding it by splitting
    would cost requests (and isolation budget) for nothing. A text of spaces is a text, and is sent."""
    texts = [*TEXTS[:7], "", *TEXTS[7:15], " "]
    with client_for(embeddings_server, batch_size=8) as client:
        result = client.embed(texts)
        isolation = client.stats.isolation_requests
    assert [(f.index, f.error_type, f.attempts) for f in result.failures] == [(7, "InvalidInput", 0)]
    assert result.failures[0].message == "input 7 is an empty string, which embedding servers refuse"
    assert isolation == 0 and embeddings_server.stats.statuses == {200: 3}
    assert embeddings_server.stats.inputs == len(texts) - 1
    expected = expected_vectors([*TEXTS[:15], " "])
    np.testing.assert_array_equal(np.delete(result.vectors, 7, axis=0), expected)


def test_embed_is_public_in_vectordb_connector(embeddings_server: EmbeddingsServer) -> None:
    import vectordb.connector

    vectors = vectordb.connector.embed(
        TEXTS[:3], url=embeddings_server.url, model=DEFAULT_MODEL, api_key=DEFAULT_KEY
    )
    np.testing.assert_array_equal(vectors, expected_vectors(TEXTS[:3]))
    assert vectordb.connector.embed is embed and "embed" in dir(vectordb.connector)


def test_option_prefix_is_the_parsers_own_not_a_callers_option() -> None:
    from vectordb.connector.embedding.options import parse_embed_options

    raw = {"url": "http://127.0.0.1:1", "model": DEFAULT_MODEL, "option_prefix": "zzz"}
    with pytest.raises(ConfigError, match="unknown option embed_option_prefix"):
        parse_embed_options(raw, prefix="embed_")
    options = parse_embed_options(
        {"url": raw["url"], "model": DEFAULT_MODEL, "api_key_env": "NOT_SET_ANYWHERE"}, prefix="embed_"
    )
    with pytest.raises(
        ConfigError, match="option embed_api_key_env: environment variable 'NOT_SET_ANYWHERE'"
    ):
        options.credential()


# -- one client, several callers ---------------------------------------------------------------------


def test_embed_from_several_threads_gives_each_caller_its_own_vectors_and_failures(
    embeddings_server: EmbeddingsServer,
) -> None:
    batches = {k: [words(1000 * k + i) for i in range(150 + 40 * k)] for k in range(3)}
    for k, texts in batches.items():
        texts[k + 3] = too_long(k)
    results: dict[int, object] = {}
    with client_for(embeddings_server, batch_size=8, max_concurrency=4) as client:
        threads = [
            threading.Thread(target=lambda k=k: results.__setitem__(k, client.embed(batches[k])))
            for k in batches
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    for k, texts in batches.items():
        result = results[k]
        assert [f.index for f in result.failures] == [k + 3]
        good = [i for i in range(len(texts)) if i != k + 3]
        np.testing.assert_array_equal(result.vectors[good], expected_vectors([texts[i] for i in good]))


def test_a_second_stream_while_one_is_open_is_an_error(embeddings_server: EmbeddingsServer) -> None:
    with client_for(embeddings_server, batch_size=8) as client:
        first = client.stream([TEXTS[:50], TEXTS[50:100]])
        assert next(first).count == 50
        with pytest.raises(RuntimeError, match="another stream of this client is still open"):
            next(client.stream([TEXTS[:10]]))
        assert next(first).count == 50  # the open stream goes on
        first.close()
        np.testing.assert_array_equal(client.embed(TEXTS[:10]).vectors, expected_vectors(TEXTS[:10]))


def test_a_client_that_embedded_before_a_fork_embeds_in_the_child(
    embeddings_server: EmbeddingsServer,
) -> None:
    """multiprocessing's default on Linux: the child has the client but not its sender threads."""
    with client_for(embeddings_server, batch_size=8, max_concurrency=2) as client:
        assert client.embed(TEXTS[:40]).ok

        def embed_in_child() -> str:
            result = client.embed(TEXTS[40:80])
            return f"{result.ok} {bool((result.vectors == expected_vectors(TEXTS[40:80])).all())}"

        assert in_forked_child(embed_in_child) == "True True"
        assert client.embed(TEXTS[80:90]).ok  # the parent's client goes on
