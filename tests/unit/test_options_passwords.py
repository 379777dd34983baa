"""A URI's password never shows where the URI is quoted, however the URI was mistyped: the URI an
error quotes is the malformed one, so ``without_password`` cannot rely on it parsing."""

from __future__ import annotations

import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.options import without_password

PASSWORD = "UriPass-123"


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("qdrant://admin:pw@db:6333/docs", "qdrant://admin:***@db:6333/docs"),
        ("qdrant:/admin:pw@db:6333/docs", "qdrant:/admin:***@db:6333/docs"),
        ("qdrant//admin:pw@db:6333/docs", "qdrant//admin:***@db:6333/docs"),
        ("postgresql:/admin:pw@db/x", "postgresql:/admin:***@db/x"),
        ("qdrant:admin:pw@db/x", "qdrant:***@db/x"),  # no separator: which is the user is unknowable
        ("admin:pw@db/x", "admin:***@db/x"),
        ("qdrant://u:p@ss@db:6333/docs", "qdrant://u:***@db:6333/docs"),  # an unescaped @ in it
        ("u:p@s@s@db", "u:***@db"),
        ("postgresql://db/x?password=pw&table=t", "postgresql://db/x?password=***&table=t"),
        ("qdrant://user@db:6333/docs", "qdrant://***@db:6333/docs"),  # a user alone: a key pasted as one
        # an @ in a path after a port reads as the host's: a password may hold an unencoded "/", so a
        # piece of a path is blanked rather than a piece of a password shown
        ("qdrant://db:6333/docs@2", "qdrant://db:***@2"),
        ("milvus+lite:///data/v@1.db", "milvus+lite:///data/v@1.db"),
        ("pinecone+grpc://idx.svc.pinecone.io", "pinecone+grpc://idx.svc.pinecone.io"),
    ],
)
def test_without_password_blanks_userinfo_whatever_the_separator(uri: str, shown: str) -> None:
    assert without_password(uri) == shown


@pytest.mark.parametrize(
    "uri",
    [
        f"qdrant:/admin:{PASSWORD}@db.example.com:6333/docs",
        f"postgresql:/admin:{PASSWORD}@db.example.com/x",
        f"qdrant//admin:{PASSWORD}@db.example.com:6333/docs",
        f"qdrant://admin:Pw@{PASSWORD}@db.example.com:bad/docs",  # an unescaped @, and a bad port
    ],
)
def test_a_mistyped_uri_is_quoted_without_its_password(uri: str) -> None:
    with pytest.raises(ConfigError, match="option uri") as refused:
        connect(uri)
    text = str(refused.value)
    assert PASSWORD not in text and "admin:***@" in text, text


def test_a_key_in_a_urls_query_is_a_credential_too() -> None:
    """An endpoint that takes its key in the query (``?key=``, ``?api-key=``): the URL is shown without it,
    and a server quoting it back has it blanked."""
    from vectordb.connector.embedding import parse_embed_options
    from vectordb.connector.redaction import Secrets

    url = "https://embed.example.com/v1?api-key=QueryKey-0042&deployment=small"
    shown = without_password(url)
    assert "QueryKey-0042" not in shown and "deployment=small" in shown
    options = parse_embed_options({"url": url, "model": "m"})
    assert "QueryKey-0042" not in repr(options)
    echoed = "HTTP 401: key QueryKey-0042 is not valid for deployment small"
    assert Secrets.of(options).blank(echoed) == "HTTP 401: key *** is not valid for deployment small"
    assert (
        Secrets.of(parse_embed_options({"url": "https://h/v1?token=short", "model": "m"})).blank(
            "a short value is no key: short"
        )
        == "a short value is no key: short"
    )  # under 8 characters: ordinary words stay
