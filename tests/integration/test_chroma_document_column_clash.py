"""Option ``document_column`` naming a column another option reads (the id, the vector, the namespace, the op)
on a real Chroma server: such a column is never metadata, where the document is read from, so every row was
stored without a document and the write reported OK. Now a ``ConfigError`` names document_column and the
option whose column it is, before any row is sent."""

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
            "id": ["doc one", "doc two"],
            "values": pa.array([[0.5] * 4, [0.25] * 4], pa.list_(pa.float32())),
            "ns": ["x", "y"],
            "op": ["upsert", "upsert"],
            "body": ["hello", "world"],
        }
    )


@pytest.mark.parametrize(
    ("column", "options", "clashing"),
    [
        ("id", {}, "id_column"),
        ("values", {}, "vector_column"),
        ("ns", {"namespace_column": "ns"}, "namespace_column"),
        ("op", {"op_column": "op"}, "op_column"),
    ],
)
def test_a_document_column_another_option_reads_is_a_config_error(
    chroma_server: ChromaServer,
    chroma_client: Any,
    chroma_collection: str,
    column: str,
    options: dict[str, str],
    clashing: str,
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    with (
        pytest.raises(ConfigError, match=f"option document_column: column '{column}' is option {clashing}'s"),
        connect(chroma_server.uri(chroma_collection), document_column=column, **options) as client,
    ):
        client.write(table())
    assert collection.count() == 0


def test_an_id_from_column_can_be_the_document(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    """With id_from the id column is not read: the columns the id is made from stay metadata."""
    collection = chroma_client.create_collection(chroma_collection)
    with connect(chroma_server.uri(chroma_collection), document_column="body", id_from="body") as client:
        report = client.write(table().drop_columns(["id"]))
    assert report.ok, report
    assert sorted(collection.get(include=["documents"])["documents"]) == ["hello", "world"]
