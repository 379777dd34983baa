"""``WriteToVectorDB``'s dead letters, whatever failed: an element read and refused, a row the client
refused, an Arrow row; and elements the sink does not take at all. Each letter is the core's form
(the reason, then the row's columns, a column named like a reason field kept with a ``row_`` prefix),
keyed by text and ready for ``json.dumps``."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from typing import Any

import numpy as np
import pyarrow as pa

from tests.servers.fixtures import ServerHandle

from .conftest import FAILED, counters, run_sink

DIM = 4


def run(server: ServerHandle, elements: list[Any], **options: Any) -> dict[str, int]:
    FAILED.clear()
    return counters(run_sink(server.uri, elements, api_key="k", **options))


def vector(i: float) -> np.ndarray:
    return np.full(DIM, i, dtype=np.float32)


def test_a_refused_elements_letter_keeps_its_own_columns_beside_the_reason(grpc_server: ServerHandle) -> None:
    element = {"doc_id": "r2", "id": "mine", "error": "my own", "attempts": 5, "values": "not-a-vector"}
    got = run(grpc_server, [element, {"doc_id": "ok", "values": vector(1)}], id_column="doc_id")
    (letter,) = FAILED
    assert letter == {
        "id": "r2",
        "error": "column 'values': vector text is not a JSON list of numbers: 'not-a-vector'",
        "error_type": "Invalid",
        "retryable": False,
        "attempts": 0,
        "doc_id": "r2",
        "row_id": "mine",
        "row_error": "my own",
        "row_attempts": 5,
        "values": "not-a-vector",
    }
    assert (got["written"], got["failed"]) == (1, 1)


def test_an_element_with_a_key_that_is_not_text_is_a_dead_letter(grpc_server: ServerHandle) -> None:
    got = run(
        grpc_server,
        [{"id": "bad", "values": "not a vector", 7: "an int key"}, {"id": "ok", "values": vector(1)}],
    )
    (letter,) = FAILED
    assert letter["id"] == "bad" and letter["7"] == "an int key" and 7 not in letter
    assert (got["written"], got["failed"]) == (1, 1)


def test_elements_the_sink_does_not_take_are_dead_letters_that_say_what_they_were(
    grpc_server: ServerHandle,
) -> None:
    got = run(grpc_server, ["just text", None, 3.5, {"id": "ok", "values": vector(1)}])
    assert grpc_server.arrived().ids() == {"ok"}
    assert sorted(letter["element"] for letter in FAILED) == ["'just text'", "3.5", "None"]
    for letter in FAILED:
        assert letter["id"] is None and letter["error_type"] == "Invalid"
        assert "WriteToVectorDB takes dicts, beam.Rows" in letter["error"]
    assert (got["written"], got["failed"]) == (1, 3)


def test_every_letter_is_ready_for_json_dumps(grpc_server: ServerHandle) -> None:
    """Dates and times in ISO 8601; Decimal and UUID as their text, as the dead-letter files have them:
    for a row refused at reading, one the client refused, and an Arrow row. (Bytes stay bytes, the row's
    own: tests/spark/test_dead_letters.py.)"""
    when = dt.datetime(2024, 1, 2, 3, 4, 5)
    nan = np.array([np.nan, 1, 2, 3], dtype=np.float32)
    arrow = pa.table(
        {
            "id": ["a1", "a2"],
            "values": pa.array([[1.0] * DIM, nan.tolist()], type=pa.list_(pa.float32())),
            "when": [when, when],
            "price": pa.array([decimal.Decimal("2.50")] * 2, type=pa.decimal128(5, 2)),
        }
    )
    elements = [
        {"id": "d1", "values": "bad", "when": when, "u": uuid.UUID(int=5)},
        {"id": "d2", "values": nan, "metadata": {"when": when, "day": when.date()}},
        arrow,
    ]
    run(grpc_server, elements)
    letters = {letter["id"]: json.loads(json.dumps(letter)) for letter in FAILED}
    assert set(letters) == {"d1", "d2", "a2"}
    assert letters["d1"]["when"] == "2024-01-02T03:04:05" and letters["d1"]["u"] == str(uuid.UUID(int=5))
    assert letters["d2"]["metadata"] == {"when": "2024-01-02T03:04:05", "day": "2024-01-02"}
    assert letters["a2"]["when"] == "2024-01-02T03:04:05" and letters["a2"]["price"] == "2.50"


def test_a_letter_holding_bytes_takes_json_dumps_with_default_str_as_the_readme_writes_it(
    grpc_server: ServerHandle,
) -> None:
    """Binary metadata fails alone and its letter keeps the bytes: the README's ``json.dumps`` step
    (which failed the pipeline on them) takes ``default=str``, as the sink's own files are written."""
    run(grpc_server, [{"id": "b", "values": vector(1), "metadata": {"blob": b"\x00\x01"}}])
    (letter,) = FAILED
    assert letter["metadata"] == {"blob": b"\x00\x01"}
    assert json.loads(json.dumps(letter, default=str))["metadata"] == {"blob": "b'\\x00\\x01'"}
