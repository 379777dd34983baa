"""Through the data source: a delete row of a write that embeds, with ids derived from the text column
(option ``id_from``), deletes the record its own text derives, and only that one. Its text was blanked
before its id was derived, so the delete missed and the write succeeded."""

from __future__ import annotations

from typing import Any

from tests.embedding.fixtures import EMBED_MODEL, embeddings_server
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.servers.qdrant_grpc import QdrantServer

__all__ = ["embeddings_server"]


def test_a_delete_row_deletes_the_record_its_own_text_derives(
    spark: Any, embeddings_server: EmbeddingsServer, qdrant_server: QdrantServer
) -> None:
    def write(rows: list[tuple[str, str]]) -> None:
        options = {
            "uri": qdrant_server.rest_uri("c"),
            "op_column": "op",
            "id_from": "text",
            "text_column": "text",
            "embed_url": embeddings_server.url,
            "embed_model": EMBED_MODEL,
            "embed_api_key": DEFAULT_KEY,
            "create": "true",
            "on_error": "report",
        }
        frame = spark.createDataFrame(rows, "text string, op string").coalesce(1)
        frame.write.format("vectordb").options(**options).mode("append").save()

    write([("hello world", "upsert"), ("keep me", "upsert")])
    assert len(qdrant_server.store.points("c")) == 2
    write([("hello world", "delete")])
    assert [p.payload.get("text") for p in qdrant_server.store.points("c").values()] == ["keep me"]
