"""``vectordb-beam``'s summary showed the first five failure reasons and said nothing of a sixth; now a
line says how many rows and reasons it leaves out. A JSON Lines line escaping a lone surrogate
(``"\\ud800"``, which JSON allows) was a letter "the line is not JSON: no low surrogate in string" with
id null; now the row is read (with the stdlib's ``json``, as orjson refuses it) and fails alone, with its
id, for its text, as in Python."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main

V = [0.5, 0.25, 1.0, 2.0]


def letters_in(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for f in folder.glob("dead-letters-*.jsonl") for line in f.read_text().splitlines()
    ]


def test_the_summary_says_how_many_reasons_it_leaves_out(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grpc_server.script(dimension=4)
    source = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"g{i}", "values": V}) for i in range(10)]
    lines += [json.dumps({"id": f"short{i}", "values": [1.0, 2.0]}) for i in range(2)]  # 2 rows, 1 reason
    lines += [
        json.dumps({"id": None, "values": V}),
        json.dumps({"id": 1.5, "values": V}),
        json.dumps({"id": True, "values": V}),
        json.dumps({"id": "nan", "values": [float("nan"), 1.0, 1.0, 1.0]}),
        json.dumps({"id": "", "values": V}),
        "{not json",
    ]
    source.write_text("\n".join(lines) + "\n")
    dead = tmp_path / "dead"
    argv = [f"--input={source}", f"--uri={grpc_server.uri}", "--no_create", f"--dead_letters={dead}"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "written:  10 of 18 rows (8 failed)" in out
    failed = [line for line in out.splitlines() if line.startswith("failed:   ")]
    assert len(failed) == 6 and failed[0].startswith("failed:   2 x ")
    assert failed[5] == "failed:   2 more rows, for 2 more reasons: see the dead letters"
    assert len(letters_in(dead)) == 8


def test_a_line_escaping_a_lone_surrogate_fails_alone_with_its_id(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grpc_server.script(dimension=4)
    source = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"g{i}", "values": V}) for i in range(5)]
    lines.append('{"id": "doc-5", "values": [1.0, 2.0, 3.0, 4.0], "title": "lone \\ud800 surrogate"}')
    source.write_text("\n".join(lines) + "\n")
    dead = tmp_path / "dead"
    argv = [f"--input={source}", f"--uri={grpc_server.uri}", "--no_create", f"--dead_letters={dead}"]
    assert main(argv) == 1
    assert "written:  5 of 6 rows (1 failed)" in capsys.readouterr().out
    assert grpc_server.arrived().ids() == {f"g{i}" for i in range(5)}
    (letter,) = letters_in(dead)
    assert letter["id"] == "doc-5"
    assert letter["error"].startswith("metadata 'title'") and "surrogates not allowed" in letter["error"]
    assert letter["title"] == "lone \ud800 surrogate"  # the line's text, read back as it was
