"""A UUID id in any spelling is one Weaviate object with the same properties (real ``weaviate-server``).

The README: "a UUID is used as it is, any other id ... becomes the same UUIDv5, with the original kept
in the property original_id". An upper-case or 32-hex UUID was used as the object's UUID but also kept
as ``original_id``, so what was stored depended on how the id was spelt, and a metadata key
``original_id`` on such a row was refused as if the id had been converted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from vectordb.connector import connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits

UUID = "6f1c2f0e-9a3b-4c7d-8e2f-1a2b3c4d5e6f"
SPELLINGS = {
    "lower": UUID,
    "upper": UUID.upper(),
    "hex32": UUID.replace("-", ""),
    "hex32-upper": UUID.replace("-", "").upper(),
    "mixed": UUID[:18] + UUID[18:].upper(),
}


def objects(server: WeaviateServer, name: str) -> dict[str, dict[str, Any]]:
    """Every object's UUID and its properties (nulls left out), through Weaviate's REST API."""
    reply = server.rest("GET", f"/v1/objects?class={name}&limit=100")
    reply.raise_for_status()
    return {
        o["id"]: {k: v for k, v in (o.get("properties") or {}).items() if v is not None}
        for o in reply.json().get("objects") or []
    }


def properties(server: WeaviateServer, name: str) -> set[str]:
    """The collection's declared property names."""
    reply = server.rest("GET", f"/v1/schema/{name}")
    reply.raise_for_status()
    return {p["name"] for p in reply.json().get("properties") or []}


def write(server: WeaviateServer, name: str, rows: list[dict[str, Any]]) -> Any:
    with connect(server.uri(name), **server.options(), create=True, on_error="report") as client:
        return client.write(rows)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_uuid_id_keeps_no_original_whatever_its_spelling(
    weaviate_server: WeaviateServer, weaviate_collection: str, spelling: str
) -> None:
    """The same object and properties as the canonical spelling: no ``original_id`` property is stored,
    or declared by create=true."""
    report = write(
        weaviate_server, weaviate_collection, [{"id": SPELLINGS[spelling], "values": [0.1, 0.2, 0.3], "n": 1}]
    )
    assert report.ok and report.written == 1, report
    assert objects(weaviate_server, weaviate_collection) == {UUID: {"n": 1}}
    assert properties(weaviate_server, weaviate_collection) == {"n"}


def test_every_spelling_rewrites_one_object_alike(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """A rerun with another spelling of the id replaces the object with the same properties; a non-UUID
    id still becomes its UUIDv5 with the original kept."""
    for i, spelt in enumerate(SPELLINGS.values()):
        assert write(
            weaviate_server, weaviate_collection, [{"id": spelt, "values": [0.1, 0.2, 0.3], "n": i}]
        ).ok
        assert objects(weaviate_server, weaviate_collection) == {UUID: {"n": i}}, spelt
    assert write(
        weaviate_server, weaviate_collection, [{"id": "doc-1", "values": [0.1, 0.2, 0.3], "n": 9}]
    ).ok
    stored = objects(weaviate_server, weaviate_collection)
    assert stored.pop(UUID) == {"n": len(SPELLINGS) - 1}
    assert list(stored.values()) == [{"n": 9, "original_id": "doc-1"}]


@pytest.mark.parametrize("spelling", ["upper", "hex32"])
def test_a_uuid_id_leaves_the_original_id_key_to_the_metadata(
    weaviate_server: WeaviateServer, weaviate_collection: str, spelling: str
) -> None:
    """Nothing of a UUID id is kept in ``original_id``, so a row's own ``original_id`` metadata is stored;
    it was refused as where the row's id is kept."""
    row = {"id": SPELLINGS[spelling], "values": [0.1, 0.2, 0.3], "original_id": "mine"}
    report = write(weaviate_server, weaviate_collection, [row])
    assert report.ok and report.written == 1, report
    assert objects(weaviate_server, weaviate_collection) == {UUID: {"original_id": "mine"}}
