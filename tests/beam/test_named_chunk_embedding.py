"""With named vectors (vector_columns / multi_vector_columns) an ``apache_beam.ml.rag`` Chunk's own dense
embedding has no name: the Chunk fails its row saying so, instead of its embedding being stored as a
payload field ``values`` beside the named vectors (the old code, on the same pipeline). A Chunk whose
named vectors are in its metadata and that carries no dense embedding is written.
Real Beam pipeline (DirectRunner) to the project's Qdrant protocol test server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.ml.rag.types import Chunk, Content, Embedding

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam import WriteToVectorDB
from vectordb.beam.elements import NAMELESS_EMBEDDING
from vectordb.connector.transports.base import forget_shared

LETTERS: list[dict[str, Any]] = []


def _collect(letter: dict[str, Any]) -> None:
    LETTERS.append(letter)  # a module function: pickled by reference, so the in-process runner fills it


@pytest.fixture
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def test_a_chunks_nameless_embedding_fails_its_row_and_is_never_metadata(qdrant: QdrantServer) -> None:
    named = {"title_vec": [0.1, 0.2], "tokens": [[1.0, 2.0]]}
    chunks = [
        Chunk(
            id="both",
            content=Content(text="a"),
            embedding=Embedding(dense_embedding=[0.9, 0.8]),
            metadata=named,
        ),
        Chunk(
            id="only", content=Content(text="b"), embedding=Embedding(dense_embedding=[0.9, 0.8]), metadata={}
        ),
        Chunk(id="named", content=Content(text="c"), metadata={**named, "src": "x"}),
    ]
    LETTERS.clear()
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        result = (
            pipeline
            | beam.Create(chunks, reshuffle=False)
            | WriteToVectorDB(
                qdrant.uri("rest", "rag"),
                create=True,
                on_error="report",
                vector_dimensions="title:2,colbert:2",
                vector_columns="title:title_vec",
                multi_vector_columns="colbert:tokens",
            )
        )
        _ = result.failed | beam.Map(_collect)
    assert {letter["id"]: letter["error"] for letter in LETTERS} == {
        "both": NAMELESS_EMBEDDING,
        "only": NAMELESS_EMBEDDING,
    }
    assert "vector_columns" in NAMELESS_EMBEDDING
    # the letter keeps the embedding (under the vector column, as any Chunk's letter): not lost to a retry
    assert {letter["id"]: letter.get("values") for letter in LETTERS} == {
        "both": [0.9, 0.8],
        "only": [0.9, 0.8],
    }
    points = {
        p.id: p for p in qdrant.client().scroll("rag", with_vectors=True, with_payload=True, limit=10)[0]
    }
    assert len(points) == 1, points
    for point in points.values():
        assert "values" not in point.payload, point.payload
        assert point.vector["title"] == pytest.approx([0.1, 0.2]) and point.vector["colbert"] == [[1.0, 2.0]]
