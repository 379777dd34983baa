"""``VectorDBWriteConfig`` in ``apache_beam.ml.rag``'s ``VectorDatabaseWriteTransform``, with Chunks."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.rag.ingestion.base import VectorDatabaseWriteTransform
from apache_beam.ml.rag.types import Chunk, Content, Embedding
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.servers.fixtures import ServerHandle
from vectordb.beam import VectorDBWriteConfig
from vectordb.connector import ConfigError


def test_chunks_through_the_rag_write_transform(grpc_server: ServerHandle) -> None:
    vectors = np.random.default_rng(3).standard_normal((50, 8)).astype(np.float32)
    chunks = [
        Chunk(
            id=f"doc-1-{i}",
            index=i,
            content=Content(text=f"part {i}"),
            metadata={"doc": "doc-1"},
            embedding=Embedding(dense_embedding=vectors[i].tolist()),
        )
        for i in range(50)
    ]
    config = VectorDBWriteConfig(grpc_server.uri, namespace="rag", content_key="text")
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = pipeline | beam.Create(chunks) | VectorDatabaseWriteTransform(config)

    arrived = grpc_server.arrived()
    assert arrived.ids("rag") == {f"doc-1-{i}" for i in range(50)}
    for i in range(50):
        stored = arrived.vector(f"doc-1-{i}", "rag")
        assert stored.values_f32 == vectors[i].tobytes()
        assert stored.metadata == {"doc": "doc-1", "text": f"part {i}"}


def test_config_checks_options_when_made() -> None:
    with pytest.raises(ConfigError, match="max_concurrency"):
        VectorDBWriteConfig("pinecone+grpc://127.0.0.1:1", max_concurrency=0)
