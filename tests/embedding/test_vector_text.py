"""With the embedding stage on, a dense vector column of JSON text (a CSV's, or Spark's string column) is
read strictly, by the Arrow rows' own reader: a row whose text is no JSON list of numbers fails alone,
with the reason a write without the stage gives it, and its letter keeps the text; a null, empty or
blank text is no vector, and the row's text is embedded. Before, the stage refused the column whole
(a ``ConfigError``), and vectordb-load parsed it with Spark's lenient ``from_json``, which stored
``'[1,2,3,4] [5]'`` cut short and made other text null, so its row was embedded from its text instead."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.embedding.fixtures import EMBED_MODEL, embedding_options, expected_vectors
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect

OWN = [round(0.01 * k, 2) for k in range(64)]
VECTOR_TEXTS = {
    "own": json.dumps(OWN),
    "cut": "[1,2,3,4] [5]",  # from_json read the first list and dropped the rest
    "words": "not a vector",  # from_json made it null: the row was embedded from its text
    "null-item": "[1, null, 3]",
    "null": None,
    "empty": "",
    "blank": "  ",
    "empty-list": " [ ] ",
}
BAD = ("cut", "words", "null-item")


def vector_text_table(vector_type: pa.DataType) -> pa.Table:
    ids = list(VECTOR_TEXTS)
    return pa.table(
        {
            "id": ids,
            "text": [f"the text of row {i}" for i in ids],
            "values": pa.array(list(VECTOR_TEXTS.values()), type=vector_type),
        }
    )


def failures(report: Any) -> dict[str, tuple[str, str]]:
    return {i: (f.error_type, f.error) for f in report.failures for i in f.ids}


def reference_failures(uri: str, table: pa.Table) -> dict[str, tuple[str, str]]:
    """The bad rows' reasons from a write without the stage: the Arrow reader's own."""
    with connect(uri, dimension=64, on_error="report") as client:
        return failures(client.upsert(table.filter(pa.array([i in BAD for i in table["id"].to_pylist()]))))


@pytest.mark.parametrize("vector_type", [pa.string(), pa.large_string()], ids=str)
def test_a_text_vector_column_is_read_strictly_and_a_bad_row_fails_alone_keeping_its_text(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle, vector_type: pa.DataType
) -> None:
    table = vector_text_table(vector_type)
    options = embedding_options(embeddings_server, on_error="report")
    with connect(pinecone.uri, dimension=64, **options) as client:
        report = client.upsert(table)
        letters = client.dead_letters(table, report).to_pylist()
    failed = failures(report)
    assert failed == {
        "cut": ("Invalid", "column 'values': vector text is not a JSON list of numbers: '[1,2,3,4] [5]'"),
        "words": ("Invalid", "column 'values': vector text is not a JSON list of numbers: 'not a vector'"),
        "null-item": (
            "Invalid",
            "column 'values': vector text is not a JSON list of numbers: '[1, null, 3]'",
        ),
    }
    assert failed == reference_failures(pinecone.uri, table)
    assert {row["id"]: row["values"] for row in letters} == {i: VECTOR_TEXTS[i] for i in BAD}
    # the bad rows' texts were not embedded either: only the three rows without a vector
    assert (report.written, report.embedded) == (5, 4), report
    assert_arrived(pinecone)


def assert_arrived(pinecone: ServerHandle) -> None:
    arrived = pinecone.arrived()
    assert arrived.ids() == {"own", "null", "empty", "blank", "empty-list"}
    np.testing.assert_array_equal(arrived.vector("own").values, np.asarray(OWN, dtype=np.float32))
    embedded = ["null", "empty", "blank", "empty-list"]
    expected = expected_vectors([f"the text of row {i}" for i in embedded], model=EMBED_MODEL)
    for k, i in enumerate(embedded):
        np.testing.assert_array_equal(arrived.vector(i).values, expected[k])


def test_dict_rows_take_vector_text_as_arrow_rows_do(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    """Blank text and the text of an empty list are no vector in dict rows too: their text is embedded.
    Before, the stage sent only null and empty ones, and the others failed as "null vector"."""
    rows = vector_text_table(pa.string()).to_pylist()
    options = embedding_options(embeddings_server, on_error="report")
    with connect(pinecone.uri, dimension=64, **options) as client:
        report = client.upsert(rows)
    assert set(failures(report)) == set(BAD), report
    assert (report.written, report.embedded) == (5, 4), report
    assert_arrived(pinecone)


def test_the_driver_check_takes_a_text_vector_column() -> None:
    """``check_columns`` on the input's empty schema: the stage hands on lists, which the reader takes."""
    from vectordb.connector.embedding import parse_embed_options
    from vectordb.connector.embedding.stage import EmbeddingStage
    from vectordb.connector.rows import ColumnSpec

    stage = EmbeddingStage(
        parse_embed_options({"url": "http://127.0.0.1:9", "model": "m"}), ColumnSpec(), "text"
    )
    empty = pa.record_batch({name: pa.array([], type=pa.string()) for name in ("id", "text", "values")})
    assert stage.check_schema(empty).schema.field("values").type == pa.list_(pa.float32())
