"""URI scheme → backend class, loaded lazily by dotted path so nothing imports until asked for.

``register_backend`` lets a third party add a database; ``backends()`` is a read-only view.
"""

from __future__ import annotations

from importlib import import_module
from types import MappingProxyType
from typing import Any

from ..errors import ConfigError, MissingExtra

__all__ = ["backend_class", "backends", "register_backend"]

# scheme (the part before "+") → (module:Class, what to install if its import fails)
_REGISTRY: dict[str, tuple[str, str]] = {
    "pinecone": (
        "vectordb.connector.backends.pinecone:PineconeBackend",
        "pip install 'vectordb-connector[grpc]'",
    ),
    "milvus": (
        "vectordb.connector.backends.milvus:MilvusBackend",
        "pip install 'vectordb-connector[milvus]'",
    ),
    "postgresql": (
        "vectordb.connector.backends.pgvector:PgvectorBackend",
        "pip install 'vectordb-connector[pgvector]'",
    ),
    "postgres": (
        "vectordb.connector.backends.pgvector:PgvectorBackend",
        "pip install 'vectordb-connector[pgvector]'",
    ),
    "chroma": ("vectordb.connector.backends.chroma:ChromaBackend", "pip install vectordb-connector"),
}


def register_backend(scheme: str, dotted: str, install_hint: str = "") -> None:
    """Add (or replace) the backend for URIs ``scheme://…`` and ``scheme+transport://…``."""
    _REGISTRY[scheme.lower()] = (dotted, install_hint)


def backends() -> MappingProxyType[str, tuple[str, str]]:
    return MappingProxyType(_REGISTRY)


def backend_class(database: str) -> Any:
    """The backend class for a URI's database part; a ``ConfigError`` lists the known schemes."""
    try:
        dotted, hint = _REGISTRY[database]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ConfigError(f"option uri: unknown database scheme {database!r}; known: {known}") from None
    module_name, _, class_name = dotted.partition(":")
    try:
        module = import_module(module_name)
    except ImportError as exc:
        raise MissingExtra(
            f"the {database} backend needs a package that is missing ({exc.name}): {hint}"
        ) from None
    return getattr(module, class_name)
