"""The main job, ``vectordb-load`` (``vectordb.spark.load``), on the shared session: a generated sample and
files of each format, into a test server; a ``ConnectorError`` (raised in Spark's Python worker) as one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.net import closed_port
from tests.servers.fixtures import ServerHandle
from vectordb.spark.load import input_format, main

from .conftest import float32_rows, vectors_table


def test_sample_lands_and_a_second_run_upserts_the_same_rows(
    spark: Any, grpc_server: ServerHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--sample", "1500", "--dim", "8", "--uri", grpc_server.uri, "--namespace", "s"]
    assert main(argv) == 0
    first = {vid: v.values_f32 for (_, vid), v in grpc_server.arrived().final.items()}
    assert len(first) == 1500
    assert main(argv) == 0
    arrived = grpc_server.arrived()
    assert {vid: v.values_f32 for (_, vid), v in arrived.final.items()} == first  # same vectors again
    assert sum(len(r.vectors) for r in arrived.accepted) == 3000
    vector = np.frombuffer(first["7"], dtype="<f4")
    assert vector.shape == (8,) and np.all(np.abs(vector) < 1) and len(set(vector.tolist())) > 1
    assert arrived.vector("7", "s").metadata == {"title": "sample 7"}
    out = capsys.readouterr().out
    assert "written:  1,500 of 1,500 rows (0 failed)" in out
    assert spark.sparkContext._jsc is not None  # the job left the session it did not start running


def test_overwrite_replaces_the_namespace(spark: Any, grpc_server: ServerHandle) -> None:
    assert main(["--sample", "300", "--dim", "4", "--uri", grpc_server.uri, "--namespace", "s"]) == 0
    argv = ["--sample", "100", "--dim", "4", "--uri", grpc_server.uri, "--namespace", "s", "--overwrite"]
    assert main(argv) == 0
    assert grpc_server.arrived().ids("s") == {str(i) for i in range(100)}


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv"])
def test_files_of_each_format(spark: Any, grpc_server: ServerHandle, tmp_path: Path, fmt: str) -> None:
    table = vectors_table(300, 4)
    path = tmp_path / f"input.{fmt}"
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        rows = [{**r, "values": [float(x) for x in r["values"]]} for r in table.to_pylist()]
        if fmt == "json":
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        else:
            lines = ["id,values,title,n"] + [
                f'{r["id"]},"{json.dumps(r["values"])}",{r["title"]},{r["n"]}' for r in rows
            ]
            path.write_text("\n".join(lines) + "\n")
    assert main(["--input", str(path), "--uri", grpc_server.uri]) == 0
    arrived = grpc_server.arrived()
    assert {vid: v.values_f32 for (_, vid), v in arrived.final.items()} == float32_rows(table)
    assert arrived.vector("v3").metadata["title"] == "title 3"


def test_a_folder_takes_its_files_format(spark: Any, grpc_server: ServerHandle, tmp_path: Path) -> None:
    """``--input embeddings/``, as ``--help``'s example gives it: the folder's files say the format (it
    asked for --format); Spark's own marker files and partition folders are passed over."""
    folder = tmp_path / "embeddings"
    (folder / "day=1").mkdir(parents=True)
    (folder / "_SUCCESS").write_text("")
    table = vectors_table(40, 4)
    pq.write_table(table, folder / "day=1" / "part-0.parquet")
    assert input_format(str(folder) + "/") == "parquet"
    assert input_format("s3://bucket/embeddings/") == "parquet"  # another store's folder: Parquet
    (tmp_path / "lines").mkdir()
    (tmp_path / "lines" / "a.jsonl").write_text("")
    assert input_format(str(tmp_path / "lines")) == "json"
    assert main(["--input", str(folder) + "/", "--uri", grpc_server.uri]) == 0
    assert len(grpc_server.arrived().ids()) == 40


