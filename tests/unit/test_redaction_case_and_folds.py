"""A key echoed lower- or upper-cased, or wrapped with the next line indented (``\\r\\n  ``, ``\\n\\t``), folded
after a hyphen the server added, or split by a space it put in, is blanked whole (``Secrets.blank``): for
arbitrary keys, at any fold, and end to end through servers that echo the key so (Pinecone REST and gRPC,
Qdrant REST and gRPC)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from tests.servers import pinecone_grpc, pinecone_rest, qdrant_grpc, qdrant_rest
from tests.servers.fixtures import start_server
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import ConnectorError, connect
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports.base import forget_shared

KEY = "sk-SECRETKEY-7f3a9c1e5b"
keys = st.text(
    alphabet=st.one_of(
        st.sampled_from("abcdefXYZ0123456789-_.&<>/+=%\"'\\:;#?@"),
        st.characters(blacklist_categories=("Cs", "Z", "Cc")),
    ),
    min_size=8,
    max_size=40,
)
CASES: dict[str, Callable[[str], str]] = {"as sent": str, "lower-cased": str.lower, "upper-cased": str.upper}
FOLDS = ["\n", "\r\n  ", "\n\t", "-\n", "-\r\n ", " ", "\t", "\\n  ", "\\r\\n\\t"]


@settings(max_examples=60, deadline=None)
@given(key=keys, at=st.integers(min_value=1, max_value=39), fold=st.sampled_from(FOLDS))
@pytest.mark.parametrize("case", list(CASES))
def test_a_key_echoed_in_another_case_and_folded_is_blanked_whole(
    case: str, key: str, at: int, fold: str
) -> None:
    cased = CASES[case](key)
    if len(cased) != len(key) or cased.lower() != key.lower():  # a case mapping that changes a length
        return
    at = min(at, len(key) - 1)
    quoted = cased[:at] + fold + cased[at:]
    shown = Secrets(key).blank(f"Invalid API key: {quoted}. Check it.")
    assert shown == "Invalid API key: ***. Check it.", (key, quoted, shown)


def test_forms_the_review_found() -> None:
    secrets = Secrets(KEY)
    for quoted in (
        KEY.lower(),
        KEY.upper(),
        KEY[:10] + "\r\n  " + KEY[10:],
        KEY[:10] + "\n\t" + KEY[10:],
        KEY[:10] + " " + KEY[10:],
        KEY[:10] + "-\n" + KEY[10:],
        "\n    ".join(textwrap.wrap(KEY, 12, break_on_hyphens=False)),
    ):
        assert secrets.blank(f"bad key {quoted} here") == "bad key *** here", quoted


def test_text_without_the_key_is_left_alone() -> None:
    secrets = Secrets(KEY)
    text = "sk-secret key-7f3a9c1e5 is not it, nor SK SECRETKEY 7F3A9C1E5B\n\t-"
    assert secrets.blank(text) == text


FORMS: dict[str, Callable[[str], str]] = {
    "lower-cased": str.lower,
    "upper-cased": str.upper,
    "folded, indent 4": lambda k: "\n    ".join(textwrap.wrap(k, 12, break_on_hyphens=False)),
    "split across CRLF and a space": lambda k: k[:9] + "\r\n " + k[9:],
}


def _echo_with(monkeypatch: pytest.MonkeyPatch, form: Callable[[str], str]) -> None:
    def echoed(message: str, api_key: str | None) -> str:
        return f"{message} (the request's API key: {form(api_key or '')})"

    for module in (pinecone_rest, pinecone_grpc, qdrant_rest, qdrant_grpc):
        monkeypatch.setattr(module, "echoed", echoed)


def _refusal_text(uri: str) -> str:
    with pytest.raises(ConnectorError) as raised, connect(uri, api_key=KEY, max_retries=0) as client:
        client.write([{"id": 1, "values": [1.0, 2.0]}])
    error = raised.value
    return "\n".join([str(error), repr(error), repr(error.report)])


def _shows_none(text: str) -> None:
    assert "the request's API key: ***" in text, text
    assert not any(piece in text.lower() for piece in ("secretkey", "7f3a9c1e5b", "ey-7f3a9")), text


@pytest.fixture
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as server:
        server.store.create_collection("docs", {"": (2, "Dot")}, set(), False)
        server.script(api_key="the-right-key", echo_key=True)
        yield server
        forget_shared()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["rest", "grpc"])
@pytest.mark.parametrize("form", list(FORMS))
def test_pinecone_echoing_the_key_so_shows_none_of_it(
    kind: str, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _echo_with(monkeypatch, FORMS[form])
    with start_server(kind) as server:  # type: ignore[arg-type]
        server.script(api_key="the-right-key", echo_key=True)
        try:
            text = _refusal_text(server.uri)
        finally:
            forget_shared()
    _shows_none(text)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["rest", "grpc"])
@pytest.mark.parametrize("form", list(FORMS))
def test_qdrant_echoing_the_key_so_shows_none_of_it(
    qdrant: QdrantServer, kind: str, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _echo_with(monkeypatch, FORMS[form])
    _shows_none(_refusal_text(qdrant.uri(kind, "docs")))
