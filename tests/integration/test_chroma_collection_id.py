"""Option ``collection_id`` on a real Chroma server: an id given by the user is checked against the URI's
collection (found by name: the server has no lookup by id), so rows never land in another collection and
the collection's dimension is checked; a driver's hand-off (``resolved_options``, ``verify=false``) is trusted
and its tasks ask nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer


def rows(n: int, dim: int = 4) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "values": [float(i) + 0.5] + [0.25] * (dim - 1)} for i in range(n)]


@pytest.mark.parametrize("encoding", ["auto", "base64", "json"])
def test_an_id_of_another_collection_is_a_config_error_naming_collection_id(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str, encoding: str
) -> None:
    named = chroma_client.create_collection(chroma_collection)
    other = chroma_client.create_collection(f"{chroma_collection}-other")
    try:
        with (
            pytest.raises(
                ConfigError,
                match=rf"option collection_id: '{other.id}' is not the id of chroma "
                rf"collection '{chroma_collection}'.*which is '{named.id}'",
            ),
            connect(
                chroma_server.uri(chroma_collection), collection_id=str(other.id), vector_encoding=encoding
            ) as client,
        ):
            client.write(rows(2))
        assert (named.count(), other.count()) == (0, 0)
    finally:
        chroma_client.delete_collection(other.name)


def test_the_uris_own_id_writes_and_its_dimension_is_checked(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    collection.upsert(ids=["four"], embeddings=[[0.25] * 4])
    uri = chroma_server.uri(chroma_collection)
    with (
        pytest.raises(ConfigError, match="holds 4-dimensional vectors; this write has 8"),
        connect(uri, collection_id=str(collection.id).upper(), vector_encoding="base64", dimension=8) as c,
    ):
        c.write(rows(2, dim=8))
    with connect(uri, collection_id=str(collection.id), vector_encoding="base64") as client:
        assert client.write(rows(3)).ok
    assert collection.count() == 4


def test_an_id_for_a_missing_collection_creates_nothing(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    with (
        pytest.raises(ConfigError, match=f"option collection_id: chroma collection '{chroma_collection}'"),
        connect(
            chroma_server.uri(chroma_collection),
            collection_id="4c1b7f0e-0000-4000-8000-000000000001",
            create=True,
            dimension=4,
        ) as client,
    ):
        client.write(rows(1))
    assert chroma_collection not in [c.name for c in chroma_client.list_collections()]


def test_a_drivers_hand_off_is_trusted(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    uri = chroma_server.uri(chroma_collection)
    with connect(uri) as driver:
        resolved = driver.prepare_target().resolved
    assert resolved == {"collection_id": str(collection.id), "vector_encoding": "base64", "verify": False}
    with connect(uri, **resolved) as task:
        assert task.write(rows(2)).ok
    assert collection.count() == 2
