"""A JSON Lines file with one Latin-1 byte in one title: Spark's JSON reader takes that line for a
corrupt record (``id`` and ``values`` parsed, ``title`` null) and hands the sink the line's bytes as they
are in ``_corrupt_record``, an Arrow string column. That row fails, naming the column, and the other 19
are written, through ``df.write.format("vectordb")`` (report and dead letters) and ``vectordb-load``; the
whole job stopped with a bare ``UnicodeDecodeError`` before. (Spark's CSV reader decodes the byte as
U+FFFD itself, so a CSV file's row is written.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.spark.load import main

BAD = 3
REASON = "column '_corrupt_record': text is not valid UTF-8"


def latin1_jsonl(directory: Path) -> Path:
    """20 rows, the title of row ``BAD`` "café" in Latin-1."""
    path = directory / "in.jsonl"
    with path.open("w", encoding="latin-1") as f:
        for i in range(20):
            title = "café" if i == BAD else f"doc {i}"
            f.write(f'{{"id": "l{i}", "values": [1.0, 2.0, 3.0, 4.0], "title": "{title}"}}\n')
    return path


def read_report(directory: Path) -> dict[str, Any]:
    (file,) = directory.glob("job-*.json")
    report: dict[str, Any] = json.loads(file.read_text())
    return report


def stored(server: ServerHandle) -> set[str]:
    return {vid for (_, vid) in server.arrived().final}


def good_ids() -> set[str]:
    return {f"l{i}" for i in range(20) if i != BAD}


def test_spark_on_error_report(spark: Any, grpc_server: ServerHandle, tmp_path: Path) -> None:
    (
        spark.read.json(str(latin1_jsonl(tmp_path)))
        .write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("dimension", "4")
        .option("on_error", "report")
        .option("report_path", str(tmp_path / "reports"))
        .mode("append")
        .save()
    )
    report = read_report(tmp_path / "reports")
    assert (report["written"], report["failed"]) == (19, 1)
    assert report["failed_ids_sample"] == [f"l{BAD}"]
    assert REASON in report["reasons"][0][0]
    assert stored(grpc_server) == good_ids()


def test_spark_dead_letters_hold_the_row(spark: Any, grpc_server: ServerHandle, tmp_path: Path) -> None:
    dead = tmp_path / "dead"
    (
        spark.read.json(str(latin1_jsonl(tmp_path)))
        .write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("dimension", "4")
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(dead))
        .mode("append")
        .save()
    )
    letters = pq.read_table(dead)
    (held,) = letters.column("_corrupt_record").cast(pa.binary()).to_pylist()  # the bytes as they came
    assert "café".encode("latin-1") in held
    (letter,) = letters.drop_columns(["_corrupt_record"]).to_pylist()
    assert letter["id"] == f"l{BAD}"
    assert REASON in letter["error"]
    assert stored(grpc_server) == good_ids()


def test_vectordb_load_on_error_report(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--input", str(latin1_jsonl(tmp_path)), "--uri", grpc_server.uri, "--on-error", "report"]
    assert main(argv) == 1  # rows failed
    out = capsys.readouterr().out
    assert "written:  19 of 20 rows (1 failed)" in out
    assert f"1 x Invalid: {REASON}" in out
    assert stored(grpc_server) == good_ids()
