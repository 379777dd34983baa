"""Options ``tenant`` and ``database`` against Chroma's name rules (chroma 1.5's server: a tenant name has at
least 3 characters; a database name is a collection name): a name the server refuses was a ``Rejected``
quoting the server, naming neither option. Now a ``ConfigError`` names the option, before any request."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer

ROWS = [{"id": "a", "values": [1.0, 0.5, 0.25, 0.125]}]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"database": "ab"}, "option database: 'ab' is not a chroma database name: 3–512 characters"),
        ({"database": "a..b"}, "option database: 'a..b' is not a chroma database name"),
        ({"database": "my db"}, "option database: 'my db' is not a chroma database name"),
        (
            {"tenant": "", "database": ""},
            "option tenant: '' is not a chroma tenant name: at least 3 characters",
        ),
        ({"tenant": "ab"}, "option tenant: 'ab' is not a chroma tenant name"),
    ],
)
def test_a_name_the_server_refuses_is_a_config_error_naming_the_option(
    chroma_server: ChromaServer, chroma_collection: str, options: dict[str, str], says: str
) -> None:
    with (
        pytest.raises(ConfigError, match=says),
        connect(chroma_server.uri(chroma_collection), **options) as client,
    ):
        client.write(ROWS)
