"""README: "A dead letter holds the element as it came" and "Fixed and written again, a row stores what it
would have stored the first time". An Arrow element's row whose text is not UTF-8 (a Latin-1 byte) had
its letter hold made-up text (``'caf\\xe9'``, 7 characters) on ``failed``, and the ``dead_letter_path``
files wrote bytes as their Python literal (``"b'caf\\\\xe9'"``); fixed and written again, that text was
stored. Now ``failed`` holds the row's bytes, the files hold them as base64 and say so (``bytes_as``), and
``rows_from_letters`` gives the bytes back: written again, the row fails again and nothing stored changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam import WriteToVectorDB
from vectordb.connector import rows_from_letters
from vectordb.connector.transports.base import forget_shared

from .conftest import FAILED, run_sink

LATIN1 = b"caf\xe9"
BINARY_ID = bytes(range(16))  # a UUID's 16 bytes: the row's id


@pytest.fixture
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def latin1_batch(second: list[float]) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "values": pa.array([[1.0, 2.0, 3.0], second, [7.0, 8.0, 9.0]], pa.list_(pa.float32())),
            "title": pa.array([b"one", LATIN1, b"three"], pa.binary()).view(pa.string()),
        }
    )


def stored(server: QdrantServer, collection: str) -> dict[int, Any]:
    client = server.client()
    try:
        points, _ = client.scroll(collection, limit=100, with_payload=True, with_vectors=True)
        return {p.id: (p.payload, p.vector) for p in points}
    finally:
        client.close()


def test_failed_holds_the_bytes_and_the_row_written_again_fails_again(qdrant: QdrantServer) -> None:
    uri = qdrant.grpc_uri("latin1")
    FAILED.clear()
    run_sink(uri, [latin1_batch([float("nan"), 2.0, 3.0])], dimension=3, create=True)
    (letter,) = FAILED
    assert (letter["id"], letter["title"]) == (2, LATIN1)  # the row's own bytes, not the text '\\xe9'
    before = stored(qdrant, "latin1")
    assert sorted(before) == [1, 3]

    FAILED.clear()
    run_sink(uri, [rows_from_letters({**letter, "values": [4.0, 5.0, 6.0]})], dimension=3)
    (again,) = FAILED
    assert (again["id"], again["title"]) == (2, LATIN1)
    assert "'title'" in again["error"]
    assert stored(qdrant, "latin1") == before


def write_letters(uri: str, elements: list[Any], folder: Path) -> list[dict[str, Any]]:
    """``elements`` through the sink with ``on_error="dead_letter"``; the lines of its letter files."""
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = (
            pipeline
            | beam.Create(elements, reshuffle=False)
            | WriteToVectorDB(
                uri, on_error="dead_letter", dead_letter_path=str(folder), dimension=3, create=True
            )
        )
    return [
        json.loads(line) for f in sorted(folder.glob("dead-letters*")) for line in f.read_text().splitlines()
    ]


def test_letter_files_keep_bytes_as_base64_saying_so_and_give_them_back(
    qdrant: QdrantServer, tmp_path: Path
) -> None:
    uri = qdrant.grpc_uri("files")
    elements = [
        latin1_batch([float("nan"), 2.0, 3.0]),
        {"id": BINARY_ID, "values": [1.0, 2.0], "tag": "x"},  # a wrong dimension
    ]
    letters = sorted(write_letters(uri, elements, tmp_path / "dead1"), key=lambda letter: str(letter["id"]))
    assert [letter["bytes_as"] for letter in letters] == ["base64", "base64"]
    assert list(letters[0])[:6] == ["id", "error", "error_type", "retryable", "attempts", "bytes_as"]
    assert letters[0]["title"] == {"base64": "Y2Fm6Q=="}
    rows = [rows_from_letters(letter) for letter in letters]
    assert rows[0] == {"id": 2, "values": [None, 2.0, 3.0], "title": LATIN1}  # NaN as JSON writes it: null
    assert rows[1] == {"id": BINARY_ID, "values": [1.0, 2.0], "tag": "x"}
    before = stored(qdrant, "files")

    fixed = [{**rows[0], "values": [4.0, 5.0, 6.0]}, {**rows[1], "values": [1.0, 2.0, 3.0]}]
    again = write_letters(uri, fixed, tmp_path / "dead2")
    assert [(rows_from_letters(letter)["id"], "'title'" in letter["error"]) for letter in again] == [
        (2, True)
    ]
    after = stored(qdrant, "files")
    assert {k: v for k, v in after.items() if k in before} == before
    (new,) = set(after) - set(before)  # the binary id's row, under the UUID its 16 bytes are
    assert str(new) == "00010203-0405-0607-0809-0a0b0c0d0e0f"
