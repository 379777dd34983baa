"""A Weaviate collection's definition: what ``GET /v1/schema/{Class}`` says, and what ``create=true`` makes.

Weaviate writes a class name with its first letter upper-cased and a property name with its first
letter lower-cased, whatever was asked; ``class_name`` and ``property_name`` apply the same rule, so
the connector looks up what the server will look up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DISTANCE", "Collection", "class_body", "class_name", "collection_from", "property_name"]

DISTANCE = {"cosine": "cosine", "euclidean": "l2-squared", "dotproduct": "dot"}
DEFAULT_VECTOR = "default"  # the name weaviate-client v4 gives a self-provided vector


def class_name(name: str) -> str:
    return name[:1].upper() + name[1:]


def property_name(name: str) -> str:
    return name[:1].lower() + name[1:]


@dataclass(slots=True)
class Collection:
    """What a write needs to know of a collection."""

    name: str
    named_vectors: set[str]  # empty: the collection has one unnamed (legacy) vector
    multi_tenant: bool
    auto_tenants: bool  # multiTenancyConfig.autoTenantCreation: the server makes tenants on first write
    properties: dict[str, str] = field(default_factory=dict)  # name → data type ("int", "text[]", …)
    multi_vectors: set[str] = field(default_factory=set)  # named vectors whose index takes multi-vectors
    # multiTenancyConfig.autoTenantActivation: a request to an inactive (COLD) tenant activates it
    auto_activation: bool = False


def collection_from(doc: dict[str, Any]) -> Collection:
    mt = doc.get("multiTenancyConfig") or {}
    return Collection(
        name=str(doc.get("class", "")),
        named_vectors=set(doc.get("vectorConfig") or {}),
        multi_tenant=bool(mt.get("enabled")),
        auto_tenants=bool(mt.get("autoTenantCreation")),
        auto_activation=bool(mt.get("autoTenantActivation")),
        properties={
            str(p["name"]): str((p.get("dataType") or ["?"])[0]) for p in doc.get("properties") or ()
        },
        multi_vectors={
            str(name)
            for name, config in (doc.get("vectorConfig") or {}).items()
            if ((config or {}).get("vectorIndexConfig") or {}).get("multivector", {}).get("enabled")
        },
    )


def class_body(
    name: str,
    *,
    vector_name: str | None,
    metric: str,
    multi_tenant: bool,
    vectors: Mapping[str, bool] | None = None,
) -> dict[str, Any]:
    """A collection with no vectorizer (the vectors are ours), one HNSW vector index named
    ``vector_name`` (``default`` when none is given) with the metric, and, for tenants, multi-tenancy
    that creates and activates tenants on their first write. ``vectors`` (name → is a multi-vector)
    gives one HNSW index per name instead, with the metric; a multi-vector's compares by late
    interaction (``multivector`` on: MaxSim, Weaviate's only aggregation)."""
    wanted = dict(vectors) if vectors else {vector_name or DEFAULT_VECTOR: False}
    body: dict[str, Any] = {
        "class": name,
        "vectorConfig": {
            vector: {
                "vectorizer": {"none": {}},
                "vectorIndexType": "hnsw",
                "vectorIndexConfig": {
                    "distance": DISTANCE[metric],
                    **({"multivector": {"enabled": True}} if multi else {}),
                },
            }
            for vector, multi in wanted.items()
        },
        "properties": [],
    }
    if multi_tenant:
        body["multiTenancyConfig"] = {
            "enabled": True,
            "autoTenantCreation": True,
            "autoTenantActivation": True,
        }
    return body
