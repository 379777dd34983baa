"""Servers that echo the key in a form other than the one sent, end to end through the transports.

The project's servers quote the key as they read it (``script.echoed``); here that helper is replaced
with the forms real servers produce: the key trimmed (HTTP servers drop a field value's surrounding
whitespace, then quote what they read) and the key percent-encoded in lower case, HTML-escaped, inside
base64 of a longer text, or wrapped across lines. None of it may show in what a failed write leaves.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest

from tests.servers import pinecone_grpc, pinecone_rest, qdrant_grpc, qdrant_rest
from tests.servers.fixtures import start_server
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import ConnectorError, connect
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(60)

TRIMMED = "sk-SECRETKEY-7f3a9c1e5b"
PASTED = f"  {TRIMMED} "  # as pasted from a console, with the spaces around it
ECHOING_MODULES = (pinecone_rest, pinecone_grpc, qdrant_rest, qdrant_grpc)


def _echo_with(monkeypatch: pytest.MonkeyPatch, form: Callable[[str], str]) -> None:
    """Every project server quotes ``form(key)`` of the key its request carried."""

    def echoed(message: str, api_key: str | None) -> str:
        return f"{message} (the request's API key: {form(api_key or '')})"

    for module in ECHOING_MODULES:
        monkeypatch.setattr(module, "echoed", echoed)


def _refusal_text(uri: str, key: str, **options: object) -> str:
    """The error of a write the server refuses (wrong key), as str, repr and with its report."""
    with (
        pytest.raises(ConnectorError) as raised,
        connect(uri, api_key=key, max_retries=0, **options) as client,
    ):
        client.write([{"id": 1, "values": [1.0, 2.0]}])
    error = raised.value
    return "\n".join([str(error), repr(error), repr(error.report)])


@pytest.fixture
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as server:
        server.store.create_collection("docs", {"": (2, "Dot")}, set(), False)
        server.script(api_key="the-right-key", echo_key=True)
        yield server
        forget_shared()


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_pinecone_echoing_the_trimmed_key_shows_none_of_it(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _echo_with(monkeypatch, str.strip)
    with start_server(kind) as server:
        server.script(api_key="the-right-key", echo_key=True)
        try:
            text = _refusal_text(server.uri, PASTED)
        finally:
            forget_shared()
    assert "the request's API key: ***" in text and TRIMMED[3:15] not in text, text


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_qdrant_echoing_the_trimmed_key_shows_none_of_it(
    qdrant: QdrantServer, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _echo_with(monkeypatch, str.strip)
    text = _refusal_text(qdrant.uri(kind, "docs"), PASTED)
    assert "the request's API key: ***" in text and TRIMMED[3:15] not in text, text


ODD_KEY = "sk-A&b/c+d=e<f>-7f3a9c1e5b"  # Qdrant takes any string as a key
ENCODED: dict[str, Callable[[str], str]] = {
    "percent, lower-case hex": lambda key: re.sub(
        "%[0-9A-F]{2}", lambda m: m[0].lower(), quote(key, safe="")
    ),
    "html": html.escape,
    "base64 of a header line": lambda key: base64.b64encode(f"api-key={key}".encode()).decode(),
    "wrapped at 16": lambda key: "\n".join(key[i : i + 16] for i in range(0, len(key), 16)),
}


@pytest.mark.parametrize("kind", ["rest", "grpc"])
@pytest.mark.parametrize("encoding", list(ENCODED))
def test_qdrant_echoing_the_key_encoded_shows_none_of_it(
    qdrant: QdrantServer, kind: str, encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _echo_with(monkeypatch, ENCODED[encoding])
    text = _refusal_text(qdrant.uri(kind, "docs"), ODD_KEY)
    assert "the request's API key: " in text, text
    shown = text.split("the request's API key: ")[1].split(")")[0]
    assert "***" in shown and "7f3a9c1e5b" not in shown and "N2YzYTljMWU1Y" not in shown, shown
