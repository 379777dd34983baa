"""A dead letter as a line of a ``dead_letter_path`` file (``json_line``) whose row has a key holding a lone
surrogate (``{"\\ud800x": 1}``: a Python string may hold one, UTF-8 cannot). Values holding one were written
as JSON's escape, but a key stopped the write (orjson writes keys itself, as UTF-8: ``TypeError ... surrogates
not allowed``). Now a key is escaped as a value is, at any depth, and ``json.loads`` then ``rows_from_letters``
give the row back with the same key. Letters of the plain client, at the Pinecone REST test server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.servers.fixtures import start_server
from vectordb.connector import connect, rows_from_letters
from vectordb.connector.dead_letters import json_line

KEY = "\ud800x"  # a lone high surrogate, then a letter
REASON = {"id": "r", "error": "e", "error_type": "Invalid", "retryable": False, "attempts": 0}


def test_the_plain_clients_letter_with_a_lone_surrogate_key_is_a_line_read_back_as_it_was(
    tmp_path: Path,
) -> None:
    records = [
        {"id": "good", "values": [1.0, 2.0, 3.0], "metadata": {"k": 1}},
        {"id": "bad", "values": [1.0, 2.0, 3.0], "metadata": {KEY: 1, "nested": {"\udc01": "\udc00v"}}},
    ]
    with start_server("rest") as server, connect(server.uri, api_key="k", on_error="report") as client:
        report = client.upsert(records)
        letters = client.dead_letters(records, report)
        assert [key for _, key in server.arrived().final] == ["good"]
    (letter,) = letters
    assert letter["id"] == "bad" and "cannot be written as JSON" in letter["error"]

    path = tmp_path / "letters.jsonl"
    path.write_text("".join(json_line(letter) + "\n" for letter in letters), encoding="utf-8")
    (line,) = path.read_text(encoding="utf-8").splitlines()
    assert '"\\ud800x":1' in line and '"\\udc01":"\\udc00v"' in line  # JSON's escapes, ASCII on disk
    assert rows_from_letters(json.loads(line)) == records[1]


@pytest.mark.parametrize(
    ("row", "back"),
    [
        ({KEY: "v"}, {KEY: "v"}),  # a column of the row: a key of the letter itself
        ({"m": {"a": {KEY: [1, 2]}}}, {"m": {"a": {KEY: [1, 2]}}}),  # deep in a value
        ({"m": {KEY: "\udfff", "big": 2**70}}, {"m": {KEY: "\udfff", "big": 2**70}}),  # with other escapes
        ({"m": {KEY: b"\xe9"}}, {"m": {KEY: b"\xe9"}}),  # bytes as base64 beside it, given back
        ({"m": {KEY: np.array([1.5, 2.5], np.float32)}}, {"m": {KEY: [1.5, 2.5]}}),  # numpy as orjson has it
        ({"m": {KEY: float("nan")}}, {"m": {KEY: None}}),  # NaN as JSON's null, as orjson writes it
        ({"m": {1: "one", KEY: 2}}, {"m": {"1": "one", KEY: 2}}),  # a key that is not text: its str
    ],
)
def test_a_key_with_a_lone_surrogate_at_any_depth_is_escaped(
    row: dict[str, Any], back: dict[str, Any]
) -> None:
    line = json_line({**REASON, **row})
    assert "\\ud800x" in line and "\n" not in line
    assert rows_from_letters(json.loads(line), id_column=None) == back
