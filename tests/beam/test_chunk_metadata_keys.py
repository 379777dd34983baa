"""A ``Chunk``'s metadata keys named like the id, vector, sparse or text keys the sink reads it into.

Such a key is the user's data (a source document's ``id`` is common in RAG): it is stored under its own
name, never read as the row's id or vectors; a key the stored metadata needs for the Chunk's own text
fails its row, naming the key. Counted at the Pinecone REST test server.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.ml.rag.ingestion.base import VectorDatabaseWriteTransform
from apache_beam.ml.rag.types import Chunk, Content, Embedding
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.servers.fixtures import ServerHandle
from vectordb.beam import VectorDBWriteConfig
from vectordb.beam.elements import ElementReader, Refusal, Row
from vectordb.connector import rows_from_letters

from .conftest import FAILED, run_sink

DENSE = [1.0, 2.0, 3.0]


def _chunk(cid: str, metadata: dict, dense: list[float] | None = DENSE, text: str | None = "text") -> Chunk:
    embedding = None if dense is None else Embedding(dense_embedding=dense)
    return Chunk(id=cid, content=Content(text=text), metadata=metadata, embedding=embedding)


def test_metadata_keys_named_like_the_slots_are_stored_or_fail_by_name(rest_server: ServerHandle) -> None:
    FAILED.clear()
    chunks = [
        _chunk("c-id", {"id": "source-doc-42", "lang": "en"}),
        _chunk("c-values", {"values": "seven"}),
        _chunk("c-sparse", {"sparse_values": "s"}),
        _chunk("c-no-vector", {"values": [7.0, 7.0, 7.0]}, dense=None),  # the metadata is no vector
        _chunk("c-content", {"content": "user's own content field"}),  # the text needs that name
        _chunk("c-no-text", {"content": "own"}, text=None),  # no text: the name is free
        _chunk("c-short", {"id": "src-9"}, dense=[1.0, 2.0]),  # refused by the checks: its letter
    ]
    run_sink(rest_server.uri, chunks, dimension=3)

    final = rest_server.arrived().final
    assert sorted(i for _, i in final) == ["c-id", "c-no-text", "c-sparse", "c-values"]
    stored = {i: v for (_, i), v in final.items()}
    for vector in stored.values():
        assert vector.values.tolist() == DENSE and vector.sparse is None
    assert stored["c-id"].metadata == {"id": "source-doc-42", "lang": "en", "content": "text"}
    assert stored["c-values"].metadata == {"values": "seven", "content": "text"}
    assert stored["c-sparse"].metadata == {"sparse_values": "s", "content": "text"}
    assert stored["c-no-text"].metadata == {"content": "own"}

    reasons = {letter["id"]: letter["error"] for letter in FAILED}
    assert sorted(reasons) == ["c-content", "c-no-vector", "c-short"]
    assert reasons["c-no-vector"] == "null vector"
    assert reasons["c-content"].startswith("metadata key 'content' is where the sink stores the Chunk's text")
    # the letter, written again, gives the same row: the Chunk's id, its metadata 'id' kept
    (short,) = (letter for letter in FAILED if letter["id"] == "c-short")
    again = ElementReader().read(rows_from_letters(short))
    assert isinstance(again, Row) and again.id == "c-short" and again.vector.tolist() == [1.0, 2.0]
    assert again.metadata == {"id": "src-9", "content": "text"}


def test_rag_write_transform_keeps_a_source_id_and_another_content_key_keeps_both(
    rest_server: ServerHandle,
) -> None:
    chunks = [
        _chunk("c1", {"content": "user's own", "id": "doc-7"}, text="the text"),
        _chunk("c2", {"values": "v", "sparse_values": "s"}, dense=None),
    ]
    config = VectorDBWriteConfig(rest_server.uri, dimension=3, content_key="body", on_error="report")
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = pipeline | beam.Create(chunks) | VectorDatabaseWriteTransform(config)

    final = {i: v for (_, i), v in rest_server.arrived().final.items()}
    assert sorted(final) == ["c1"]  # c2 has no vector: its metadata 'values' is not read as one
    assert final["c1"].values.tolist() == DENSE
    assert final["c1"].metadata == {"content": "user's own", "id": "doc-7", "body": "the text"}


def test_keys_the_stored_metadata_cannot_hold_twice_fail_the_row_by_name() -> None:
    with_id_from = ElementReader(id_from=("doc",)).read(_chunk("c", {"doc": "d", "id": "mine"}))
    assert isinstance(with_id_from, Refusal)
    assert with_id_from.dead_letter["error"].startswith(
        "metadata key 'id' is where the sink stores the Chunk's id"
    )
    selected = ElementReader(metadata_columns=("id", "lang")).read(_chunk("c", {"id": "mine", "lang": "en"}))
    assert isinstance(selected, Refusal) and "metadata key 'id'" in selected.dead_letter["error"]
    beside = ElementReader().read(_chunk("c", {"values": "v", "metadata": {"a": 1}}))
    assert isinstance(beside, Refusal) and "metadata key 'values'" in beside.dead_letter["error"]
    other_names = ElementReader(id_column="chunk_id").read(_chunk("c", {"id": "mine"}))
    assert isinstance(other_names, Row) and other_names.id == "c"
    assert other_names.metadata == {"id": "mine", "content": "text"}
