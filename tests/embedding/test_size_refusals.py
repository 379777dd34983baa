"""A request refused for its size (413, TEI's "batch size 64 > maximum allowed batch size 32", OpenAI's
"Too many inputs" or tokens per request) holds no bad input: once one half of it is accepted, the other
half is sent whole too, where it was taken to hold a refused input and split down to single texts (8
requests for each 64-text request against a 32-input limit, now 3). Nothing is lost or counted twice."""

from __future__ import annotations

from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.errors import Rejected


def test_a_request_over_the_servers_input_limit_costs_three_requests_not_eight() -> None:
    texts = [f"text {i}" for i in range(640)]
    options = {"model": "test-embed-64", "api_key": DEFAULT_KEY, "batch_size": 64, "max_concurrency": 2}
    with (
        EmbeddingsServer(max_inputs=32) as server,
        EmbeddingClient(parse_embed_options(options | {"url": server.url})) as client,
    ):
        result = client.embed(texts)
    assert result.ok and client.stats.embedded == 640 and client.stats.failed == 0
    assert server.stats.embedded == 640  # each text embedded once
    assert client.stats.isolation_requests == 20  # each of the 10 refused requests: two halves of 32
    # and once more as floats each refusal sent before the server's base64 answer was known: the first, or
    # the first two when both senders were on the wire at once (max_concurrency 2, a loaded machine)
    assert client.stats.requests in (31, 32), client.stats.requests


def test_size_refusals_are_told_from_input_refusals() -> None:
    from vectordb.connector.isolation import refuses_size

    for status, message in [
        (413, "Payload Too Large"),
        (400, "batch size 64 > maximum allowed batch size 32"),
        (400, "Too many inputs. The max number of inputs is 2048."),
        (400, "Requested 400000 tokens, max 300000 tokens per request"),
    ]:
        assert refuses_size(Rejected(message, status=status)), message
    assert not refuses_size(Rejected("This model's maximum context length is 512 tokens", status=400))
