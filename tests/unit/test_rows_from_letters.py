"""README: "a fixed letter written again writes the same row". A letter is the reason (``id``, ``error``,
``error_type``, ``retryable``, ``attempts``) and the row, a row column named like the reason prefixed
(``row_error``); written as it was, every reader stored the reason as metadata and the row's ``error`` as
``row_error``. ``rows_from_letters`` gives the rows back: written again, a fixed one stores what a direct
write of the fixed row stores (Arrow into the Qdrant test server, whose int ids are points of their own;
dicts into the Pinecone one).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import ConfigError, connect, rows_from_letters
from vectordb.connector.dead_letters import REASON_FIELDS, dead_letters
from vectordb.connector.report import BatchFailure
from vectordb.connector.rows import ColumnSpec

VECTORS = pa.list_(pa.float32())
REASON = {"error", "error_type", "retryable", "attempts"}


def arrow_rows(second: list[float]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "values": pa.array([[1.0, 2.0, 3.0], second, [7.0, 8.0, 9.0]], VECTORS),
            "title": ["one", "two", "three"],
            "error": ["e1", "e2", "e3"],
        }
    )


def test_arrow_letters_fixed_and_fed_back_store_the_rows_a_direct_write_stores(
    qdrant_server: QdrantServer,
) -> None:
    table, fixed_table = arrow_rows([1.0, 2.0]), arrow_rows([4.0, 5.0, 6.0])
    with connect(qdrant_server.rest_uri("direct"), create=True, dimension=3) as client:
        client.write(fixed_table)
    with connect(qdrant_server.rest_uri("letters"), create=True, dimension=3, on_error="report") as client:
        letters = client.dead_letters(table, client.write(table))
        fixed = letters.set_column(
            letters.schema.get_field_index("values"), "values", pa.array([[4, 5, 6]], VECTORS)
        )
        rows = rows_from_letters(fixed)
        assert rows.equals(fixed_table.slice(1, 1))  # the row as it came: int64 id, its own 'error'
        assert not client.write(rows).failures
    with connect(qdrant_server.rest_uri("as_is"), create=True, dimension=3) as client:
        client.write(fixed)
    direct = qdrant_server.store.points("direct")
    assert qdrant_server.store.points("letters") == direct
    assert direct[2].payload == {"title": "two", "error": "e2"}
    # the letter as it is stores its reason, and the row's own 'error' under another name
    assert set(qdrant_server.store.points("as_is")[2].payload) == REASON | {"title", "row_error"}


def dict_rows(second: list[float]) -> list[dict[str, Any]]:
    return [
        {"id": "a", "values": [1.0, 2.0, 3.0], "metadata": {"t": 1}, "error": "e1"},
        {"id": "b", "values": second, "metadata": {"t": 2}, "error": "e2"},
        {"id": "c", "values": [1.0, 2.0, 5.0], "metadata": {"t": 3}, "error": "e3"},
    ]


def test_dict_letters_fixed_and_fed_back_store_the_rows_a_direct_write_stores(
    pinecone_rest_server: ServerHandle,
) -> None:
    rows, fixed_rows = dict_rows([1.0, 2.0]), dict_rows([4.0, 5.0, 6.0])
    with connect(pinecone_rest_server.uri, api_key="k", namespace="direct", dimension=3) as client:
        client.write(fixed_rows)
    with connect(pinecone_rest_server.uri, api_key="k", dimension=3, on_error="report") as client:
        (letter,) = client.dead_letters(rows, client.write(rows, namespace="letters"))
        letter["values"] = [4.0, 5.0, 6.0]
        back = rows_from_letters([letter])
        assert back == [fixed_rows[1]]
        assert not client.write(back, namespace="letters").failures
        client.write([letter], namespace="as_is")
    stored = pinecone_rest_server.arrived().namespaces
    assert stored["letters"] == stored["direct"]
    assert stored["direct"]["b"].metadata == {"t": 2, "error": "e2"}
    assert set(stored["as_is"]["b"].metadata or {}) == REASON | {"t", "row_error"}


# -- the rule, without a database ----------------------------------------------------------------------


def failed(position: int, row_id: str) -> BatchFailure:
    return BatchFailure(ids=(row_id,), positions=(position,), error="no", error_type="Rejected", attempts=2)


def test_every_name_of_the_row_comes_back_even_one_that_looks_prefixed() -> None:
    row = {"id": 7, "values": [1.0], "error": "e", "row_error": "r", "row_row_attempts": 1, "retryable": True}
    (letter,) = dead_letters([row], [failed(0, "7")])
    assert set(letter) == set(REASON_FIELDS) | {
        "values",
        "row_error",
        "row_row_error",
        "row_row_row_attempts",
    } | {"row_retryable"}
    assert rows_from_letters(letter) == row  # one letter, one row: a Beam element
    table = pa.Table.from_pylist([row])
    letters = dead_letters(table, [failed(0, "7")])
    assert rows_from_letters(letters).equals(table)
    assert rows_from_letters(letters.to_batches()[0]).equals(table.to_batches()[0])
    assert rows_from_letters(letters.to_pandas()).equals(table.to_pandas())


def test_with_another_id_column_the_letters_id_is_the_reports_and_goes() -> None:
    row = {"key": 7, "id": "mine", "values": [1.0]}
    spec = ColumnSpec(id_column="key")
    (letter,) = dead_letters([row], [failed(0, "7")], spec)
    assert letter["id"] == "7" and letter["row_id"] == "mine"
    assert rows_from_letters([letter], id_column="key") == [row]
    assert rows_from_letters([letter], id_column=None) == [row]  # ids made from id_from: the same rule
    with pytest.raises(ConfigError, match=r"letter 0: .*'id' and 'row_id'.*option id_column"):
        rows_from_letters([letter])  # as if the id column were 'id': two columns for the row's 'id'


def test_a_letter_without_its_row_gives_its_id_alone() -> None:
    (letter,) = dead_letters([], [failed(0, "7")])  # the input read again had no rows left
    assert rows_from_letters(letter) == {"id": "7"}
    assert rows_from_letters(letter, id_column="key") == {}
