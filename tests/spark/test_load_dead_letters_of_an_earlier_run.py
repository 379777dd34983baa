"""``vectordb-load --dead-letter-path DIR`` into a folder that holds an earlier run's letters: the second
run's summary said "dead letters: 1 file" while the folder held both runs' letters, and
``rows_from_letters(spark.read.parquet(DIR))`` wrote the earlier run's rows again. The command refuses
the folder before Spark starts (as ``vectordb-beam`` does), naming the files and what to do."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.connector.errors import ConfigError
from vectordb.spark.load import check_before_spark, main, parse_args


def test_a_second_run_into_the_same_folder_is_refused_and_writes_nothing(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    letters = tmp_path / "letters"
    argv = ["--uri", grpc_server.uri, "--on-error", "dead_letter", "--dead-letter-path", str(letters)]
    first = tmp_path / "first.parquet"
    vectors = [[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]]
    pq.write_table(pa.table({"id": ["a1", "a2", "a3"], "values": [*vectors, [0.1, 0.2]]}), first)
    assert main(["--input", str(first), *argv]) == 1  # a3: 2 dimensions of 3, a dead letter
    written = sorted(letters.glob("job-*-part-*.parquet"))
    assert len(written) == 1 and "dead letters: 1 file" in capsys.readouterr().out

    second = tmp_path / "second.parquet"
    pq.write_table(pa.table({"id": ["z1", "z2", "z3"], "values": [*vectors, [0.1]]}), second)
    before = dict(grpc_server.arrived().final)
    assert main(["--input", str(second), *argv]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"vectordb-load: ConfigError: --dead-letter-path {letters}: it holds dead letters of an earlier run "
        f"({written[0]}); move them away (or give another folder), so this run's letters are not mixed with "
        "them (--debug shows the trace)"
    )
    assert sorted(letters.glob("*.parquet")) == written  # nothing added to the folder
    assert dict(grpc_server.arrived().final) == before  # and nothing written: z1, z2 are not there


def args(*argv: str) -> argparse.Namespace:
    return parse_args(["--sample", "5", "--uri", "qdrant://127.0.0.1:1/c", *argv])


def test_the_option_spelling_is_refused_and_other_folders_are_not(tmp_path: Path) -> None:
    (tmp_path / "job-0a1b2c3d4e5f-part-00000.parquet").write_bytes(b"PAR1")
    with pytest.raises(
        ConfigError, match=r"^option dead_letter_path .*: it holds dead letters of an earlier run"
    ):
        check_before_spark(
            args("--option", "on_error=dead_letter", "--option", f"dead_letter_path={tmp_path}")
        )
    check_before_spark(args("--on-error", "report", "--option", f"dead_letter_path={tmp_path}"))  # no letters
    empty = tmp_path / "new"
    check_before_spark(args("--on-error", "dead_letter", "--dead-letter-path", str(empty)))  # not there yet
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.parquet").write_bytes(b"PAR1")  # not a letter file's name
    (other / "_staging-job-x").mkdir()
    check_before_spark(args("--on-error", "dead_letter", "--dead-letter-path", str(other)))
