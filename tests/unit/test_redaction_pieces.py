"""A key an endpoint quotes by a prefix and a mask ("sk-proj-Zq8vL2mN4pR7tX1y..."), in another case, or cut
off mid-key (a message shortened by the server, a key missing its first or last character) is blanked
(``Secrets.blank``); these showed before. Ordinary words that a credential starts with, or a piece of it
inside a longer word, are left alone."""

from __future__ import annotations

import string
from collections.abc import Callable

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from vectordb.connector.redaction import Secrets

KEY = "sk-proj-Zq8vL2mN4pR7tX1yB6cD9fG3hJ5kW0aE"
SHORT = "sk-abcdef0123456789wxyz"
FORMS: dict[str, Callable[[str], str]] = {
    "24-char prefix and ...": lambda k: k[:24] + "...",
    "24-char prefix and ****": lambda k: k[:24] + "*" * max(3, len(k) - 24),
    "cut mid-key": lambda k: k[: len(k) - 3],
    "13-char prefix and ...": lambda k: k[:13] + "...",
    "all but the last 4 and ****": lambda k: k[:-4] + "****",
    "8-char prefix and …": lambda k: k[:8] + "…",
    "missing its last character": lambda k: k[:-1],
    "missing its first character": lambda k: k[1:],
    "upper-cased mask": lambda k: (k[:3] + "****" + k[-4:]).upper(),
    "mask, its end upper-cased": lambda k: k[:6] + "*" * 12 + k[-4:].upper(),
    "upper-cased prefix and mask": lambda k: (k[:10] + "****").upper(),
}
keys = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=12, max_size=64).filter(
    lambda key: any(not char.isalpha() for char in key[:8]) and any(not char.isalpha() for char in key[-8:])
)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("key", [KEY, SHORT])
def test_a_key_quoted_by_a_piece_of_it_is_blanked(key: str, form: str) -> None:
    quoted = FORMS[form](key)
    assert Secrets(key).blank(f"Incorrect API key provided: {quoted} - check it.") == (
        "Incorrect API key provided: *** - check it."
    ), quoted


@settings(max_examples=200, deadline=None)
@given(key=keys, form=st.sampled_from(list(FORMS)), end=st.sampled_from([", more.", '"}', "", "\n"]))
def test_random_keys_quoted_by_a_piece_are_blanked(key: str, form: str, end: str) -> None:
    quoted = FORMS[form](key)
    shown = Secrets(key).blank(f"Incorrect API key provided: {quoted}{end}")
    assert shown == f"Incorrect API key provided: ***{end}", (key, quoted, shown)


@settings(max_examples=200, deadline=None)
@given(key=keys, cut=st.integers(min_value=0, max_value=64), start=st.booleans())
def test_a_key_cut_to_two_thirds_or_more_is_blanked(key: str, cut: int, start: bool) -> None:
    size = max(8, -(-2 * len(key) // 3), len(key) - cut)  # the keys hold a digit, - or _ in 8 at each end
    quoted = key[-size:] if start else key[:size]
    shown = Secrets(key).blank(f"message: {quoted}")
    assert shown == "message: ***", (key, quoted, shown)


def test_ordinary_words_and_pieces_inside_words_are_left_alone() -> None:
    secrets = Secrets("postgres123!")
    for text in (
        "postgresql://u@db:5432/app",
        'password authentication failed for user "postgres"',
        "connecting to postgres...",
        "xpostgres123",
    ):
        assert secrets.blank(text) == text
    assert secrets.blank("wrong password postgres123! for postgres") == "wrong password *** for postgres"
    key = Secrets(KEY)
    for text in ("keys start with sk-proj- here", "sk-proj-other-key-1234", "sk-*** and kW0a"):
        assert key.blank(text) == text
    assert (
        key.blank(f"x{KEY[:30]}y and {KEY[:26]}.") == f"x{KEY[:30]}y and {KEY[:26]}."
    )  # inside a word; short
    short = Secrets("secret-pw1")  # under 12 characters: only whole
    for text in ("secret-pw", "secret-...", "ecret-pw1", "SECRET-PW***"):
        assert short.blank(text) == text


def test_a_prefix_shows_more_than_a_word() -> None:
    # a credential starting with 8 letters: its pieces hold the first character that is not one
    secrets = Secrets("Passwords-2024-long")
    assert secrets.blank("Passwords are long") == "Passwords are long"
    assert secrets.blank("Passwords-2024-lo") == "***"
    assert secrets.blank("Passwords-...") == "***"
