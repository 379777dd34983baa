"""``vectordb-beam`` as a new user meets it: a JSON Lines line that is not UTF-8 fails alone (it stopped
the whole job with Beam's trace of a UnicodeDecodeError); a line that is not JSON names its file, not
orjson's "line 1" of the line itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main


def letters_in(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for f in folder.glob("dead-letters-*.jsonl") for line in f.read_text().splitlines()
    ]


def test_a_line_that_is_not_utf8_fails_alone_naming_its_file(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "latin1.jsonl"
    with source.open("wb") as f:
        for i in range(20):
            title = "café".encode("latin-1") if i == 3 else f"doc {i}".encode()
            f.write(b'{"id": "l%d", "values": [1.0, 2.0, 3.0, 4.0], "title": "' % i + title + b'"}\n')
    dead = tmp_path / "dead"
    argv = [f"--input={source}", f"--uri={grpc_server.uri}", f"--dead_letters={dead}", "--no_create"]
    assert main(argv) == 1
    assert "written:  19 of 20 rows (1 failed)" in capsys.readouterr().out
    assert grpc_server.arrived().ids() == {f"l{i}" for i in range(20) if i != 3}
    (letter,) = letters_in(dead)
    assert letter["id"] is None and letter["file"].endswith("latin1.jsonl")
    assert letter["error"].startswith(f"file {letter['file']}: the line is not valid UTF-8: ")
    assert '"title": "caf\\xe9"' in letter["line"]


def test_a_line_that_is_not_json_names_its_file_not_orjsons_line_1(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "rows.jsonl"
    lines = [json.dumps({"id": f"j{i}", "values": [1.0] * 4}) for i in range(10)]
    source.write_text("\n".join([*lines, "{not json"]) + "\n")
    dead = tmp_path / "dead"
    argv = [f"--input={source}", f"--uri={grpc_server.uri}", f"--dead_letters={dead}", "--no_create"]
    assert main(argv) == 1
    assert "written:  10 of 11 rows (1 failed)" in capsys.readouterr().out
    (letter,) = letters_in(dead)
    assert letter["file"].endswith("rows.jsonl") and letter["line"] == "{not json"
    assert letter["error"] == (
        f"file {letter['file']}: the line is not JSON: unexpected character, expected a string key: "
        "column 2 (char 1)"
    )
