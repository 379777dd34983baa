"""The optional native speedups: ``vectordb-connector-speedups``, built from ``connector/native`` (Rust).

Each of its functions does, with Python's lock released, what a Python path of the connector does
holding it, and gives the same result: the decoder of base64 embeddings replies (``embedding.wire``)
and the writer of float32 rows as JSON arrays (``jsonvec``). The package is optional (where there is
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
