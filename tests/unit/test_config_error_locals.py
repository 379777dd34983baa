"""A bad option is raised from no frame whose locals hold the key: tools print a traceback's locals
(``traceback``'s ``capture_locals``, pytest ``--showlocals``, rich, Sentry), and the options given, a
dict of them or the parameters of ``embed()``, hold it in clear (``redaction``)."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.qdrant import QdrantOptions
from vectordb.connector.client import resolve_options
from vectordb.connector.embedding import embed, parse_embed_options
from vectordb.connector.options import convert_options, parse_options

KEY = "sk-CFGLOCALS-5e6f7a8b9c0d1e2f"
EMBED_KEY = "sk-CFGEMBED-9c8d7e6f5a4b3c2d"
PASSWORD = "PW-CFGLOCALS-77aa88bb"
EMBED = {
    "embed_url": "http://127.0.0.1:1",
    "embed_model": "m",
    "text_column": "t",
    "embed_api_key": EMBED_KEY,
}

CASES: dict[str, Callable[[], Any]] = {
    "connect: a value out of range": lambda: connect("pinecone://127.0.0.1:1", api_key=KEY, batch_size=0),
    "connect: an unknown option": lambda: connect("qdrant://127.0.0.1:1/d", api_key=KEY, bach_size=10),
    "connect: a rule across options": lambda: connect(
        "qdrant://127.0.0.1:1/d", api_key=KEY, on_error="dead_letter"
    ),
    "connect: the database's limit": lambda: connect(
        "pinecone://127.0.0.1:1", api_key=KEY, batch_size=90_000
    ),
    "connect: a password in the URI": lambda: connect(f"qdrant://u:{PASSWORD}@127.0.0.1:1/d", batch_size=0),
    "connect: a bad embedding option": lambda: connect(
        "qdrant://127.0.0.1:1/d", api_key=KEY, **EMBED, embed_batch_size=0
    ),
    "resolve_options": lambda: resolve_options(
        {"uri": "qdrant://127.0.0.1:1/d", "api_key": KEY, "timeout_s": "x"}
    ),
    "parse_options": lambda: parse_options(
        {"uri": "qdrant://127.0.0.1:1/d", "api_key": KEY, "tls": "x"}, QdrantOptions
    ),
    "convert_options": lambda: convert_options(
        {"uri": "q://h", "api_key": KEY, "max_retries": -1}, QdrantOptions
    ),
    "embed: a value out of range": lambda: embed(
        ["a"], url="http://127.0.0.1:1", model="m", api_key=EMBED_KEY, batch_size=0
    ),
    "embed: both key options": lambda: embed(
        ["a"], url="http://127.0.0.1:1", model="m", api_key=EMBED_KEY, api_key_env="X"
    ),
    "parse_embed_options": lambda: parse_embed_options(
        {"url": "http://127.0.0.1:1", "model": "m", "api_key": EMBED_KEY, "max_concurrency": 0}
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_frame_of_a_config_error_holds_the_key(case: str) -> None:
    with pytest.raises(ConfigError) as caught:
        CASES[case]()
    shown = "".join(traceback.TracebackException.from_exception(caught.value, capture_locals=True).format())
    assert "option" in str(caught.value)  # the error itself still names the option
    for secret in (KEY, EMBED_KEY, PASSWORD):
        assert secret not in shown, f"{case}: {secret} in\n{shown}"
    # the connector's frames it passed are gone: the one that raised it holds no option
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert [frame.name for frame in frames if "/connector/" in frame.filename][-1] == "returned"


def test_the_message_is_kept() -> None:
    with pytest.raises(ConfigError, match=r"option batch_size: 0 is not an integer from 1 to"):
        connect("pinecone://127.0.0.1:1", api_key=KEY, batch_size=0)
    with pytest.raises(ConfigError, match="unknown option 'bach_size' \\(did you mean 'batch_size'"):
        connect("qdrant://127.0.0.1:1/d", bach_size=10)
