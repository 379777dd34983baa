"""A misspelt ``document_column`` on a real Chroma server is a ``ConfigError`` naming the option for dict rows
(no schema: when no row to upsert holds it; a row may lack it alone) and for Arrow input with ``op_column``
(its column check skipped the option there); both stored every row with no document, silently. With
``metadata_columns`` as well, the error names document_column, not metadata_columns (the user never listed
the column there)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer

ROWS = [
    {"id": "a", "values": [0.5, 1.0, 2.0, 3.0], "body": "hello", "rank": 1, "op": "upsert"},
    {"id": "b", "values": [1.5, 1.0, 2.0, 3.0], "rank": 2, "op": "upsert"},
]


def stored(collection: Any) -> list[tuple[str, str | None]]:
    got = collection.get(include=["documents"])
    return sorted(zip(got["ids"], got["documents"], strict=True))


def test_dict_rows_none_holding_the_document_column_are_refused_naming_it(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    uri = chroma_server.uri(chroma_collection)
    many = [dict(ROWS[1], id=f"r{i}") for i in range(100)]  # INPUT_COLUMN_SAMPLE rows, none with 'bdy'
    with (
        pytest.raises(ConfigError, match="option document_column: no row to upsert has a column 'bdy'"),
        connect(uri, document_column="bdy") as client,
    ):
        client.write(many)
    assert collection.count() == 0
    with connect(uri, document_column="bdy") as client:  # a few rows without one: rows without a document
        assert client.write(many[:99]).ok
    assert collection.count() == 99
    collection.delete(ids=[row["id"] for row in many[:99]])
    with connect(uri, document_column="body", metadata_columns=["rank"]) as client:  # "b" has none: fine
        assert client.write(ROWS).ok
    assert stored(collection) == [("a", "hello"), ("b", None)]


def test_a_client_checks_dict_rows_until_enough_told(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    """A first write of a few rows cannot tell a misspelt name from rows without a document; a later write
    of enough rows on the same client still can (the client stopped checking after its first write)."""
    collection = chroma_client.create_collection(chroma_collection)
    many = [dict(ROWS[1], id=f"r{i}") for i in range(103)]
    with connect(chroma_server.uri(chroma_collection), document_column="bdy") as client:
        assert client.write(many[:3]).ok
        with pytest.raises(ConfigError, match="option document_column: no row to upsert has a column 'bdy'"):
            client.write(many[3:])
    assert collection.count() == 3


def test_dict_deletes_alone_need_no_document(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    chroma_client.create_collection(chroma_collection)
    with connect(chroma_server.uri(chroma_collection), document_column="bdy", op_column="op") as client:
        assert client.write([{"id": "a", "op": "delete"}]).ok


@pytest.mark.parametrize("extra", [{}, {"metadata_columns": ["rank"]}])
def test_arrow_with_op_column_lacking_the_document_column_names_the_option(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str, extra: dict[str, Any]
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    with (
        pytest.raises(
            ConfigError,
            match=r"option document_column: no column 'bdy' in the input .*an input of deletes only reads no "
            r"document_column",
        ),
        connect(
            chroma_server.uri(chroma_collection), document_column="bdy", op_column="op", **extra
        ) as client,
    ):
        client.write(pa.Table.from_pylist(ROWS))
    assert collection.count() == 0
