"""``without_password`` blanks a password holding a space or a tab whole (PostgreSQL takes one, in the user-info
and in ``?password=``), and a user alone (``qdrant://KEY@host``: a key pasted as the user), in a URI and in
the config errors that quote one; an ABFS/WASB container, a path's ``@`` and an address are left alone."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from vectordb.connector import ConfigError, connect
from vectordb.connector.keys import without_password

pieces = st.text(alphabet="abcdefXYZ0123456789-_.!$*", min_size=3, max_size=12)


@settings(max_examples=60, deadline=None)
@given(first=pieces, second=pieces, gap=st.sampled_from([" ", "\t", "  ", " \t"]))
@pytest.mark.parametrize("where", ["user-info", "query"])
def test_a_password_holding_spaces_or_tabs_is_blanked_whole(
    where: str, first: str, second: str, gap: str
) -> None:
    password = f"{first}{gap}{second}"
    if where == "user-info":
        uri, shown = (
            f"postgresql://loader:{password}@db:5432/app?table=t",
            "postgresql://loader:***@db:5432/app?table=t",
        )
    else:
        uri, shown = (
            f"postgresql://db/app?table=t&password={password}",
            "postgresql://db/app?table=t&password=***",
        )
    assert without_password(uri) == shown
    assert without_password(f"{uri}\n{uri}") == f"{shown}\n{shown}"  # a line break ends it


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("qdrant://PwSECRET9x7q@127.0.0.1:1/docs", "qdrant://***@127.0.0.1:1/docs"),
        ("pinecone://pc-URIKEY-5b7d9e1f3a@idx.svc.pinecone.io", "pinecone://***@idx.svc.pinecone.io"),
        ("s3://AKIAIOSFODNN7EXAMPLE@bucket/dead", "s3://***@bucket/dead"),
        ("'qdrant:/KEY0042@h/docs' is not", "'qdrant:/***@h/docs' is not"),
        # left alone: a container at an account, an @ in a path, an address
        (
            "abfss://container@account.dfs.core.windows.net/x",
            "abfss://container@account.dfs.core.windows.net/x",
        ),
        ("s3://bucket/a@b/dead", "s3://bucket/a@b/dead"),
        ("milvus+lite:///data/v@1.db", "milvus+lite:///data/v@1.db"),
        ("write to admin@example.com", "write to admin@example.com"),
        # a PostgreSQL role alone is a name (its URIs alone carry credentials, as user:password@)
        ("postgresql://loader@db:5432/app?table=t", "postgresql://loader@db:5432/app?table=t"),
        ("postgres://loader@db/app", "postgres://loader@db/app"),
        (
            "log: api_key=abc more words",
            "log: api_key=*** more words",
        ),  # outside a URI, a value ends at a space
    ],
)
def test_a_user_alone_is_blanked(uri: str, shown: str) -> None:
    assert without_password(uri) == shown


@pytest.mark.parametrize(
    "uri",
    [
        "postgresql:/loader:Hunter 2xyz@127.0.0.1:5432/db?table=t",  # mistyped: quoted in the error
        "qdrant://user:Hunter 2xyz@127.0.0.1:63x3/docs",  # a bad port: quoted in the error
        "qdrant://user:Hunter\t2xyz@127.0.0.1:63x3/docs",
    ],
)
def test_a_config_error_quoting_the_uri_shows_no_piece_of_a_spaced_password(uri: str) -> None:
    with pytest.raises(ConfigError, match="option uri") as refused:
        connect(uri, max_retries=0, timeout_s=2)
    assert "Hunter" not in str(refused.value) and "2xyz" not in str(refused.value), str(refused.value)
