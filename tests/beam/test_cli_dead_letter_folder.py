"""``vectordb-beam`` refuses a dead-letter folder that already holds letters (an earlier run's), naming the
files: the summary listed every ``dead-letters*.jsonl`` in the folder as this run's, and an earlier run's
shards that this run does not overwrite (another shard count: Dataflow's) stayed there among its letters."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main

STALE = {"id": "old-bad", "error": "vector has 2 dimensions; expected 4"}


def write_input(path: Path) -> None:
    rows = [{"id": f"g{i}", "values": [0.5, 0.25, 1.0, float(i + 1)]} for i in range(5)]
    rows.append({"id": "new-bad", "values": [1.0]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("how", ["flag", "options"])
def test_a_folder_holding_an_earlier_runs_letters_is_refused_naming_them(
    how: str, rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rest_server.script(dimension=4)
    dead = tmp_path / "dead"
    dead.mkdir()
    stale = dead / "dead-letters-00001-of-00002.jsonl"
    stale.write_text(json.dumps(STALE) + "\n")
    source = tmp_path / "in.jsonl"
    write_input(source)
    flags = {
        "flag": [f"--dead_letters={dead}"],
        "options": ["--option=on_error=dead_letter", f"--option=dead_letter_path={dead}"],
    }[how]
    assert main([f"--input={source}", f"--uri={rest_server.uri}", "--no_create", *flags]) == 2
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    named = "--dead_letters" if how == "flag" else "option dead_letter_path"
    assert line.startswith(
        f"vectordb-beam: ConfigError: {named} {dead}: it holds dead letters of an earlier run"
    )
    assert str(stale) in line and "move them away" in line
    assert "writing" not in out and rest_server.arrived().requests == []
    assert [p.name for p in dead.iterdir()] == [stale.name] and stale.read_text() == json.dumps(STALE) + "\n"


def test_the_empty_file_of_a_run_without_letters_is_no_reason_to_refuse(
    rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose rows all landed leaves an empty shard: it names no row, so the next run goes ahead and
    lists only its own letters."""
    rest_server.script(dimension=4)
    dead = tmp_path / "dead"
    dead.mkdir()
    (dead / "dead-letters-00001-of-00002.jsonl").write_text("")
    source = tmp_path / "in.jsonl"
    write_input(source)
    argv = [f"--input={source}", f"--uri={rest_server.uri}", "--no_create", f"--dead_letters={dead}"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    (mine,) = (path for path in dead.iterdir() if path.name != "dead-letters-00001-of-00002.jsonl")
    assert re.fullmatch(r"dead-letters-\d{8}T\d{6}Z-[0-9a-f]{8}-00000-of-00001\.jsonl", mine.name)
    assert f"dead letters: 1 file, e.g. {mine}" in out
    letters = [json.loads(line) for line in mine.read_text().splitlines()]
    assert [letter["id"] for letter in letters] == ["new-bad"]
