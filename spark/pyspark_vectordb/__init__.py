"""Makes ``format("vectordb")`` work with no set-up: Spark imports every top-level ``pyspark_*``
module once per JVM and registers its ``DefaultSource``. Kept tiny: the data source (and pyarrow,
numpy, the connector) loads only when Spark asks for ``DefaultSource``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DefaultSource"]


def __getattr__(name: str) -> Any:
    if name == "DefaultSource":
        from vectordb.spark.datasource import VectorDataSource

        return VectorDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
