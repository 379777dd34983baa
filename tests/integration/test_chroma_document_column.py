"""Option ``document_column`` on a real Chroma server: a column the input lacks is a ``ConfigError`` naming the
option, as for ``namespace_column`` (it was ignored: no document, no error), and the column is read as the
document whatever ``metadata_columns`` lists (it was dropped when they left it out)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer


def table() -> pa.Table:
    return pa.table(
        {
            "id": ["a", "b"],
            "values": pa.array([[0.5, 1.0, 2.0, 3.0], [1.5, 1.0, 2.0, 3.0]], pa.list_(pa.float32())),
            "body": ["hello", "world"],
            "rank": [1, 2],
        }
    )


def test_a_document_column_the_input_lacks_is_a_config_error_naming_the_option(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    with (
        pytest.raises(ConfigError, match="option document_column: no column 'text' in the input"),
        connect(chroma_server.uri(chroma_collection), document_column="text") as client,
    ):
        client.write(table())
    assert collection.count() == 0


def test_the_document_column_is_read_whatever_metadata_columns_lists(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    uri = chroma_server.uri(chroma_collection)
    with connect(uri, document_column="body", metadata_columns=["rank"]) as client:
        assert client.write(table()).ok
    got = collection.get(include=["documents", "metadatas"])
    by_id = {i: (d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}
    assert {i: d for i, (d, _) in by_id.items()} == {"a": "hello", "b": "world"}
    assert {i: (m["rank"], "body" in m) for i, (_, m) in by_id.items()} == {"a": (1, False), "b": (2, False)}
