"""A ``.`` in a credential is that character in the pattern (``Secrets.blank``): it went in unescaped, as any
character, so text differing from a key with a dot in that one place was blanked, and a key starting with a
dot made every branch's first character a wildcard (the engine then tried every offset)."""

from __future__ import annotations

from vectordb.connector.redaction import Secrets


def test_a_dot_in_a_credential_matches_only_a_dot() -> None:
    assert Secrets("abc.defgh").blank("abcXdefgh, abc.defgh") == "abcXdefgh, ***"
    assert Secrets(".abcdefgh").blank("xabcdefgh, .abcdefgh") == "xabcdefgh, ***"
    assert (
        Secrets("key.with.dots-0123").blank("key-with-dots-0123 key.with.dots-0123")
        == "key-with-dots-0123 ***"
    )
