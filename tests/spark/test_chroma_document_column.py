"""Spark's driver refuses a ``document_column`` the DataFrame lacks, naming the option, before any task runs
(it was ignored: the job succeeded and stored no document), on a real Chroma server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer


def test_the_driver_refuses_a_document_column_the_frame_lacks(
    spark: Any, chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    frame = spark.createDataFrame(
        [("a", [0.5, 1.0, 2.0, 3.0], "hello")], "id string, values array<float>, body string"
    )
    writer = frame.write.format("vectordb").option("uri", chroma_server.uri(chroma_collection)).mode("append")
    with pytest.raises(Exception, match="option document_column: no column 'text' in the input"):
        writer.option("document_column", "text").save()
    assert collection.count() == 0
    writer.option("document_column", "body").option("metadata_columns", "id").save()
    got = collection.get(include=["documents"])
    assert (got["ids"], got["documents"]) == (["a"], ["hello"])
