"""``vectordb-beam`` as a new user meets it: a JSON Lines line that is not UTF-8 fails alone (it stopped
the whole job with Beam's trace of a UnicodeDecodeError); a line that is not JSON names its file, not
orjson's "line 1" of the line itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main, read_totals
from vectordb.beam.sink import COUNTERS


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


def test_on_error_report_prints_the_first_reasons_and_how_to_keep_the_rows(
    rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It counted the failed rows, printed no reason and said nowhere which flag keeps them."""
    rest_server.script(dimension=4)
    source = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"g{i}", "values": [0.5, 0.25, 1.0, float(i)]}) for i in range(30)]
    lines += [json.dumps({"id": f"short{i}", "values": [1.0, 2.0]}) for i in range(3)]
    source.write_text("\n".join([*lines, "{not json"]) + "\n")
    argv = [f"--input={source}", f"--uri={rest_server.uri}", "--no_create", "--option=on_error=report"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "written:  30 of 34 rows (4 failed)" in captured.out
    failed = [line for line in captured.out.splitlines() if line.startswith("failed:   ")]
    assert len(failed) == 2 and failed[0].startswith("failed:   3 x ") and "short" not in failed[1]
    assert failed[1] == (
        f"failed:   1 x Invalid: file {source}: the line is not JSON: unexpected character, expected a "
        "string key: column 2 (char 1)"
    )
    assert captured.err.splitlines()[-1] == (
        "vectordb-beam: 4 rows failed and no dead letters keep them. Give --dead_letters DIR to keep the "
        "failed rows, with their reasons, in DIR/dead-letters-*.jsonl."
    )


def test_with_dead_letters_the_summary_names_them_and_gives_no_hint(
    rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rest_server.script(dimension=4)
    source = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"g{i}", "values": [0.5, 0.25, 1.0, float(i)]}) for i in range(5)]
    source.write_text("\n".join([*lines, json.dumps({"id": "short", "values": [1.0]})]) + "\n")
    dead = tmp_path / "dead"
    argv = [f"--input={source}", f"--uri={rest_server.uri}", "--no_create", f"--dead_letters={dead}"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "written:  5 of 6 rows (1 failed)" in captured.out and "dead letters: 1 file" in captured.out
    assert "failed:   1 x " in captured.out and "--dead_letters" not in captured.err


def test_the_reasons_say_which_failed_rows_were_deletes(tmp_path: Path) -> None:
    """A letter does not say its op: the reports' failures name the deletes among the letters' rows."""
    counts = [0] * len(COUNTERS)
    saved = [
        {"counts": counts, "reasons": [["Rejected", "boom", "delete", 2]]},  # a report's
        {"counts": [*counts[:1], 3, *counts[2:]], "reasons": [["Rejected", "boom", "", 3]]},  # letters'
        {"counts": [*counts[:1], 1, *counts[2:]], "reasons": [["Invalid", "no vector", "", 1]]},
    ]
    for i, content in enumerate(saved):
        (tmp_path / f"totals-{i}.json").write_text(json.dumps(content))
    found = read_totals(str(tmp_path))
    assert found is not None
    totals, reasons = found
    assert totals["failed"] == 4
    assert reasons == [("Rejected (delete): boom", 2), ("Rejected: boom", 1), ("Invalid: no vector", 1)]
