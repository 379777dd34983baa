"""Options ``tenant`` and ``database`` on a real Chroma server: a missing tenant with ``create=true`` was blamed
on the database (the server's words: "Database [default_database] does not exist"), and without it a missing
tenant or database was "collection does not exist; set create=true", which would not help. Now the tenant or
database that does not exist is named, with its option."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer

ROWS = [{"id": "a", "values": [1.0, 0.5, 0.25, 0.125]}]


@pytest.mark.parametrize("create", [True, False])
def test_a_missing_tenant_is_named_not_blamed_on_the_database(
    chroma_server: ChromaServer, chroma_collection: str, create: bool
) -> None:
    with (
        pytest.raises(ConfigError, match="option tenant: chroma tenant 'no-such-tenant' does not exist"),
        connect(chroma_server.uri(chroma_collection), tenant="no-such-tenant", create=create) as client,
    ):
        client.write(ROWS)


@pytest.mark.parametrize("create", [True, False])
def test_a_missing_database_is_named(
    chroma_server: ChromaServer, chroma_collection: str, create: bool
) -> None:
    says = "option database: chroma database 'no-such-db' does not exist in tenant 'default_tenant'"
    with (
        pytest.raises(ConfigError, match=says),
        connect(chroma_server.uri(chroma_collection), database="no-such-db", create=create) as client,
    ):
        client.write(ROWS)


def test_an_existing_tenant_and_database_take_the_rows(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    import chromadb
    from chromadb.config import Settings

    admin = chromadb.AdminClient(
        Settings(
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            chroma_server_host=chroma_server.host,
            chroma_server_http_port=chroma_server.port,
            anonymized_telemetry=False,
        )
    )
    admin.create_tenant("acme")
    admin.create_database("prod", tenant="acme")
    with connect(chroma_server.uri(chroma_collection), tenant="acme", database="prod", create=True) as client:
        assert client.write(ROWS).ok
    acme = chromadb.HttpClient(
        host=chroma_server.host,
        port=chroma_server.port,
        tenant="acme",
        database="prod",
        settings=Settings(anonymized_telemetry=False),
    )
    assert acme.get_collection(chroma_collection).get()["ids"] == ["a"]
