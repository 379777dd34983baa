"""``vectordb-beam`` as a new user meets it: a JSON Lines line that is not UTF-8 fails alone (it stopped
the whole job with Beam's trace of a UnicodeDecodeError); a line that is not JSON names its file, not
orjson's "line 1" of the line itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
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


def spark_folder(folder: Path, fmt: str) -> None:
    """A partitioned folder as Spark leaves it, with a failed job's leftovers and hidden files."""

    def put(relative: str, ids: list[str]) -> None:
        path = folder / f"{relative}.{fmt}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            table = pa.table({"id": ids, "values": [[0.5, 0.25, 1.0, 2.0]] * len(ids)})
            pq.write_table(table, path)
        else:
            path.write_text(
                "".join(json.dumps({"id": i, "values": [0.5, 0.25, 1.0, 2.0]}) + "\n" for i in ids)
            )

    put("lang=en/year=2024/part-00000", [f"en{i}" for i in range(10)])
    put("lang=fr/year=2025/part-00000", [f"fr{i}" for i in range(10)])
    put("lang=fr%20ca/year=__HIVE_DEFAULT_PARTITION__/part-00000", ["ca0"])
    put("_temporary/0/lang=en/year=2024/part-00001", [f"stale{i}" for i in range(5)])
    put("lang=en/year=2024/.hidden", [f"hidden{i}" for i in range(3)])
    put(".spark-staging-1/lang=en/year=2024/part-00002", ["staging"])
    (folder / "_SUCCESS").write_bytes(b"")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_a_folder_is_read_as_spark_reads_it(
    fmt: str, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files under _temporary/, hidden ones and _… names were written, and the partition folders'
    values were not columns."""
    folder = tmp_path / "in"
    spark_folder(folder, fmt)
    argv = [f"--input={folder}", f"--uri={grpc_server.uri}", "--no_create"]
    assert main(argv) == 0
    assert "written:  21 of 21 rows (0 failed)" in capsys.readouterr().out
    arrived = grpc_server.arrived()
    assert arrived.ids() == {*(f"en{i}" for i in range(10)), *(f"fr{i}" for i in range(10)), "ca0"}
    assert arrived.vector("en3").metadata == {"lang": "en", "year": 2024}
    assert arrived.vector("fr0").metadata == {"lang": "fr", "year": 2025}
    assert arrived.vector("ca0").metadata in ({"lang": "fr ca", "year": None}, {"lang": "fr ca"})


def test_files_under_different_partition_columns_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    spark_folder(folder, "parquet")
    (folder / "part-00009.parquet").write_bytes(
        (folder / "lang=en/year=2024/part-00000.parquet").read_bytes()
    )
    assert main([f"--input={folder}", "--uri=./v.db", "--no_create"]) == 2
    err = capsys.readouterr().err
    assert f"different partition columns: none ({folder}/part-00009.parquet) and lang/year " in err
    assert f"({folder}/lang=en/year=2024/part-00000.parquet), which Spark refuses too" in err
