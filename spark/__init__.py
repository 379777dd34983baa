"""vectordb.spark: ``df.write.format("vectordb")`` and ``writeStream.format("vectordb")`` for PySpark ≥ 4.0.

After ``pip install vectordb-connector`` Spark finds the data source by itself (the top-level
``pyspark_vectordb`` module). ``register(spark)`` registers it explicitly where that lookup
cannot see the install: a session started before it, a Spark Connect client, or an editable
(development) install, whose modules ``pkgutil.iter_modules()`` does not list.

    (df.write.format("vectordb")
       .option("uri", "pinecone+grpc://my-index-abc123.svc.pinecone.io")
       .option("api_key", key)
       .mode("append").save())

Options: see ``VectorDataSource``. ``changes(df)`` turns a micro-batch of a Delta change data feed
into rows for the sink (one per id, its latest change; ``spark/change_feed.py``).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .change_feed import changes
    from .datasource import VectorDataSource

__all__ = ["VectorDataSource", "changes", "register", "workers_python_mismatch"]


def register(spark: SparkSession) -> None:
    """Register ``format("vectordb")`` with ``spark`` (a classic or a Spark Connect session)."""
    from .datasource import VectorDataSource

    spark.dataSource.register(VectorDataSource)
    _warn_if_workers_run_another_python(spark)


def _warn_if_workers_run_another_python(spark: SparkSession) -> None:
    """One log line when a local session's Python workers would start a Python other than this one,
    where ``vectordb`` is likely missing: their failure comes back as a long Java trace."""
    try:
        master = spark.sparkContext.master or ""
        configured = spark.conf.get("spark.pyspark.python", None)
    except Exception:  # Spark Connect: the workers are the server's business
        return
    message = workers_python_mismatch(master, configured, os.environ.get("PYSPARK_PYTHON"))
    if message:
        logging.getLogger("vectordb.spark").warning(message)


def workers_python_mismatch(master: str, configured: str | None, env: str | None) -> str | None:
    """Why a ``local`` session's Python workers would not run this Python, or ``None`` if they would.

    Spark starts ``spark.pyspark.python``, else ``$PYSPARK_PYTHON``, else ``python3`` from ``PATH``.
    Two executables in one folder (``python``, ``python3`` of a venv) count as the same Python.
    """
    if not master.startswith("local"):
        return None  # executors elsewhere: their Python is their cluster's
    given = configured or env or "python3"
    found = shutil.which(given) or given
    if os.path.dirname(os.path.abspath(found)) == os.path.dirname(os.path.abspath(sys.executable)):
        return None
    return (
        f"Spark's Python workers will start {found}, not this Python ({sys.executable}), and may not "
        "find vectordb: activate this environment, or set PYSPARK_PYTHON (spark.pyspark.python) to it"
    )


def __getattr__(name: str) -> Any:
    if name == "VectorDataSource":
        from .datasource import VectorDataSource

        return VectorDataSource
    if name == "changes":
        from .change_feed import changes

        return changes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
