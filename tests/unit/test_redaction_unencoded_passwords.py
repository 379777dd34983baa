"""A URI password holding a character it should have had percent-encoded (``#``, ``/``, ``?``, ``@``,
``:``, ``%``; generated passwords often do) is shown nowhere: ``without_password`` blanks it in every URI
a message quotes, and ``uri_passwords`` finds it whole, so a server or driver quoting it has it blanked.

urlsplit reads such a password as the end of the host (``u:Xq7/pw@h`` has no password for it), so both
take the user-info up to the last ``@``."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vectordb.connector import ConfigError, ConnectorError, connect
from vectordb.connector.keys import without_password
from vectordb.connector.redaction import Secrets, uri_passwords

SPECIAL = "#/?@:%"
# any character a password may hold but whitespace (a URI ends there) and lone surrogates
CHARACTER = st.characters(exclude_categories=("Cs",)).filter(lambda c: not c.isspace())
PASSWORDS = st.tuples(st.text(CHARACTER, max_size=8), st.text(st.sampled_from(SPECIAL), min_size=1, max_size=3),
                      st.text(CHARACTER, max_size=8)).map("".join)  # fmt: skip
USERS = st.text(st.sampled_from(string.ascii_lowercase + string.digits + "._-"), min_size=1, max_size=8)
SCHEMES = st.sampled_from(["postgresql", "qdrant", "qdrant+grpc", "chroma", "pinecone", "https"])
HOSTS = st.sampled_from(["127.0.0.1:9", "db.example.com", "db:5432", "[::1]:6334"])


@settings(max_examples=150, deadline=None)
@given(scheme=SCHEMES, user=USERS, password=PASSWORDS, host=HOSTS)
@example(scheme="postgresql", user="loader", password="Xq7/LmN2pass", host="127.0.0.1:9")
@example(scheme="qdrant", user="user", password="Xq7#LmN2pass", host="127.0.0.1:9")
@example(scheme="qdrant", user="user", password="Xq7?LmN2pass", host="127.0.0.1:9")
@example(scheme="qdrant", user="u", password="p@ss/w:rd#%41?ü€😀", host="db:5432")
@example(scheme="postgresql", user="token", password=":", host="127.0.0.1:9")  # not ?table= as a token's name
@example(scheme="postgresql", user="0", password=":*", host="127.0.0.1:9")  # ":*" of the mask's own ":***"
def test_a_password_with_unencoded_characters_is_blanked_whole(
    scheme: str, user: str, password: str, host: str
) -> None:
    uri = f"{scheme}://{user}:{password}@{host}/app?table=items"
    assert without_password(uri) == f"{scheme}://{user}:***@{host}/app?table=items"
    found = uri_passwords(uri)
    assert password in found
    quoted = f"could not connect to {uri} (password {password!r}, {password})"
    shown = Secrets(*found).blank(quoted)
    # the masks as one character: a password ending in "*" would be found in a mask's "***" next to its text
    assert password not in re.sub(r"\*{3,}", "\0", shown) and "***" in shown


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("qdrant://user:Xq7#LmN2pass@127.0.0.1:9/docs", "qdrant://user:***@127.0.0.1:9/docs"),
        ("postgresql://u:Xq7/Lm?N2#p@db/app?password=pw-9&table=t", "postgresql://u:***@db/app?password=***&table=t"),
        ("qdrant:/admin:a/b@db:6333/docs", "qdrant:/admin:***@db:6333/docs"),  # a mistyped separator too
        ("uri 'qdrant://u:a#b@h/docs' and 'chroma://u:c?d@h'", "uri 'qdrant://u:***@h/docs' and 'chroma://u:***@h'"),
        # an @ in a path after a port reads as the host's: a piece of the path blanked, never of a password
        ("qdrant://db:6333/docs@2", "qdrant://db:***@2"),
        ("qdrant://user@db:6333/docs", "qdrant://***@db:6333/docs"),  # a user alone: a key pasted as one
        ("milvus+lite:///data/v@1.db", "milvus+lite:///data/v@1.db"),
    ],
)  # fmt: skip
def test_without_password_takes_the_userinfo_to_the_last_at(uri: str, shown: str) -> None:
    assert without_password(uri) == shown


def test_uri_passwords_finds_the_query_behind_a_password_holding_a_hash() -> None:
    """urlsplit reads ``#LmN2pass@…?token=…`` as a fragment: the query's key is found all the same."""
    uri = "qdrant://user:Xq7#LmN2pass@h:6333/docs?api_key=QueryKey-0042"
    assert uri_passwords(uri) == ["Xq7#LmN2pass", "QueryKey-0042"]


