"""README: "A dead letter holds the element as it came" and "Fixed and written again, a row stores what it
would have stored the first time". An Arrow row whose text is not UTF-8 (a Latin-1 byte) kept it as its
bytes in letters of a ``Table``, but as made-up text (``'caf\\xe9'``, 7 characters) in letters as dicts
(a list of record batches, as Beam's Arrow elements are read): written again, that text was stored. Now
every form keeps the bytes, so the row written again fails as it did and nothing stored changes.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect, rows_from_letters
from vectordb.connector.rows.text import readable_pylist

VECTORS = pa.list_(pa.float32())
LATIN1 = b"caf\xe9"


def raw_text(values: list[bytes | None]) -> pa.Array:
    """A string column holding ``values``' bytes unchecked, as Spark's JSON and CSV readers hand them over."""
    return pa.array(values, pa.binary()).view(pa.string())


def latin1_batch(second: list[float]) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "values": pa.array([[1.0, 2.0, 3.0], second, [7.0, 8.0, 9.0]], VECTORS),
            "title": raw_text([b"one", LATIN1, b"three"]),
        }
    )


def as_input(form: str, batch: pa.RecordBatch) -> Any:
    if form == "table":
        return pa.Table.from_batches([batch])
    if form == "batches":
        return [batch]
    rows = batch.cast(batch.schema.set(2, pa.field("title", pa.binary()))).to_pylist()
    return [{**row, "title": row["title"].decode() if row["id"] != 2 else row["title"]} for row in rows]


def stored(server: QdrantServer, collection: str) -> dict[int, Any]:
    client = server.client()
    try:
        points, _ = client.scroll(collection, limit=100, with_payload=True, with_vectors=True)
        return {p.id: (p.payload, p.vector) for p in points}
    finally:
        client.close()


def titles(letters: Any) -> list[Any]:
    if isinstance(letters, pa.Table):
        return letters.column("title").cast(pa.binary()).to_pylist()
    return [letter["title"] for letter in letters]


def fixed_vector(letters: Any) -> Any:
    if isinstance(letters, pa.Table):
        return letters.set_column(
            letters.schema.get_field_index("values"), "values", pa.array([[4.0, 5.0, 6.0]], VECTORS)
        )
    return [{**letter, "values": [4.0, 5.0, 6.0]} for letter in letters]


@pytest.mark.parametrize("form", ["table", "batches", "dicts"])
def test_a_latin1_row_written_again_from_its_letter_fails_again_and_stores_nothing(
    qdrant_server: QdrantServer, form: str
) -> None:
    data = as_input(form, latin1_batch([float("nan"), 2.0, 3.0]))
    with connect(qdrant_server.grpc_uri("latin1"), create=True, dimension=3, on_error="report") as client:
        first = client.write(data)
        assert (first.written, first.failed) == (2, 1)
        before = stored(qdrant_server, "latin1")
        letters = client.dead_letters(data, first)
        assert titles(letters) == [LATIN1]  # the row's own bytes, not the text '\\xe9'
        again = client.write(rows_from_letters(fixed_vector(letters)))
    assert (again.written, again.failed) == (0, 1)
    assert "'title'" in again.failures[0].error
    assert stored(qdrant_server, "latin1") == before
    assert sorted(before) == [1, 3]


@pytest.mark.parametrize("form", ["table", "batches"])
def test_a_row_refused_for_its_text_alone_is_refused_again_naming_the_column(
    qdrant_server: QdrantServer, form: str
) -> None:
    data = as_input(form, latin1_batch([4.0, 5.0, 6.0]))
    with connect(qdrant_server.grpc_uri("latin1"), create=True, dimension=3, on_error="report") as client:
        first = client.write(data)
        assert [f.error for f in first.failures] == ["column 'title': text is not valid UTF-8"]
        letters = client.dead_letters(data, first)
        again = client.write(rows_from_letters(letters))
    assert (again.written, again.failed) == (0, 1)
    assert "'title'" in again.failures[0].error
    assert sorted(stored(qdrant_server, "latin1")) == [1, 3]


def test_letters_as_dicts_keep_text_not_utf8_as_its_bytes_at_any_depth() -> None:
    place = pa.StructArray.from_arrays([raw_text([b"Paris", LATIN1])], ["city"])
    tags = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), raw_text([b"x", b"y", LATIN1]))
    batch = pa.record_batch(
        {"id": ["a", "b"], "title": raw_text([b"doc", LATIN1]), "place": place, "tags": tags}
    )
    assert readable_pylist(batch) == [
        {"id": "a", "title": "doc", "place": {"city": "Paris"}, "tags": ["x"]},
        {"id": "b", "title": LATIN1, "place": {"city": LATIN1}, "tags": ["y", LATIN1]},
    ]
    assert readable_pylist(pa.Table.from_batches([batch]).slice(0, 1)) == [
        {"id": "a", "title": "doc", "place": {"city": "Paris"}, "tags": ["x"]}
    ]


def test_a_letter_as_json_text_keeps_its_bytes_saying_so_and_gives_them_back() -> None:
    import json

    from vectordb.connector.dead_letters import json_letter, letter_with_row

    reason = {"id": "a", "error": "e", "error_type": "Invalid", "retryable": False, "attempts": 0}
    row = {"id": "a", "title": LATIN1, "tags": [b"\x00", "x"], "bytes_as": "kept", "doc": {"base64": "x"}}
    letter = letter_with_row(reason, row, "id")
    assert letter["row_bytes_as"] == "kept"  # a row column named like the marker is not taken for it
    line = json.loads(json.dumps(json_letter(letter)))
    assert line["bytes_as"] == "base64"
    assert (line["title"], line["tags"]) == ({"base64": "Y2Fm6Q=="}, [{"base64": "AA=="}, "x"])
    assert line["doc"] == {"dict": {"base64": "x"}}  # the row's own, not read as bytes
    assert rows_from_letters(line) == row
    plain = letter_with_row(reason, {"id": "a", "doc": {"base64": "eA=="}}, "id")
    assert json_letter(plain) == plain  # no bytes: no marker, and nothing read as bytes
    assert rows_from_letters(json.loads(json.dumps(plain))) == {"id": "a", "doc": {"base64": "eA=="}}
