"""Deletes in a write with the embedding options: no delete row's text is embedded (a delete needs no
vector), from dicts and from Arrow alike, and the upserts land with the model's vectors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.embedding.fixtures import EMBED_MODEL, embedding_options, expected_vectors
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect


@pytest.mark.parametrize("as_arrow", [False, True])
def test_no_text_of_a_delete_row_is_embedded(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle, as_arrow: bool
) -> None:
    with connect(pinecone.uri, op_column="op", **embedding_options(embeddings_server)) as client:
        assert client.upsert([{"id": f"d{i}", "text": f"first text {i}"} for i in range(4)]).ok
        before = embeddings_server.stats.inputs
        rows: list[dict[str, Any]] = [
            {"id": "d0", "text": "deleted: never embedded", "op": "delete"},
            {"id": "d1", "text": "a new text for d1", "op": "update"},
            {"id": "d2", "text": "deleted too: never embedded", "op": "DELETE"},
            {"id": "d9", "text": "an insert", "op": "insert"},
        ]
        data: Any = pa.Table.from_pylist(rows) if as_arrow else rows
        report = client.upsert(data)
    assert report.ok and (report.written, report.deleted, report.embedded) == (4, 2, 2), report
    assert embeddings_server.stats.inputs - before == 2
    assert "never embedded" not in str(embeddings_server.stats.log)
    arrived = pinecone.arrived()
    assert arrived.ids() == {"d1", "d3", "d9"}
    np.testing.assert_array_equal(
        arrived.vector("d1").values, expected_vectors(["a new text for d1"], model=EMBED_MODEL)[0]
    )
