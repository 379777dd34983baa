"""vectordb.spark: ``df.write.format("vectordb")`` and ``writeStream.format("vectordb")`` for PySpark ≥ 4.0.

After ``pip install vectordb-connector`` Spark finds the data source by itself (the top-level
``pyspark_vectordb`` module). ``register(spark)`` registers it explicitly where that lookup
cannot see the install: a session started before it, a Spark Connect client, or an editable
(development) install, whose modules ``pkgutil.iter_modules()`` does not list.

    (df.write.format("vectordb")
       .option("uri", "pinecone+grpc://my-index-abc123.svc.pinecone.io")
       .option("api_key", key)
       .mode("append").save())

Options: see ``VectorDataSource``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .datasource import VectorDataSource

__all__ = ["VectorDataSource", "register"]


def register(spark: SparkSession) -> None:
    """Register ``format("vectordb")`` with ``spark`` (a classic or a Spark Connect session)."""
    from .datasource import VectorDataSource

    spark.dataSource.register(VectorDataSource)


def __getattr__(name: str) -> Any:
    if name == "VectorDataSource":
        from .datasource import VectorDataSource

        return VectorDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
