"""Chroma's ``document_column`` through the Beam sink on the DirectRunner, against a real Chroma server: the
sink's reader reads the columns the client does (``client.column_spec``), so the document is stored whatever
``metadata_columns`` lists (the reader dropped it first: every document lost, no error), and a name no
element holds is a ``ConfigError`` naming the option (it was silent)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import apache_beam as beam
import pytest

from vectordb.beam import WriteToVectorDB

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer

ROWS = [
    {"id": "a", "values": [0.5, 1.0, 2.0, 3.0], "body": "hello", "rank": 1},
    {"id": "b", "values": [1.5, 1.0, 2.0, 3.0], "body": "world", "rank": 2},
]


def run(uri: str, rows: list[dict[str, Any]] = ROWS, **options: Any) -> None:
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        _ = pipeline | beam.Create(rows) | WriteToVectorDB(uri, **options)


def test_beam_stores_the_document_whatever_metadata_columns_lists(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    run(chroma_server.uri(chroma_collection), document_column="body", metadata_columns=["rank"])
    got = collection.get(include=["documents", "metadatas"])
    stored = sorted(zip(got["ids"], got["documents"], got["metadatas"], strict=True))
    assert stored == [("a", "hello", {"rank": 1}), ("b", "world", {"rank": 2})]


def test_beam_refuses_a_document_column_no_element_holds(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    with pytest.raises(Exception, match="option document_column: no row to upsert has a column 'bdy'"):
        many = [dict(ROWS[0], id=f"r{i}") for i in range(100)]  # INPUT_COLUMN_SAMPLE, none with 'bdy'
        run(chroma_server.uri(chroma_collection), many, document_column="bdy", rows_per_batch=100)
    assert collection.count() == 0
