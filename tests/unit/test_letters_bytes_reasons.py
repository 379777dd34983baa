"""A row refused for its bytes is refused again, with the same reason, when its dead letter is written
again, whatever form the letter takes. Letters as dicts (a list of record batches, as Beam's Arrow elements
are read) keep text that is not UTF-8 as the row's own bytes, as they keep a binary column's; written again
as dicts, a Latin-1 title failed as "metadata 'title' is binary; ..." where its first write said
"column 'title': text is not valid UTF-8". One function (``checks._plain``) now decides for a value in
bytes, whatever the row came as: bytes that are not UTF-8 fail as text that is not UTF-8 (a binary column
of them too, with the way out for bytes), bytes that are UTF-8 as binary (Qdrant protocol test server,
gRPC)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect, rows_from_letters

VECTORS = pa.list_(pa.float32())
LATIN1 = b"caf\xe9"
BINARY = (
    "metadata 'title' is binary; no database here stores bytes as metadata: convert the column (base64, hex) "
    "or leave it out (option metadata_columns)"
)
NOT_UTF8 = "column 'title': text is not valid UTF-8"


@pytest.fixture(scope="module")
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as server:
        yield server


def raw_text(values: list[bytes | None]) -> pa.Array:
    """A string column holding ``values``' bytes unchecked, as Spark's JSON and CSV readers hand them over."""
    return pa.array(values, pa.binary()).view(pa.string())


def title_column(kind: str) -> pa.Array:
    if kind == "latin1 text":
        return raw_text([b"one", LATIN1])
    if kind == "latin1 in a struct":
        return pa.StructArray.from_arrays([raw_text([b"one", LATIN1])], ["city"])
    if kind == "binary not utf-8":  # row 1 has none: it is written
        return pa.array([None, b"\x00\xff"], pa.binary())
    return pa.array([None, b"two"], pa.binary())  # "binary utf-8"


def batch_of(kind: str) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "id": pa.array([1, 2], pa.int64()),
            "values": pa.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], VECTORS),
            "title": title_column(kind),
        }
    )


def as_input(form: str, batch: pa.RecordBatch) -> Any:
    return pa.Table.from_batches([batch]) if form == "table" else [batch]


KINDS = {
    "latin1 text": NOT_UTF8,
    "latin1 in a struct": NOT_UTF8,
    "binary not utf-8": NOT_UTF8,
    "binary utf-8": BINARY,
}


@pytest.mark.parametrize("form", ["table", "batches"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_row_refused_for_its_bytes_is_refused_again_from_its_letter_with_the_same_reason(
    qdrant: QdrantServer, form: str, kind: str
) -> None:
    data = as_input(form, batch_of(kind))
    with connect(qdrant.grpc_uri("bytes"), create=True, dimension=3, on_error="report") as client:
        first = client.write(data)
        letters = client.dead_letters(data, first)
        again = client.write(rows_from_letters(letters))
    expected = KINDS[kind]
    for report in (first, again):
        (failure,) = report.failures
        assert failure.ids == ("2",) and failure.error.startswith(expected), report
    if kind == "binary not utf-8":  # a binary column's bytes: the way out is said too
        assert "convert it (base64, hex)" in first.failures[0].error


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (LATIN1, NOT_UTF8),
        ({"city": LATIN1}, NOT_UTF8),  # at any depth the column is named, as Arrow's reader names it
        (["x", bytearray(LATIN1)], NOT_UTF8),
        (b"caf\xc3\xa9", BINARY),
        ([memoryview(b"x")], "metadata 'title'[0] is binary"),
    ],
)
def test_a_dict_rows_bytes_fail_as_the_same_value_in_an_arrow_column_does(
    qdrant: QdrantServer, value: Any, reason: str
) -> None:
    with connect(qdrant.grpc_uri("bytes_dicts"), create=True, dimension=3, on_error="report") as client:
        got = client.write([{"id": 1, "values": [1.0, 2.0, 3.0], "title": value}])
    assert got.written == 0 and got.failures[0].error.startswith(reason), got


@pytest.mark.parametrize("form", ["table", "batches"])
def test_a_namespace_not_utf8_is_refused_again_from_its_letter_with_the_same_reason(
    qdrant: QdrantServer, form: str
) -> None:
    batch = pa.record_batch(
        {
            "id": pa.array([1, 2], pa.int64()),
            "values": pa.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], VECTORS),
            "ns": raw_text([b"a", LATIN1]),
        }
    )
    data = as_input(form, batch)
    options = {"create": True, "dimension": 3, "on_error": "report", "namespace_column": "ns"}
    with connect(qdrant.grpc_uri("bytes_ns"), **options) as client:
        first = client.write(data)
        again = client.write(rows_from_letters(client.dead_letters(data, first)))
    expected = [(("2",), "column 'ns': text is not valid UTF-8")]
    assert [(f.ids, f.error) for f in first.failures] == expected
    assert [(f.ids, f.error) for f in again.failures] == expected
