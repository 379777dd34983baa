"""URI scheme → backend class, loaded lazily by dotted path so nothing imports until asked for.

``register_backend`` lets a third party add a database; ``backends()`` is a read-only view.
``canonical_uri`` is the one rule for what a ``uri`` with no scheme means: a file path names the
embedded default (the scheme registered with ``takes_paths``, ``PATH_SCHEME``); anything else
without a scheme is refused, so a typo such as ``my-index.svc.pinecone.io`` never quietly becomes
a local database. ``database_table`` renders the per-database facts (request sizes, own options)
from the backends themselves, for the README: ``python -m vectordb.connector.backends.registry``.
"""

from __future__ import annotations

import os
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, MissingExtra
from ..options import did_you_mean, without_password

if TYPE_CHECKING:
    from .base import Backend

__all__ = ["PATH_SCHEME", "backend_class", "backends", "canonical_uri", "register_backend"]

PATH_SCHEME = "milvus+lite"  # what a file path given as ``uri`` names: the embedded default
_path_scheme = PATH_SCHEME  # moved by register_backend(..., takes_paths=...)

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
    "qdrant": (
        "vectordb.connector.backends.qdrant:QdrantBackend",
        "pip install 'vectordb-connector[grpc]'",
    ),
    "weaviate": (
        "vectordb.connector.backends.weaviate:WeaviateBackend",
        "pip install 'vectordb-connector[grpc]'",
    ),
}
# the third-party packages (top-level import names) a built-in backend's install hint brings: the core
# dependencies and its extra's. Only a failed import of one of these is a MissingExtra; any other (the
# connector's own module broken or half installed) is raised as it is, since pip advice cannot fix it.
_CORE = frozenset({"msgspec", "numpy", "pyarrow", "orjson", "httpx"})
_GRPC = _CORE | {"hpack"}
_THIRD_PARTY: dict[str, frozenset[str]] = {
    "pinecone": _GRPC,
    "qdrant": _GRPC,
    "weaviate": _GRPC,
    "milvus": _GRPC | {"grpc", "milvus_lite", "pymilvus"},
    "postgresql": _CORE | {"psycopg", "psycopg_binary", "psycopg_c"},
    "postgres": _CORE | {"psycopg", "psycopg_binary", "psycopg_c"},
    "chroma": _CORE,
}
_OWN = frozenset({"vectordb", "pyspark_vectordb"})  # never a missing extra


def canonical_uri(uri: str) -> str:
    """``uri`` as backends read it: a path (``./vectors.db``, ``~/x.db``, ``/abs/x.db``, or
    ``milvus+lite://./x.db``) becomes ``milvus+lite:///ABSOLUTE/PATH``; any other URI is returned as it is.

    Resolve it where the job starts (the driver, the pipeline's constructor): executors may run in
    another working directory.
    """
    prefix = f"{_path_scheme}://"
    if uri.startswith(prefix):
        raw = uri[len(prefix) :]
    elif "://" in uri or not _looks_like_path(uri):
        return uri
    else:
        raw = uri
    path, sep, query = raw.partition("?")
    if not path:
        raise ConfigError(f"option uri: {without_password(uri)!r} names no path; e.g. {prefix}./vectors.db")
    return f"{prefix}{os.path.abspath(os.path.expanduser(path))}{sep}{query}"


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "~")) or text.endswith(".db")


def register_backend(
    scheme: str, dotted: str, install_hint: str = "", *, takes_paths: str | None = None
) -> None:
    """Add (or replace) the backend for URIs ``scheme://…`` and ``scheme+transport://…``.

    ``takes_paths="scheme+transport"`` makes a file path given as ``uri`` name that backend instead.
    """
    global _path_scheme
    _REGISTRY[scheme.lower()] = (dotted, install_hint)
    _THIRD_PARTY.pop(scheme.lower(), None)  # its own packages are unknown: any but the connector's
    if takes_paths is not None:
        _path_scheme = takes_paths


def backends() -> MappingProxyType[str, tuple[str, str]]:
    return MappingProxyType(_REGISTRY)


def backend_class(database: str) -> type[Backend[Any]]:
    """The backend class for a URI's database part; a ``ConfigError`` lists the known schemes."""
    try:
        dotted, hint = _REGISTRY[database]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        near = did_you_mean(database, _REGISTRY)
        raise ConfigError(f"option uri: unknown database scheme {database!r}{near}; known: {known}") from None
    module_name, _, class_name = dotted.partition(":")
    try:
        module = import_module(module_name)
    except ImportError as exc:
        if not _is_missing_extra(database, exc.name):
            raise  # a module of the connector itself failed: its trace says why, pip advice would not
        raise MissingExtra(
            f"the {database} backend needs a package that is missing ({exc.name}): {hint}"
        ) from None
    found: type[Backend[Any]] = getattr(module, class_name)
    return found


def _is_missing_extra(database: str, module: str | None) -> bool:
    """Whether a failed import of ``module`` means the backend's install hint is what is missing: one of
    its third-party packages (for a backend registered by a third party: any package but the connector's)."""
    top = (module or "").partition(".")[0]
    if not top or top in _OWN:
        return False
    known = _THIRD_PARTY.get(database)
    return known is None or top in known


def database_table() -> str:
    """A Markdown table of each installed backend's request sizes and own options (and the shared
    options whose default it changes), read from the backend classes themselves."""
    from ..options import BackendOptions

    shared = BackendOptions._defaults()
    lines = [
        "| database (scheme) | rows per request: default / most | bytes per request: default / most "
        "| its own options and defaults |",
        "|---|---|---|---|",
    ]
    by_class: dict[str, list[str]] = {}
    for scheme, (dotted, _) in _REGISTRY.items():
        by_class.setdefault(dotted, []).append(scheme)
    for schemes in sorted(by_class.values()):
        try:
            cls = backend_class(schemes[0])
        except MissingExtra:
            continue
        limits, defaults = cls.limits, cls.options_type._defaults()
        own = [
            f"`{name}` ({_shown(value)})"
            for name, value in defaults.items()
            if name not in shared or shared[name] != value
        ]
        names = ", ".join(f"`{s}`" for s in sorted(schemes, key=lambda s: s != cls.name))
        lines.append(
            f"| {cls.name} ({names}) | {limits.default_rows} / {limits.max_rows} "
            f"| {_size(limits.default_bytes)} / {_size(limits.max_bytes)} | {', '.join(own) or '—'} |"
        )
    return "\n".join(lines)


def _shown(value: Any) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("MB", 1_000_000), ("KiB", 1024)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


if __name__ == "__main__":
    print(database_table())
