"""vectordb.beam: the Beam sink, ``WriteToVectorDB``, a thin adapter over ``vectordb.connector``.

::

    from vectordb.beam import WriteToVectorDB
    result = records | WriteToVectorDB("pinecone+grpc://my-index-abc123.svc.pinecone.io", api_key=..., on_error="report")
    result.failed | "dead letters" >> beam.Map(json.dumps) | beam.io.WriteToText("dead", ".jsonl")

``VectorDBWriteConfig`` plugs the same sink into ``apache_beam.ml.rag``'s
``VectorDatabaseWriteTransform``. Importing this package imports ``apache_beam`` and registers
the coders of ``Row`` and ``VectorBatch``.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("apache_beam") is None:  # one line naming the extra, not a bare ImportError
    from vectordb.connector.cli import exit_if_run_without_extra
    from vectordb.connector.errors import MissingExtra

    exit_if_run_without_extra("vectordb-beam")  # python -m vectordb.beam.load: one line and exit 2
    raise MissingExtra("vectordb.beam needs apache_beam: pip install 'vectordb-connector[beam]'")

from vectordb.connector.cli import quiet_beam_import_warning, running_as

if running_as("vectordb-beam"):  # python -m vectordb.beam.load: the command starts without Beam's noise
    quiet_beam_import_warning()

from .batch import VectorBatch
from .coders import RowCoder, VectorBatchCoder
from .config import VectorDBWriteConfig
from .elements import Row
from .sink import WriteResult, WriteToVectorDB

__all__ = [
    "Row",
    "RowCoder",
    "VectorBatch",
    "VectorBatchCoder",
    "VectorDBWriteConfig",
    "WriteResult",
    "WriteToVectorDB",
]
