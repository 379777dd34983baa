"""A multi-vector given as JSON text is read in dict rows as Arrow reads a text column of them (since
3759368): strictly, by ``floats.json_multi_vector``, a text that is no list of lists of numbers failing its
row with an excerpt of it, a blank one no multi-vector. Dict rows refused every such text ("is not a
sequence of vectors of numbers"), so a row stored from a CSV or a JSON file failed from its dicts, or from
a dead letter of it (Qdrant protocol test server, REST)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect

NAMED = {"vector_columns": {"title": "title_vec"}, "multi_vector_columns": {"colbert": "tok"}}
TEXTS = [
    "[[1, 2], [3.5, 4]]",  # written
    " [[0.5, 0.5]] ",  # written: JSON's own surrounding whitespace
    "[[1, 2], [3",  # cut short
    "[1, 2]",  # flat: a single vector, not a multi-vector
    "[[1, 2]] [[3, 4]]",  # trailing text
    '[["1", "2"]]',  # numbers as text
    "[[1, null]]",
    "",  # blank: no multi-vector
]
NOT_JSON = "multi-vector 'colbert' (column 'tok') text is not a JSON list of lists of numbers: "
REASONS = {
    3: NOT_JSON + "'[[1, 2], [3'",
    4: NOT_JSON + "'[1, 2]'",
    5: NOT_JSON + "'[[1, 2]] [[3, 4]]'",
    6: NOT_JSON + '\'[["1", "2"]]\'',
    7: NOT_JSON + "'[[1, null]]'",
    8: "multi-vector 'colbert' is null",
}


@pytest.fixture(scope="module")
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as server:
        yield server


def rows() -> list[dict[str, Any]]:
    return [{"id": i, "title_vec": [0.1, 0.2], "tok": text} for i, text in enumerate(TEXTS, start=1)]


def write(qdrant: QdrantServer, collection: str, data: Any) -> tuple[dict[int, str], dict[int, Any]]:
    with connect(qdrant.uri("rest", collection), create=True, on_error="report", **NAMED) as client:
        report = client.write(data)
    reasons = {int(i): f.error for f in report.failures for i in f.ids}
    client = qdrant.client()
    if not client.collection_exists(collection):  # no row passed: nothing made it
        return reasons, {}
    points = client.scroll(collection, with_vectors=True, limit=20)[0]
    return reasons, {p.id: p.vector["colbert"] for p in points}


def test_multi_vector_text_in_dicts_is_read_as_arrow_reads_it(qdrant: QdrantServer) -> None:
    from_dicts = write(qdrant, "mv_text_dicts", rows())
    from_arrow = write(qdrant, "mv_text_arrow", pa.Table.from_pylist(rows()))
    assert from_dicts == from_arrow
    reasons, stored = from_dicts
    assert reasons == REASONS
    assert stored == {1: [[1.0, 2.0], [3.5, 4.0]], 2: [[0.5, 0.5]]}


def test_bytes_or_a_vectors_text_inside_are_still_no_multi_vector(qdrant: QdrantServer) -> None:
    bad = [
        {"id": 1, "title_vec": [0.1, 0.2], "tok": b"[[1, 2]]"},
        {"id": 2, "title_vec": [0.1, 0.2], "tok": ["[1, 2]"]},
    ]
    reasons, stored = write(qdrant, "mv_text_bad", bad)
    assert reasons == dict.fromkeys(
        (1, 2), "multi-vector 'colbert' (column 'tok') is not a sequence of vectors of numbers"
    )
    assert stored == {}