def test_a_csv_as_pythons_csv_module_writes_it_keeps_quotes_and_line_breaks(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    """A doubled quote is one quote, and a quoted field may span lines: the title was cut at the quote
    (``He said ""hi``) or the line break (its second line a bogus row), and the job said OK."""
    titles = ['He said "hi", then left', "two\nlines", "plain"]
    path = tmp_path / "input.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "values", "title"])
        writer.writerows([f"c{i}", json.dumps([float(i), 1.0]), t] for i, t in enumerate(titles))
    assert main(["--input", str(path), "--uri", grpc_server.uri]) == 0
    arrived = grpc_server.arrived()
    assert {vid: v.metadata["title"] for (_, vid), v in arrived.final.items()} == {
        f"c{i}": t for i, t in enumerate(titles)
    }


def test_failed_rows_make_the_exit_code_and_the_summary(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grpc_server.script(reject_ids=frozenset({"11"}))
    assert main(["--sample", "100", "--dim", "4", "--uri", grpc_server.uri]) == 1
    out, err = capsys.readouterr()
    assert "written:  99 of 100 rows (1 failed)" in out
    assert "failed:   1 x Rejected: " in out
    # how this command keeps failed rows from failing it: its flags, not the API's on_error=
    assert err.splitlines()[-1] == (
        "vectordb-load: rows failed, which fails the job. Give --dead-letter-path DIR, or --on-error report, "
        "to keep the rows that did land without failing."
    )


def test_a_report_path_of_the_users_own_is_summarized_and_keeps_the_report(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--option report_path=DIR``: the summary and the exit code are this job's, read from DIR, whose
    earlier reports are left alone and not taken for this one's."""
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "job-zzzz-an-earlier-run.json").write_text('{"failed": 0}')
    grpc_server.script(reject_ids=frozenset({"11"}))
    argv = ["--sample", "100", "--dim", "4", "--uri", grpc_server.uri, "--on-error", "report"]
    assert main([*argv, "--option", f"report_path={reports}"]) == 1
    assert "written:  99 of 100 rows (1 failed)" in capsys.readouterr().out
    assert len(list(reports.glob("job-*.json"))) == 2


def test_vectors_of_the_wrong_column_name_are_named(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(
        pa.table({"id": ["a"], "embedding": pa.array([[1.0, 2.0]], type=pa.list_(pa.float32()))}), path
    )
    assert main(["--input", str(path), "--uri", grpc_server.uri]) == 2  # usage: not "rows failed"
    assert "ConfigError: no column 'values' in the input" in capsys.readouterr().err


def test_an_input_that_matches_nothing_is_one_line_and_status_2(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--input", str(tmp_path / "none-*.parquet"), "--uri", grpc_server.uri]) == 2
    err = capsys.readouterr().err
    assert "--input: nothing matches" in err and "Traceback" not in err


def test_the_collection_takes_the_most_common_length_not_the_first_rows(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.json"
    rows = [{"id": "short", "values": [1.0, 2.0]}] + [
        {"id": f"r{i}", "values": [1.0, 2.0, 3.0]} for i in range(4)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # the flag in vectordb-beam's spelling: - and _ are one
    assert main(["--input", str(path), "--uri", grpc_server.uri, "--on_error", "report"]) == 1
    out = capsys.readouterr().out
    assert "written:  4 of 5 rows (1 failed)" in out and "vector has 2 dimensions" in out


def test_a_misspelt_option_is_one_line_and_status_2_before_spark_reads(
    spark: Any, grpc_server: ServerHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    """The --option pairs are parsed before Spark is asked (check_options): the error alone, its trace
    under --debug with no Spark exception in it. An error only Spark's Python worker finds is
    tests/spark/test_load_worker_error_one_line.py's."""
    argv = ["--sample", "10", "--dim", "4", "--uri", grpc_server.uri, "--option", "bach_size=5"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "vectordb-load: ConfigError: invalid options: unknown option 'bach_size' (did you mean 'batch_size'?) "
        "(--debug shows the trace)"
    ]
    assert main([*argv, "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last):" in err and "AnalysisException" not in err  # before Spark
    assert err.splitlines()[-1].startswith("vectordb-load: ConfigError: invalid options: unknown option")
    assert grpc_server.arrived().requests == []


def test_an_embedding_endpoint_that_refuses_connections_is_one_line(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: the driver's probe of the model cannot connect (after its retries)."""
    source = tmp_path / "docs.jsonl"
    source.write_text('{"id": "a", "text": "hello"}\n{"id": "b", "text": "world"}\n')
    url = f"http://127.0.0.1:{closed_port()}"
    argv = ["--input", str(source), "--uri", grpc_server.uri, "--text-column", "text"]
    assert main([*argv, "--embed-url", url, "--embed-model", "m", "--no-create"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"vectordb-load: ConnectError: POST {url}/v1/embeddings: cannot connect: [Errno 111] Connection refused "
        "(--debug shows the trace)"
    )


def test_the_start_line_and_the_error_show_no_password_of_the_uri(
    spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"postgresql://app:PwSECRET@127.0.0.1:{closed_port()}/vectors"
    assert main(["--sample", "10", "--dim", "4", "--uri", uri, "--no-create"]) == 2
    captured = capsys.readouterr()
    assert "PwSECRET" not in captured.out + captured.err
    assert "to postgresql://app:***@127.0.0.1:" in captured.out
