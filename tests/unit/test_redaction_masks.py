"""A key a server quotes masked with no prefix ("****************kW0aE", "...kW0aE", "…W0aE"), masked with other
characters ("#", "X", "•"), with its mask percent-encoded ("%2A") or JSON-escaped ("\\u002a"), or cut to two
thirds and upper- or lower-cased, is blanked (``Secrets.blank``); these showed before. Text that only looks so
(a key's last 4 characters after fewer than 4 mask characters, "XXL", "xx", a run of 5 X) is left alone."""

from __future__ import annotations

import string
from collections.abc import Callable

import hypothesis.strategies as st
import pytest
from hypothesis import assume, example, given, settings

import tests.servers.embeddings as embeddings_server
from tests.servers.embeddings import EmbeddingsServer
from vectordb.connector.embedding import embed
from vectordb.connector.errors import AuthError
from vectordb.connector.redaction import Secrets

KEY = "sk-proj-Zq8vL2mN4pR7tX1yB6cD9fG3hJ5kW0aE"
SHORT = "sk-abcdef0123456789wxyz"
FORMS: dict[str, Callable[[str], str]] = {
    # 1. a mask run, then the key's last 4 characters or more
    "16 * and the last 5": lambda k: "*" * 16 + k[-5:],
    "... and the last 5": lambda k: "..." + k[-5:],
    "… and the last 4": lambda k: "…" + k[-4:],
    "**** and the last 4": lambda k: "****" + k[-4:],
    "first 3, ****... and the last 4": lambda k: k[:3] + "****..." + k[-4:],
    "****... and the last 4": lambda k: "****..." + k[-4:],
    # 2. masks of other characters
    "#": lambda k: k[:4] + "#" * 8 + k[-5:],
    "X": lambda k: k[:4] + "X" * 8 + k[-5:],
    "x": lambda k: k[:4] + "x" * 8 + k[-5:],
    "•": lambda k: k[:4] + "•" * 8 + k[-5:],
    "6 X and the last 4": lambda k: "X" * 6 + k[-4:],
    "#### and the last 4": lambda k: "####" + k[-4:],
    "prefix and ••••": lambda k: k[:10] + "••••",
    # 3. a mask percent-encoded or JSON-escaped
    "%2A": lambda k: k[:4] + "%2A" * 3 + k[-5:],
    "%2a and the last 4": lambda k: "%2a" * 4 + k[-4:],
    "prefix and %2A": lambda k: k[:10] + "%2A%2A%2A",
    "\\u002a": lambda k: k[:4] + "\\u002a" * 3 + k[-4:],
    "\\u2026 and the last 4": lambda k: "\\u2026" + k[-4:],
    "%E2%80%A6 and the last 4": lambda k: "%E2%80%A6" + k[-4:],
    # 4. a prefix or a suffix in another case
    "two thirds, upper-cased": lambda k: k[: -(-2 * len(k) // 3) + 1].upper(),
    "two thirds, lower-cased": lambda k: k[: -(-2 * len(k) // 3) + 1].lower(),
    "missing its first character, upper-cased": lambda k: k[1:].upper(),
    "missing its last character, lower-cased": lambda k: k[:-1].lower(),
    "prefix and ..., lower-cased": lambda k: (k[:10] + "...").lower(),
    "mask and the last 5, upper-cased": lambda k: ("*" * 8 + k[-5:]).upper(),
}
keys = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=12, max_size=64).filter(
    lambda key: any(not char.isalpha() for char in key[:8]) and any(not char.isalpha() for char in key[-8:])
)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("key", [KEY, SHORT])
def test_a_key_quoted_masked_is_blanked(key: str, form: str) -> None:
    quoted = FORMS[form](key)
    assert Secrets(key).blank(f"Incorrect API key provided: {quoted} - check it.") == (
        "Incorrect API key provided: *** - check it."
    ), quoted


@settings(max_examples=300, deadline=None)
@given(key=keys, form=st.sampled_from(list(FORMS)), end=st.sampled_from([", more.", '"}', "", "\n", " "]))
def test_random_keys_quoted_masked_are_blanked(key: str, form: str, end: str) -> None:
    quoted = FORMS[form](key)
    shown = Secrets(key).blank(f"Incorrect API key provided: {quoted}{end}")
    assert shown == f"Incorrect API key provided: ***{end}", (key, quoted, shown)


LOOKALIKES: dict[str, Callable[[str], str]] = {
    "the last 4 alone": lambda k: f"ends in {k[-4:]}.",
    "*** and the last 4": lambda k: f"got ***{k[-4:]} here",
    "... then a space and the last 4": lambda k: f"wait... {k[-4:]}",
    "XXL and xx": lambda k: f"sizes XXL{k[-4:]}, xx{k[-4:]} and XXXL {k[-4:]}",
    "5 X": lambda k: f"XXXXX{k[-4:]} and xxxxx{k[-4:]}",
    "first 3, 5 X and the last 4": lambda k: f"{k[:3]}XXXXX{k[-4:]}",
    "a prefix of 7 and a mask": lambda k: f"{k[:7]}**** here",
    "a suffix of 7 upper-cased": lambda k: f"id {k[-7:].upper()}.",
}


@settings(max_examples=300, deadline=None)
@given(key=keys, lookalike=st.sampled_from(list(LOOKALIKES)))
@example(key="sk-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXX1234", lookalike="5 X")
@example(key="sk-proj-0123456789xxxx", lookalike="XXL and xx")
@example(key="00X000000000", lookalike="5 X")
def test_text_that_only_looks_masked_is_left_alone(key: str, lookalike: str) -> None:
    # a key whose third character is an X makes a run of 6 of "first 3, 5 X": a mask
    assume(lookalike != "first 3, 5 X and the last 4" or key[2] not in "Xx")
    text = LOOKALIKES[lookalike](key)
    assert Secrets(key).blank(text) == text, (key, text)


def test_ordinary_words_are_left_alone() -> None:
    secrets = Secrets("postgres123!")
    for text in (
        "postgresql://u@db:5432/app",
        "POSTGRESQL://U@DB:5432/APP",
        'password authentication failed for user "POSTGRES"',
        "connecting to postgres... ****",
        "ERROR 123! #### XXXXXX",
    ):
        assert secrets.blank(text) == text
    assert secrets.blank("wrong password POSTGRES123! for postgres") == "wrong password *** for postgres"
    assert secrets.blank("password ****123! and ...s123!") == "password *** and ***"
    key = Secrets(KEY)
    for text in (
        "size XXL, xx-small, W0aE and kW0aE alone, sk-*** and kW0a",
        "a Markdown rule **** then words; 100% of 2A",
        "#### Heading W0aE",
        "****W0aEzz, a mask and the key's end within a word",
        "Loading… done",
    ):
        assert key.blank(text) == text


@pytest.mark.parametrize(
    "masked",
    [
        lambda k: "*" * 16 + k[-5:],
        lambda k: k[:4] + "•" * 8 + k[-5:],
        lambda k: k[:4] + "X" * 8 + k[-5:],
        lambda k: k[:4] + "%2A" * 8 + k[-5:],
    ],
    ids=["suffix only", "bullets", "X", "percent-encoded"],
)
def test_the_error_of_a_wrong_key_masked_so_shows_none_of_it(
    masked: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embeddings_server, "_masked", masked)
    with EmbeddingsServer() as server, pytest.raises(AuthError) as caught:
        embed(["a"], url=server.url, model="test-embed-64", api_key=KEY)
    message = str(caught.value)
    assert "Incorrect API key provided: ***." in message, message
    assert KEY[-4:] not in message and KEY[:4] not in message, message
