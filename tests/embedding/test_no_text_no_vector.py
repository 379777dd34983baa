"""With the embedding stage on, an upsert row with neither text nor a vector fails with a reason that
names the text column (it failed as ``null vector``, which sends a user looking for a vector column
when the row's text is what is missing): for dict rows, Arrow rows (what Spark's tasks hand over) and
Beam elements. Rows that need neither stay as they were: a delete, and a sparse-only row."""

from __future__ import annotations

from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.testing.util import assert_that, equal_to

from tests.embedding.fixtures import EMBED_MODEL, embedding_options, expected_vectors
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB
from vectordb.connector import connect

NO_TEXT = "no text in column 'body' and no vector"


def embedding(server: EmbeddingsServer, **extra: Any) -> dict[str, Any]:
    return embedding_options(server, text_column="body", on_error="report") | extra


def dict_rows() -> list[dict[str, Any]]:
    return [
        {"id": "text", "body": "a text to embed", "op": "upsert"},
        {"id": "neither", "op": "upsert"},
        {"id": "null-text", "body": None, "values": [], "op": "upsert"},
        {"id": "sparse-only", "sparse_values": {"indices": [3], "values": [0.5]}, "op": "upsert"},
        {"id": "gone", "op": "delete"},
    ]


def failures(report: Any) -> dict[str, tuple[str, str]]:
    return {i: (f.error_type, f.error) for f in report.failures for i in f.ids}


def test_dict_rows_with_neither_fail_naming_the_text_column(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    rows = dict_rows()
    with connect(pinecone.uri, op_column="op", **embedding(embeddings_server)) as client:
        report = client.upsert(rows)
    failed = failures(report)
    # the sparse-only row went to the database, whose dense index refuses it
    assert failed.pop("sparse-only")[0] == "Rejected"
    assert failed == {"neither": ("Invalid", NO_TEXT), "null-text": ("Invalid", NO_TEXT)}
    assert [f.positions for f in report.failures if f.error == NO_TEXT] == [(1, 2)]
    assert pinecone.arrived().ids() == {"text"}
    np.testing.assert_array_equal(
        pinecone.arrived().vector("text").values, expected_vectors(["a text to embed"], model=EMBED_MODEL)[0]
    )


def test_arrow_rows_with_neither_fail_naming_the_text_column(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    table = pa.table(
        {
            "id": ["text", "neither", "empty-vector", "gone", "own"],
            "body": ["a text to embed", None, None, None, None],
            "values": pa.array([None, None, [], None, [0.5] * 64], type=pa.list_(pa.float32())),
            "op": ["upsert", None, "insert", "delete", "upsert"],
        }
    )
    with connect(pinecone.uri, op_column="op", **embedding(embeddings_server)) as client:
        report = client.upsert(table)
    assert failures(report) == {"neither": ("Invalid", NO_TEXT), "empty-vector": ("Invalid", NO_TEXT)}
    assert pinecone.arrived().ids() == {"text", "own"}


def test_arrow_rows_of_text_alone_with_neither_fail_naming_the_text_column(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    """No vector column at all (every vector the model's), and no row of a piece with text."""
    table = pa.table({"id": ["a", "b"], "body": pa.array([None, None], type=pa.string())})
    with connect(pinecone.uri, dimension=64, **embedding(embeddings_server)) as client:
        report = client.upsert(table)
    assert failures(report) == {"a": ("Invalid", NO_TEXT), "b": ("Invalid", NO_TEXT)}


def test_beam_elements_with_neither_fail_naming_the_text_column(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    sink = WriteToVectorDB(pinecone.uri, dimension=64, **embedding(embeddings_server))
    elements = [{"id": "text", "body": "a text to embed"}, {"id": "neither", "n": 1}]
    with beam.Pipeline() as pipeline:
        result = pipeline | beam.Create(elements) | sink
        reasons = result.failed | beam.Map(lambda d: (d["id"], d["error_type"], d["error"]))
        assert_that(reasons, equal_to([("neither", "Invalid", NO_TEXT)]))
    assert pinecone.arrived().ids() == {"text"}
