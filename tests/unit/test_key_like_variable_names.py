"""A key pasted into ``api_key_env`` / ``embed_api_key_env`` (the options for a variable's NAME) is never
quoted: not in the error that says the variable is not set, not in ``repr(options)``. Keys made of
letters, digits and ``_`` alone (Hugging Face, Mistral, Cohere, Weaviate Cloud, Jina) could pass for a
variable's name by its characters; by convention they cannot (one case, short words)."""

from __future__ import annotations

import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.client import resolve_options
from vectordb.connector.embedding import parse_embed_options
from vectordb.connector.keys import key_from

KEYS = [
    "hf_QxTbVpLmZrYwKsNdJgHfCeAuBiOyRtEw12",  # Hugging Face
    "Zk3TqLm9WxR2vBn7YcP4sDf8GhJ1aKe6UoI0",  # Weaviate Cloud, Cohere, Mistral
    "jina_3f9a1c2b7d4e5f60a1b2c3d4e5f6a7b8OqZx",  # Jina
    "a3f9c2d1e4b5a6f7081928374655abcd",  # hex, one case
    "JBSWY3DPEHPK3PXP",  # base32, one case
    "xkeysibabcdefghijklmnopqrstuvwxyz",  # one long lower-case run
]
NAMES = [
    "OPENAI_API_KEY",
    "PINECONE_API_KEY",
    "pinecone_key",
    "hf_token",
    "S3_KEY_2024",
    "KEY2",
    "_X",
    "K8S_TOKEN",
]
EMBED = {"embed_url": "http://127.0.0.1:9", "embed_model": "m", "text_column": "t"}


@pytest.mark.parametrize("key", KEYS)
def test_a_key_does_not_look_like_a_variable(key: str) -> None:
    from vectordb.connector.keys import looks_like_variable

    assert not looks_like_variable(key)


@pytest.mark.parametrize("name", NAMES)
def test_names_as_people_write_them_are_variables(name: str) -> None:
    from vectordb.connector.keys import looks_like_variable

    assert looks_like_variable(name)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("option", ["api_key_env", "embed_api_key_env"])
def test_a_key_given_as_a_variable_is_not_quoted(
    key: str, option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(key, raising=False)
    with pytest.raises(ConfigError) as caught:
        connect("qdrant://127.0.0.1:1/docs", **{option: key}, **EMBED)
    assert key not in str(caught.value)
    shown = "(not shown: this looks like a key, not a variable's name)"
    assert str(caught.value).startswith(f"option {option}: environment variable {shown} is not set")
    options = resolve_options({"uri": "qdrant://127.0.0.1:1/docs", option: key, **EMBED})
    assert key not in repr(options)
    assert f"{option}=***" in repr(options)
    embed_options = parse_embed_options({"url": "http://127.0.0.1:9", "model": "m", "api_key_env": key})
    assert key not in repr(embed_options)


@pytest.mark.parametrize("name", NAMES)
def test_a_variable_not_set_is_named(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match=f"environment variable '{name}' is not set"):
        key_from(None, name)
    options = resolve_options({"uri": "qdrant://127.0.0.1:1/docs", "api_key_env": name})
    assert f"api_key_env={name!r}" in repr(options)
    embed_options = parse_embed_options({"url": "http://127.0.0.1:9", "model": "m", "api_key_env": name})
    assert f"api_key_env={name!r}" in repr(embed_options)
