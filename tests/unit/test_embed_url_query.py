"""``embed_url`` keeps its query after the path the connector completes: Azure OpenAI's
``…/embeddings?api-version=…`` and a gateway's ``?api_key=…`` were sent as ``…?api-version=…/v1/embeddings``,
a URL that names another resource (404)."""

from __future__ import annotations

import pytest

from vectordb.connector.embedding.options import parse_embed_options


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        (
            "https://h/openai/deployments/emb/embeddings?api-version=2024-02-01",
            "https://h/openai/deployments/emb/embeddings?api-version=2024-02-01",
        ),
        ("http://h:1/v1?api-version=x", "http://h:1/v1/embeddings?api-version=x"),
        ("http://h:1/?api_key=k", "http://h:1/v1/embeddings?api_key=k"),
        ("http://h:1", "http://h:1/v1/embeddings"),
        ("http://h:1/v1/", "http://h:1/v1/embeddings"),
        ("https://h/custom/embeddings/", "https://h/custom/embeddings"),
    ],
)
def test_the_path_is_completed_and_the_query_kept(url: str, endpoint: str) -> None:
    assert parse_embed_options({"url": url, "model": "m"}).endpoint == endpoint
