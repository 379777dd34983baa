"""A dead letter's ``id`` is its row's own id, of its type (README: a fixed letter goes back through the
same write as it is). It was the report's text: a letter for int id 5 said '5', and written again it
made Qdrant a new point (a UUIDv5 of '5', payload original_id '5') beside point 5. Qdrant protocol
server, read back from its store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

REASON = ("error", "error_type", "retryable", "attempts")


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _fixed(letter: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in letter.items() if k not in REASON} | {"values": [1.0, 0.5, 0.0]}


def test_a_dict_letter_fed_back_writes_the_same_point(server: QdrantServer) -> None:
    uri = server.rest_uri("c")
    data = [{"id": 5, "values": [1.0, float("nan"), 0.0], "tag": "x"}, {"values": [1.0, 1.0, 1.0]}]
    with connect(uri, create=True, dimension=3, on_error="report") as client:
        report = client.write(data)
        assert [f.ids for f in report.failures] == [("5",), (None,)]  # the report's ids stay text
        letters = client.dead_letters(data, report)
        assert isinstance(letters, list)
        assert [letter["id"] for letter in letters] == [5, None]
        assert client.write([_fixed(letters[0])]).ok
    assert {k: v.payload for k, v in server.store.points("c").items()} == {5: {"tag": "x"}}


def test_arrow_letters_keep_the_id_columns_type_and_write_the_same_point(server: QdrantServer) -> None:
    uri = server.rest_uri("c")
    table = pa.table(
        {
            "id": pa.array([5, 6], type=pa.int64()),
            "values": pa.array([[1.0, float("nan"), 0.0], [1.0, 1.0, 1.0]], type=pa.list_(pa.float32())),
            "tag": ["x", "y"],
        }
    )
    with connect(uri, create=True, dimension=3, on_error="report") as client:
        report = client.write(table)
        letters = client.dead_letters(table, report)
        assert isinstance(letters, pa.Table)
        assert letters.schema.field("id").type == pa.int64()
        assert letters.column("id").to_pylist() == [5]
        fixed = letters.drop_columns(list(REASON)).set_column(
            1, "values", pa.array([[1.0, 0.5, 0.0]], type=pa.list_(pa.float32()))
        )
        assert client.write(fixed).ok
    assert {k: v.payload for k, v in server.store.points("c").items()} == {5: {"tag": "x"}, 6: {"tag": "y"}}
