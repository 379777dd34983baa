"""A server that masks a wrong key (OpenAI: "Incorrect API key provided: sk-pro****…Q7z9") still shows its
first and last characters; such a form of a key in use is blanked whole, as the key itself is. The
prefix and the last 4 characters reached errors, reports and dead letters before."""

from __future__ import annotations

import pytest

from tests.servers.embeddings import EmbeddingsServer
from vectordb.connector.embedding import embed
from vectordb.connector.errors import AuthError
from vectordb.connector.redaction import Secrets

KEY = "sk-proj-REVIEWSECRETabcdefghijkLMNOPQ7z9"


@pytest.mark.parametrize(
    "shown",
    [
        "sk-p****************************Q7z9",
        "sk-proj-********Q7z9",
        "sk-pro…Q7z9",
        "sk-...Q7z9",
    ],
)
def test_masked_forms_of_a_key_are_blanked(shown: str) -> None:
    text = f"Incorrect API key provided: {shown}. You can find your API key at https://platform.openai.com."
    assert Secrets(KEY).blank(text) == (
        "Incorrect API key provided: ***. You can find your API key at https://platform.openai.com."
    )


def test_text_that_only_looks_masked_is_left_alone() -> None:
    secrets = Secrets(KEY)
    for text in ("sk-*** and Q7z9", "sk-***abcd", "plain words, no key"):
        assert secrets.blank(text) == text
    assert Secrets("short-key1").blank("sho***key1") == "sho***key1"  # too short to mask: 7 of its 10 shown


def test_the_error_of_a_wrong_key_shows_none_of_it() -> None:
    with EmbeddingsServer() as server, pytest.raises(AuthError) as caught:
        embed(["a"], url=server.url, model="test-embed-64", api_key=KEY)
    message = str(caught.value)
    assert "Incorrect API key provided: ***." in message
    assert KEY[:4] not in message and KEY[-4:] not in message
