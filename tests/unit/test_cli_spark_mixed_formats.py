"""``vectordb-load`` reads every ``--input`` in one format, so inputs whose names (or folders' files) say
different formats are refused before Spark starts, naming the input that differs and ``--format``: a
Parquet file after a JSON Lines one was read as JSON, and the job died in a task with a
``UnicodeDecodeError`` trace that named neither."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.unit.spark_cli import fake_java, refuse_spark
from vectordb.spark import load

TARGET = ["--uri", "qdrant://localhost:6333/docs"]  # no embedded default: nothing to start


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every refusal here comes before Spark; a Java is there, as the checks need one."""
    refuse_spark(monkeypatch, tmp_path)
    if not (os.environ.get("JAVA_HOME") or load.shutil.which("java")):
        monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path.parent / f"{tmp_path.name}-jdk")))
    (tmp_path / "rows.jsonl").write_text('{"id": "a", "values": [1.0, 2.0]}\n')
    (tmp_path / "more.json").write_text('{"id": "b", "values": [1.0, 2.0]}\n')
    (tmp_path / "rows.txt").write_text('{"id": "c", "values": [1.0, 2.0]}\n')
    pq.write_table(pa.table({"id": ["d"], "values": [[1.0, 2.0]]}), tmp_path / "good.parquet")
    (tmp_path / "parquet_folder").mkdir()
    pq.write_table(pa.table({"id": ["e"], "values": [[1.0, 2.0]]}), tmp_path / "parquet_folder" / "p.parquet")


def test_a_parquet_file_after_a_json_lines_one_is_refused_naming_it_and_format(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert load.main(["--input", "rows.jsonl", "good.parquet", *TARGET]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "vectordb-load: ConfigError: --input 'good.parquet' is parquet, but 'rows.jsonl' is json: a job "
        "reads one format (--format), so load each format in a run of its own (--debug shows the trace)"
    ]


def test_a_folder_of_parquet_files_after_a_json_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert load.main(["--input", "more.json", "parquet_folder", *TARGET]) == 2
    err = capsys.readouterr().err
    assert "--input 'parquet_folder': 'parquet_folder/p.parquet' is parquet, but 'more.json' is json" in err


def test_an_input_whose_name_contradicts_format_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert load.main(["--input", "rows.txt", "good.parquet", "--format", "json", *TARGET]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "vectordb-load: ConfigError: --input 'good.parquet' is parquet, but --format is json: a job "
        "reads one format, so load each format in a run of its own (--debug shows the trace)"
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["--input", "rows.jsonl", "more.json"],  # .jsonl and .json: both JSON
        ["--input", "rows.txt", "rows.jsonl", "--format", "json"],  # a name of no format takes --format's
        ["--input", "rows.jsonl", "s3://bucket/embeddings/"],  # another store's folder: its format unknown
        ["--input", "good.parquet", "parquet_folder"],
    ],
)
def test_inputs_of_one_format_pass_the_check(argv: list[str]) -> None:
    load.check_before_spark(load.parse_args([*argv, *TARGET]))