@pytest.mark.parametrize("password", ["Xq7#LmN2pass", "Xq7/LmN2pass", "Xq7?LmN2pass"])
@pytest.mark.parametrize("scheme", ["qdrant", "chroma", "postgresql"])
def test_a_failed_connect_quotes_no_unencoded_password(scheme: str, password: str) -> None:
    """End to end through ``connect``: a bad port, or a host no one listens on, refused with the URI quoted."""
    uri = f"{scheme}://loader:{password}@127.0.0.1:9/app?table=items&connect_timeout=1"
    with (
        pytest.raises((ConfigError, ConnectorError)) as failed,
        connect(uri, max_retries=0, timeout_s=1) as client,
    ):
        client.upsert([{"id": "a", "values": [0.1, 0.2]}])
    text = f"{failed.value!s} {failed.value!r}"
    assert "LmN2pass" not in text, text


@pytest.mark.parametrize(
    ("uri", "tail"),
    [
        ("postgresql://h:5432/app?user=u&password=a@bTAILPW&table=items", "bTAILPW"),
        ("postgresql://u:p?password=zz@host/db", "p?pass"),
        ("postgresql://u:pw@h/db?password=x#y@zTAILQ", "zTAILQ"),
    ],
)
def test_an_at_in_a_query_password_shows_no_piece_of_it(uri: str, tail: str) -> None:
    """An ``@`` may end a user-info or sit in a query password: read only as the user-info's end, the
    query password's tail after it was shown (``postgresql://h:***@bTAILPW&table=items``)."""
    assert tail not in without_password(uri)


@given(
    password=st.text(string.ascii_letters + string.digits + "@/#?:!", min_size=1, max_size=12),
    user=st.sampled_from(["", "u:x@"]),
)
def test_a_query_password_of_any_characters_is_blanked_whole(password: str, user: str) -> None:
    shown = without_password(f"postgresql://{user}h:5432/app?password={password}&table=items")
    fixed = f"postgresql://{user}h:5432/app?password=***&table=items"  # a password spelled in it shows anyway
    assert password not in shown or password in fixed


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(st.text(st.sampled_from(string.ascii_letters + string.digits + "!$*"), min_size=4, max_size=12),
                    min_size=2, max_size=3),
    after=st.sampled_from(["&table=items", "", ";x=1", " and more"]),
)  # fmt: skip
@example(pieces=["Xy7a", "SecretTail99"], after="&table=items")
def test_a_query_password_with_an_unencoded_ampersand_is_blanked_whole(pieces: list[str], after: str) -> None:
    """``?password=Xy7&SecretTail99&table=t``: PostgreSQL reads the password across the ``&`` (the piece
    after it holds no ``=``); the tail showed in the options' repr and every label (``…&password=***&SecretTail99``),
    and a server quoting the tail alone was not blanked."""
    password = "&".join(pieces)
    uri = f"postgresql://loader@/app?host=/tmp&password={password}{after}"
    # a PostgreSQL role alone is a name, shown; in a URI a password runs on across a space (PostgreSQL reads
    # "a b" as one): what follows on the line goes with it
    kept = "" if after.startswith(" ") else after
    assert without_password(uri) == f"postgresql://loader@/app?host=/tmp&password=***{kept}"
    found = uri_passwords(uri)
    assert password in found and all(piece in found for piece in pieces)
    assert not any(piece in Secrets(*found).blank(f"could not use {uri}: {pieces[-1]}") for piece in pieces)
