"""A credential written into the URI of a database that reads none from it (``pinecone://user:KEY@host``,
``pinecone://KEY@host``, ``?api_key=KEY``, ``milvus://root:Milvus@host``, ``qdrant://KEY@host``) was dropped
without a word: every request then went without a key and was refused naming no option, and a key pasted
as the user showed in the options' repr. Now it is a ``ConfigError`` naming option uri and pointing to
api_key, before any request, which never quotes the credential. PostgreSQL, whose URI carries its
credentials, is left alone."""

from __future__ import annotations

import socket
import traceback

import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.client import resolve_options
from vectordb.connector.options import parse_uri

SECRET = "PwSECRET9x7q"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    "uri",
    [
        "pinecone://user:{s}@127.0.0.1:{port}",
        "pinecone://{s}@127.0.0.1:{port}",
        "pinecone://127.0.0.1:{port}?api_key={s}",
        "pinecone+grpc://127.0.0.1:{port}?api_key={s}",
        "milvus://root:{s}@127.0.0.1:{port}/docs",
        "milvus://127.0.0.1:{port}/docs?token=root:{s}",
        "qdrant://{s}@127.0.0.1:{port}/docs",
        "qdrant://127.0.0.1:{port}/docs?api_key={s}",
        "qdrant+grpc://u:{s}@127.0.0.1:{port}/docs",
        "weaviate://u:{s}@127.0.0.1:{port}/Docs",
        "chroma://u:{s}@127.0.0.1:{port}/docs",
    ],
)
def test_a_credential_in_the_uri_is_refused_naming_the_option_without_quoting_it(uri: str) -> None:
    uri = uri.format(s=SECRET, port=_closed_port())
    with pytest.raises(ConfigError, match=r"option uri: .* option api_key") as refused:  # not a ConnectError
        connect(uri, max_retries=0, timeout_s=2)
    shown = "".join(traceback.format_exception(refused.value)) + repr(refused.value)
    assert SECRET not in shown, shown
    assert SECRET not in repr(resolve_options({"uri": uri}))  # the key pasted as a user too


def test_a_uri_without_credentials_and_a_postgresql_one_are_read() -> None:
    assert parse_uri("qdrant://db.example:6333/docs?x=1").query == {"x": "1"}
    assert parse_uri("postgresql://loader:pw@db.example/app?password=pw2&table=t").host == "db.example"
