"""``Secrets.blank`` against every encoding a server may quote a key in, for arbitrary keys (``&<>/+=``,
quotes, backslashes, spaces, non-ASCII): Go's JSON escapes and ``ensure_ascii`` escapes in any field,
percent-encoding in either case of hex, HTML entities, base64 of a longer text holding the key at any
byte offset, and the key wrapped across lines. ``reason_of`` quotes a body whose message field it does
not know whole, so the same rules hold for it."""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from vectordb.connector.redaction import Secrets
from vectordb.connector.transports.http import reason_of

SPECIALS = "&<>/+=%\"'\\ :;#?@"
keys = st.text(
    alphabet=st.one_of(
        st.sampled_from("abcdefXYZ0123456789-_." + SPECIALS),
        st.sampled_from("éü中😀"),
        st.characters(blacklist_categories=("Cs",)),
    ),
    min_size=8,
    max_size=40,
).filter(lambda key: len(key.strip()) >= 8)


def go_json(text: str) -> str:
    """A JSON string as Go's encoding/json writes it: ``&<>`` (and U+2028/9) as ``\\u00XX``."""
    out = json.dumps(text, ensure_ascii=False)
    for char in "&<>\u2028\u2029":
        out = out.replace(char, f"\\u{ord(char):04x}")
    return out


def upper_hex_escapes(text: str) -> str:
    return re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), text)


def lower_hex_percent(text: str) -> str:
    return re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), text)


ENCODINGS: dict[str, Callable[[str], str]] = {
    "go json": lambda key: go_json(key)[1:-1],
    "ascii json": lambda key: json.dumps(key)[1:-1],
    "ascii json, upper-case hex": lambda key: upper_hex_escapes(json.dumps(key))[1:-1],
    "percent, upper-case hex": lambda key: quote(key, safe=""),
    "percent, lower-case hex": lambda key: lower_hex_percent(quote(key, safe="")),
    "form encoding": lambda key: lower_hex_percent(quote_plus(key, safe="")),
    "html": lambda key: html.escape(key),
    "html, numeric beyond ascii": lambda key: html.escape(key).encode("ascii", "xmlcharrefreplace").decode(),
    "wrapped at 16": lambda key: "\n".join(key[i : i + 16] for i in range(0, len(key), 16)),
    "wrapped at 7, crlf": lambda key: "\r\n".join(key[i : i + 7] for i in range(0, len(key), 7)),
}


@settings(max_examples=40, deadline=None)
@given(key=keys)
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_a_key_echoed_in_any_encoding_is_blanked(encoding: str, key: str) -> None:
    quoted = ENCODINGS[encoding](key)
    shown = Secrets(key).blank(f"Invalid API key {quoted}. Check it.")
    assert shown == "Invalid API key ***. Check it.", (key, quoted, shown)


def base64_piece(raw: bytes, offset: int, encode: Callable[[bytes], bytes]) -> str:
    """The characters of base64(``offset`` bytes + ``raw`` + more) made of ``raw``'s bits alone."""
    text = encode(b"x" * offset + raw + b"!").decode()
    first = -(-8 * offset // 6)  # character i holds bits [6i, 6i + 6)
    return text[first : 8 * (offset + len(raw)) // 6]


@settings(max_examples=40, deadline=None)
@given(key=keys, prefix=st.binary(max_size=7), suffix=st.binary(max_size=7))
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode], ids=["standard", "urlsafe"])
def test_a_key_inside_base64_of_a_longer_text_is_blanked_at_any_offset(
    encode: Callable[[bytes], bytes], key: str, prefix: bytes, suffix: bytes
) -> None:
    raw = key.encode()
    quoted = encode(prefix + raw + suffix).decode()
    shown = Secrets(key).blank(f"request (base64): {quoted}")
    piece = base64_piece(raw, len(prefix) % 3, encode)
    assert piece not in shown and "***" in shown, (key, quoted, shown)


@settings(max_examples=30, deadline=None)
@given(key=keys)
def test_base64_wrapped_in_lines_is_blanked(key: str) -> None:
    encoded = base64.b64encode(b"api-key: " + key.encode()).decode()
    quoted = "\n".join(encoded[i : i + 12] for i in range(0, len(encoded), 12))
    shown = Secrets(key).blank(quoted)
    assert base64_piece(key.encode(), len(b"api-key: ") % 3, base64.b64encode) not in shown.replace("\n", "")


@settings(max_examples=30, deadline=None)
@given(key=keys)
def test_reason_of_a_body_quoting_the_key_in_an_unknown_field_with_go_escapes(key: str) -> None:
    body = f'{{"reason": {go_json("bad key " + key)}, "code": 16}}'.encode()
    shown = reason_of(body, Secrets(key))
    assert shown == '{"reason": "bad key ***", "code": 16}', (key, shown)


def test_text_without_the_key_is_left_alone() -> None:
    secrets = Secrets("sk-A&b/c+d=e<f>-7f3a9c1e5b")
    text = "a &amp; b %2f c \\u0026 d YWJjZGVm\n e + f = g"
    assert secrets.blank(text) == text
