"""``vectordb-load`` checks the format of every file a local folder or glob gives Spark, as Spark lists
them, not only each input's name: ``--input rows.jsonl 'pq/*'`` passed the check (a glob's name says no
format) and the Parquet rows failed as garbage (1 of 5 written), and a folder was taken by its first data
file alone (a folder of a.jsonl and b.parquet: 2 of 6). Refused before Spark starts, naming the first
file that differs."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.unit.spark_cli import fake_java, refuse_spark
from vectordb.spark import load

TARGET = ["--uri", "qdrant://localhost:6333/docs"]  # no embedded default: nothing to start
END = "so load each format in a run of its own (--debug shows the trace)"


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every refusal here comes before Spark; a Java is there, as the checks need one."""
    refuse_spark(monkeypatch, tmp_path)
    if not (os.environ.get("JAVA_HOME") or load.shutil.which("java")):
        monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path.parent / f"{tmp_path.name}-jdk")))
    table = pa.table({"id": ["p"], "values": [[1.0, 2.0]]})
    (tmp_path / "rows.jsonl").write_text('{"id": "a", "values": [1.0, 2.0]}\n')
    (tmp_path / "pq").mkdir()
    pq.write_table(table, tmp_path / "pq" / "good.parquet")
    (tmp_path / "pq" / "_SUCCESS").write_bytes(b"")
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "a.jsonl").write_text('{"id": "b", "values": [1.0, 2.0]}\n')
    pq.write_table(table, tmp_path / "mixed" / "b.parquet")
    (tmp_path / "deep" / "lang=en" / "_temporary").mkdir(parents=True)
    (tmp_path / "deep" / "lang=en" / "part-0.json").write_text('{"id": "c", "values": [1.0, 2.0]}\n')
    pq.write_table(table, tmp_path / "deep" / "lang=en" / "_temporary" / "part-1.parquet")  # left out
    pq.write_table(table, tmp_path / "deep" / "lang=en" / ".part-2.parquet")  # left out
    (tmp_path / "deep" / "lang=en" / "part-3.json.crc").write_bytes(b"crc")  # no format: read as JSON


def refusal(capsys: pytest.CaptureFixture[str]) -> str:
    (line,) = capsys.readouterr().err.splitlines()
    return line


def test_a_glob_of_parquet_files_after_a_json_lines_file_is_refused_naming_the_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert load.main(["--input", "rows.jsonl", "pq/*", *TARGET]) == 2
    assert refusal(capsys) == (
        "vectordb-load: ConfigError: --input 'pq/*': 'pq/good.parquet' is parquet, but 'rows.jsonl' is "
        f"json: a job reads one format (--format), {END}"
    )


@pytest.mark.parametrize("given", ["mixed", "mixed/", "mixed/*"])
def test_a_folder_or_glob_of_two_formats_is_refused_naming_a_file_of_each(
    given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load.main(["--input", given, *TARGET]) == 2
    folder = given.removesuffix("*").rstrip("/")
    shown = f"{folder}/b.parquet" if given.endswith("*") else os.path.join(given, "b.parquet")
    first = f"{folder}/a.jsonl" if given.endswith("*") else os.path.join(given, "a.jsonl")
    assert refusal(capsys) == (
        f"vectordb-load: ConfigError: --input {given!r}: {shown!r} is parquet, but {first!r} is json: a "
        f"job reads one format (--format), {END}"
    )


def test_a_folders_file_that_contradicts_format_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert load.main(["--input", "rows.jsonl", "pq", "--format", "json", *TARGET]) == 2
    assert refusal(capsys) == (
        "vectordb-load: ConfigError: --input 'pq': 'pq/good.parquet' is parquet, but --format is json: a "
        f"job reads one format, {END}"
    )


@pytest.mark.parametrize(
    "argv, fmt",
    [
        (["--input", "deep"], "json"),  # _temporary/ and .names are not Spark's: not counted
        (["--input", "pq/*"], "parquet"),  # a glob's format: its first data file's
        (["--input", "pq", "pq/*", "pq/good.parquet"], "parquet"),
        (["--input", "s3://bucket/embeddings/", "pq/*"], "parquet"),  # another store: by its name
    ],
)
def test_files_of_one_format_pass_and_say_it(argv: list[str], fmt: str) -> None:
    args = load.parse_args([*argv, *TARGET])
    load.check_before_spark(args)
    assert load.input_format(args.input[0]) == fmt
