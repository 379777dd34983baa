"""Text through Beam: ``apache_beam.ml.rag`` Chunks without embeddings, and dicts with a text column,
embedded by the sink on their way to the database (the Pinecone-protocol server, and Milvus Lite).

Every stored vector is compared exactly with the one the embeddings server derives from its text;
the elements whose text it refused are exactly ``.failed``, with its reason, and never stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.rag.ingestion.base import VectorDatabaseWriteTransform
from apache_beam.ml.rag.types import Chunk, Content, Embedding
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from tests.embedding.fixtures import embeddings_server, expected_vectors, too_long, words
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.beam import VectorDBWriteConfig, WriteToVectorDB
from vectordb.connector import ConfigError

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

__all__ = ["embeddings_server"]

MODEL = "test-embed-64"


def embed_options(server: EmbeddingsServer, **extra: Any) -> dict[str, Any]:
    return {"embed_url": server.url, "embed_model": MODEL, "embed_api_key": DEFAULT_KEY} | extra


def chunk(i: int, text: str, embedding: Embedding | None = None) -> Chunk:
    return Chunk(
        id=f"doc-{i}", index=i, content=Content(text=text), metadata={"doc": i % 3}, embedding=embedding
    )


def test_chunks_without_embeddings_are_embedded_through_the_rag_write_transform(
    embeddings_server: EmbeddingsServer, grpc_server: ServerHandle
) -> None:
    own = np.linspace(-1, 1, 64, dtype=np.float32)
    texts = {i: words(i) for i in range(300)}
    texts[17] = too_long(17)  # refused by the model: never stored
    chunks = [chunk(i, text) for i, text in texts.items()]
    chunks.append(chunk(300, "kept as given", Embedding(dense_embedding=own.tolist())))
    config = VectorDBWriteConfig(grpc_server.uri, on_error="report", **embed_options(embeddings_server))
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = pipeline | beam.Create(chunks) | VectorDatabaseWriteTransform(config)

    arrived = grpc_server.arrived()
    good = [i for i in texts if i != 17]
    assert arrived.ids() == {f"doc-{i}" for i in good} | {"doc-300"}
    expected = expected_vectors([texts[i] for i in good], model=MODEL)
    for k, i in enumerate(good):
        stored = arrived.vector(f"doc-{i}")
        np.testing.assert_array_equal(stored.values, expected[k])
        assert stored.metadata == {"doc": i % 3, "content": texts[i]}
    np.testing.assert_array_equal(arrived.vector("doc-300").values, own)
    assert embeddings_server.stats.embedded == len(good)  # the chunk with its own embedding was not sent


def test_refused_texts_are_exactly_the_failed_output_with_the_servers_reason(
    embeddings_server: EmbeddingsServer, grpc_server: ServerHandle
) -> None:
    bad = {0, 99, 512, 1999}
    texts = [too_long(i) if i in bad else words(i, 6) for i in range(2000)]
    chunks = [chunk(i, text) for i, text in enumerate(texts)]
    sink = WriteToVectorDB(grpc_server.uri, on_error="report", **embed_options(embeddings_server))
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        result = pipeline | beam.Create(chunks) | sink
        failed = result.failed | beam.Map(
            lambda d: (
                d["id"],
                d["error_type"],
                "maximum context length is 512 tokens" in d["error"],
                d["content"][:8],  # the Chunk as the sink reads it: its text under content_key
            )
        )
        assert_that(failed, equal_to([(f"doc-{i}", "Rejected", True, texts[i][:8]) for i in bad]))
    assert grpc_server.arrived().ids() == {f"doc-{i}" for i in range(2000) if i not in bad}


def test_dicts_with_text_land_in_milvus_lite_exactly(
    embeddings_server: EmbeddingsServer, milvus_lite: LiteServer, collection_name: str
) -> None:
    records = [{"id": f"r{i}", "text": words(i), "n": i} for i in range(500)]
    records[250]["text"] = ""  # fails unsent: OpenAI refuses a whole request for one empty input
    sink = WriteToVectorDB(
        milvus_lite.uri,
        collection=collection_name,
        create=True,
        check_target=True,  # one probe now: the collection is made with the model's dimension
        on_error="report",
        text_column="text",
        **embed_options(embeddings_server),
    )
    assert sink.options.dimension == 64 and embeddings_server.stats.requests == 1
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        result = pipeline | beam.Create(records) | sink
        assert_that(result.failed | beam.Map(lambda d: d["id"]), equal_to(["r250"]))
    client = milvus_lite.client
    client.load_collection(collection_name)
    rows = {
        r["id"]: r
        for r in client.get(collection_name, ids=[f"r{i}" for i in range(500)], output_fields=["*"])
    }
    good = [i for i in range(500) if i != 250]
    assert set(rows) == {f"r{i}" for i in good}
    expected = expected_vectors([records[i]["text"] for i in good], model=MODEL)
    for k, i in enumerate(good):
        np.testing.assert_array_equal(np.asarray(rows[f"r{i}"]["vector"], dtype=np.float32), expected[k])
        assert (rows[f"r{i}"]["text"], rows[f"r{i}"]["n"]) == (records[i]["text"], i)


def test_check_target_probes_the_model_while_the_pipeline_is_built(
    embeddings_server: EmbeddingsServer, grpc_server: ServerHandle
) -> None:
    with pytest.raises(Exception, match="The model `nope` does not exist"):
        WriteToVectorDB(
            grpc_server.uri, check_target=True, **embed_options(embeddings_server, embed_model="nope")
        )
    with pytest.raises(
        ConfigError, match=r"'test-embed-64' answers 64-dimensional vectors, not 32 \(option dimension\)"
    ):
        WriteToVectorDB(grpc_server.uri, check_target=True, dimension=32, **embed_options(embeddings_server))
    with pytest.raises(ConfigError, match="option embed_url needs option embed_model"):
        WriteToVectorDB(grpc_server.uri, embed_url=embeddings_server.url)
    with pytest.raises(ConfigError, match="option metadata_columns: the Beam sink reads the text to embed"):
        WriteToVectorDB(
            grpc_server.uri, text_column="text", metadata_columns="n", **embed_options(embeddings_server)
        )
