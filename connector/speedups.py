"""The optional native speedups: ``vectordb-connector-speedups``, built from ``connector/native`` (Rust).

Each of its functions does what a Python path of the connector does, faster, and gives the same
result: the decoder of base64 embeddings replies (``embedding.wire``), the writer of float32 rows as JSON
arrays (``jsonvec``) and the framing of gRPC rows (``protowire.frame_rows``), these three with Python's
lock released; the reader of lists of Python numbers into float32 (``rows.floats``), the writer of
metadata as a ``google.protobuf.Struct`` (``protowire.encode_struct``), the mapping of Qdrant point ids
(``ids.point_id``, UUIDv5 included), the writer of each Qdrant point's id and payload
(``backends.qdrant``) and that of each Pinecone vector's id and metadata (``backends.pinecone``), which
read Python objects and so hold it. The package is optional (where there is
no Rust to build it, the Python paths run); the module that uses a function looks it up here once, at
import, and keeps ``None`` where it is missing.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["MODULE", "installed", "native"]

MODULE = "vectordb_connector_speedups"


def native(name: str) -> Any:
    """The native function ``name``, or ``None`` where the package (or that function) is not installed."""
    try:
        module = importlib.import_module(MODULE)
    except ImportError:
        return None
    return getattr(module, name, None)


def installed() -> bool:
    """True when the native package is importable."""
    try:
        importlib.import_module(MODULE)
    except ImportError:
        return False
    return True
