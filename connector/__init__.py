"""vectordb.connector: the batched, concurrent upsert client every executor process runs.

    from vectordb.connector import connect
    with connect("pinecone+grpc://my-index-abc.svc.pinecone.io", api_key=...) as client:
        report = client.upsert(table)

    vectors = embed(texts, url="https://api.openai.com", model="text-embedding-3-small",
                    api_key_env="OPENAI_API_KEY")  # numpy (n, d) float32, any OpenAI-compatible server

Everything here loads lazily (PEP 562), so ``import vectordb.connector`` stays in the
low milliseconds and pulls in neither grpcio, pyarrow, numpy, pyspark nor apache_beam; so does
``__version__`` (the installed distribution's, read from its metadata when first asked for).
"""

from __future__ import annotations

from importlib import import_module

# `typing` costs more to import than this whole package: every Spark and Beam worker pays for this
# import, so it is named here only for the type checker (which reads TYPE_CHECKING as True).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .client import Client, connect
    from .dead_letters import rows_from_letters
    from .embedding import embed
    from .errors import (
        AuthError,
        ConfigError,
        ConnectError,
        ConnectorError,
        ConnectTimeout,
        DeadlineExceeded,
        DimensionMismatch,
        EmbeddingFailed,
        MalformedReply,
        MissingExtra,
        NotFound,
        Rejected,
        ServerError,
        ServerTimedOut,
        StoppedAnswering,
        SystemicRejection,
        Throttled,
        TransportError,
        Unavailable,
        WriteFailed,
    )
    from .options import BackendOptions, parse_options
    from .records import SparseVector, VectorRecord
    from .report import BatchFailure, WriteReport

    __version__: str

__all__ = [
    "AuthError",
    "BackendOptions",
    "BatchFailure",
    "Client",
    "ConfigError",
    "ConnectError",
    "ConnectTimeout",
    "ConnectorError",
    "DeadlineExceeded",
    "DimensionMismatch",
    "EmbeddingFailed",
    "MalformedReply",
    "MissingExtra",
    "NotFound",
    "Rejected",
    "ServerError",
    "ServerTimedOut",
    "SparseVector",
    "StoppedAnswering",
    "SystemicRejection",
    "Throttled",
    "TransportError",
    "Unavailable",
    "VectorRecord",
    "WriteFailed",
    "WriteReport",
    "connect",
    "embed",
    "parse_options",
    "rows_from_letters",
]

_WHERE = {
    "Client": "client",
    "connect": "client",
    "rows_from_letters": "dead_letters",
    "embed": "embedding",
    "BackendOptions": "options",
    "parse_options": "options",
    "SparseVector": "records",
    "VectorRecord": "records",
    "BatchFailure": "report",
    "WriteReport": "report",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # importlib.metadata costs more than the whole package: only when asked
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("vectordb-connector")
        except PackageNotFoundError:  # the source tree on sys.path, never installed
            found = "0+unknown"
        globals()[name] = found
        return found
    if name in __all__:
        value = getattr(import_module(f".{_WHERE.get(name, 'errors')}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
