"""A chroma URI holds host, port and collection: query parameters (``?tenant=acme&database=prod``, a natural
guess) and ``user:password@`` were dropped without a word, the rows going to the default tenant and database
and the credentials never sent. Now each is a ``ConfigError`` pointing to options tenant, database and
api_key, which never quotes the password. On a real Chroma server: nothing is written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer

PASSWORD = "S3cretPw"


@pytest.mark.parametrize(
    ("suffix", "says"),
    [
        (
            "?tenant=acme&database=prod",
            r"query parameters \(given: database, tenant\); use options tenant and database",
        ),
        ("?nonsense=1", r"query parameters \(given: nonsense\)"),
    ],
)
def test_query_parameters_in_the_uri_are_a_config_error(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str, suffix: str, says: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    with (
        pytest.raises(ConfigError, match=f"option uri: chroma takes no {says}"),
        connect(chroma_server.uri(chroma_collection) + suffix) as client,
    ):
        client.write([{"id": "row", "values": [1.0, 0.5, 0.25, 0.125]}])
    assert collection.count() == 0


def test_user_and_password_in_the_uri_are_a_config_error_without_the_password(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    uri = f"chroma://admin:{PASSWORD}@{chroma_server.host}:{chroma_server.port}/{chroma_collection}"
    says = r"option uri: chroma takes no user:password@ in the URI; give the token in option api_key"
    with pytest.raises(ConfigError, match=says) as caught, connect(uri) as client:
        client.write([{"id": "row", "values": [1.0, 0.5, 0.25, 0.125]}])
    assert PASSWORD not in str(caught.value)
    assert collection.count() == 0
