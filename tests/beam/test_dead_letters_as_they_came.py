"""``WriteToVectorDB``'s letters for elements hold each element as it came, plus the reason: its own keys
(not the client's ``vectors``/``multi_vectors``/``metadata``), its floats as given (not widened from
float32), a null as null. So a letter, fixed, goes back through the same transform and is written;
letters refused at reading and letters of rows the client refused have one shape; and they hold the
columns the core's letters hold for the same rows as an Arrow table (Spark's tasks' letters)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.dead_letters import REASON_FIELDS
from vectordb.connector.ids import ORIGINAL_ID_KEY
from vectordb.connector.transports.base import forget_shared

from .conftest import FAILED, counters, run_sink

NAMED = {
    "vector_columns": "title:title_vec",
    "multi_vector_columns": "colbert:tokens",
    "vector_dimensions": "title:2,colbert:2",
}


@pytest.fixture
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _row(letter: dict[str, Any]) -> dict[str, Any]:
    """The row a letter holds: the letter without its reason, the id back under its column."""
    row = {k: v for k, v in letter.items() if k not in REASON_FIELDS}
    return {"id": letter["id"], **row}


def _by_id(letters: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {letter["id"]: letter for letter in letters}


NAMED_ELEMENTS = [
    {"id": "1", "title_vec": [0.3, 0.4], "tokens": [[1.0, 2.0], [3.0, 4.0]], "k": "a"},
    {"id": "2", "title_vec": [0.3, math.nan], "tokens": [[1.0, 2.0]], "k": "b"},  # the client refuses NaN
    {"id": "3", "title_vec": "[0.1, oops]", "tokens": [[1.0, 2.0]], "k": "c"},  # refused at reading
    {"id": "4", "title_vec": [0.3, 0.4], "tokens": [[1.0, 2.0], [3.0]], "k": "d"},  # the client refuses it
    {"id": "5", "title_vec": [0.5, None], "tokens": [[5.0, 6.0]], "k": "e"},  # a null element
]


@pytest.mark.parametrize("batching", ["bounded", "unbounded"])  # unbounded: elements travel pickled
def test_named_vector_letters_are_the_elements_as_they_came_and_fixed_they_are_written(
    qdrant: QdrantServer, batching: str
) -> None:
    uri = qdrant.uri("rest", "named")
    FAILED.clear()
    got = counters(
        run_sink(uri, NAMED_ELEMENTS, create=True, batching=batching, max_buffering_s=0.5, **NAMED)
    )
    letters = _by_id([json.loads(json.dumps(letter)) for letter in FAILED])  # as a .jsonl file holds them
    assert sorted(letters) == ["2", "3", "4", "5"] and (got["written"], got["failed"]) == (1, 4)
    for element in NAMED_ELEMENTS[1:]:
        letter = letters[str(element["id"])]
        assert list(letter)[: len(REASON_FIELDS)] == list(REASON_FIELDS)
        assert repr(_row(letter)) == repr(json.loads(json.dumps(element))), letter  # 0.3 as 0.3, NaN, None

    fixed = [_row(letter) for letter in letters.values()]
    for row in fixed:  # the user's fixes, made in the element's own keys
        title = row["title_vec"]
        row["title_vec"] = (
            [0.0 if v is None or v != v else v for v in title] if type(title) is list else [0.1, 0.2]
        )
        row["tokens"] = [[1.0, 2.0]]
    FAILED.clear()
    got = counters(run_sink(uri, fixed, **NAMED))
    assert FAILED == [] and got["written"] == 4
    points = qdrant.client().scroll("named", with_vectors=True, with_payload=True, limit=20)[0]
    stored = {p.payload[ORIGINAL_ID_KEY]: p.vector["title"] for p in points}
    assert sorted(stored) == ["1", "2", "3", "4", "5"]
    assert stored["5"] == pytest.approx([0.5, 0.0]) and stored["2"] == pytest.approx([0.3, 0.0])


SINGLE_ELEMENTS = [
    {"doc": "s1", "embedding": [0.1, 0.2, 0.3, 0.4], "note": "x", "n": 1},
    {"doc": "s2", "embedding": [0.1, math.nan, 0.3, 0.4], "note": "y", "n": 2},  # the client refuses NaN
    {"doc": "s3", "embedding": [0.1, 0.2, 0.3], "note": "z", "n": 3},  # the client refuses its length
    {"doc": "s4", "embedding": "oops", "note": "w", "n": 4},  # refused at reading
]


def test_single_vector_letters_are_the_elements_and_hold_the_columns_of_the_cores_arrow_letters(
    grpc_server: ServerHandle,
) -> None:
    options = {"id_column": "doc", "vector_column": "embedding", "dimension": 4}
    FAILED.clear()
    run_sink(grpc_server.uri, SINGLE_ELEMENTS, api_key="k", **options)
    letters = _by_id(FAILED)
    assert sorted(letters) == ["s2", "s3", "s4"]
    for element in SINGLE_ELEMENTS[1:]:
        letter = letters[element["doc"]]
        assert repr({k: v for k, v in letter.items() if k not in REASON_FIELDS}) == repr(element), letter
    # the same rows as Arrow, as a Spark task hands them to the core's dead letters
    table = pa.Table.from_pylist(
        [
            dict(e, embedding=None if isinstance(e["embedding"], str) else e["embedding"])
            for e in SINGLE_ELEMENTS
        ]
    )
    with connect(grpc_server.uri, api_key="k", on_error="report", **options) as client:
        arrow_letters = client.dead_letters(table, client.write(table))
    assert isinstance(arrow_letters, pa.Table)
    for letter in arrow_letters.to_pylist():
        assert list(letter) == list(letters[letter["id"]]), (letter, letters[letter["id"]])


def test_the_clis_dead_letter_file_holds_one_shape(qdrant: QdrantServer, tmp_path: Path) -> None:
    """vectordb-beam: a line refused at reading and lines the client refused give letters of one shape,
    each the line's own object and the reason."""
    lines = [
        {"id": "1", "title_vec": [0.1, 0.2], "tokens": [[1.0, 2.0], [3.0, 4.0]], "k": "a"},
        {"id": "2", "title_vec": "[0.1, oops]", "tokens": [[1.0, 2.0]], "k": "b"},  # refused at reading
        {
            "id": "3",
            "title_vec": [0.3, 0.4],
            "tokens": [[1.0, 2.0], [3.0]],
            "k": "c",
        },  # the client refuses it
        {"id": "4", "title_vec": [0.5, 0.6], "tokens": [[5.0, 6.0]], "k": "d"},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    options = [f"{k}={v}" for k, v in {**NAMED, "on_error": "dead_letter"}.items()]
    command = [str(Path(sys.executable).with_name("vectordb-beam")), "--input", str(source)]
    command += ["--uri", qdrant.uri("rest", "cli"), "--dead_letters", str(tmp_path / "letters")]
    command += [part for option in options for part in ("--option", option)]
    subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    files = sorted((tmp_path / "letters").rglob("*.jsonl"))
    letters = [json.loads(line) for path in files for line in path.read_text().splitlines()]
    assert sorted(letter["id"] for letter in letters) == ["2", "3"], files
    for letter in letters:
        assert _row(letter) == lines[int(letter["id"]) - 1], letter
