"""A delete row of a write that embeds, whose id is derived from columns that include the text column
(option ``id_from``): its id is derived from its own text, so it deletes its own record. Its text is not
embedded (a delete needs no vector), and is not blanked either: a blank text derived another id, so
the delete removed another record, or none, and the report said OK."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect


def stored(server: QdrantServer, collection: str) -> list[tuple[Any, Any]]:
    """(source, text) of each point the server holds."""
    points = server.store.points(collection).values()
    return sorted(((p.payload.get("source"), p.payload.get("text")) for p in points), key=str)


@pytest.mark.parametrize("as_arrow", [False, True])
@pytest.mark.parametrize("id_from", ["text", "source,text"])
def test_a_delete_row_deletes_the_record_its_own_text_derives(
    embeddings_server: EmbeddingsServer, qdrant_server: QdrantServer, as_arrow: bool, id_from: str
) -> None:
    options = embedding_options(embeddings_server, op_column="op", id_from=id_from, create=True, dimension=64)
    first: list[dict[str, Any]] = [
        {"source": "s1", "text": "hello world", "op": "upsert", "values": None},
        {"source": "s1", "text": None, "op": "upsert", "values": [0.3] * 64},  # no text: a vector given
        {"source": "s1", "text": "keep me", "op": "upsert", "values": None},
    ]
    then: list[dict[str, Any]] = [{"source": "s1", "text": "hello world", "op": "delete", "values": None}]
    with connect(qdrant_server.rest_uri("c"), on_error="report", **options) as client:
        assert client.upsert(pa.Table.from_pylist(first) if as_arrow else first).ok
        before = embeddings_server.stats.inputs
        report = client.upsert(pa.Table.from_pylist(then) if as_arrow else then)
    assert report.ok and (report.written, report.deleted, report.embedded) == (1, 1, 0), report
    assert embeddings_server.stats.inputs == before
    assert stored(qdrant_server, "c") == [("s1", "keep me"), ("s1", None)]
