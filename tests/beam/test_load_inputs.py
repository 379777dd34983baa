"""``vectordb-beam``'s ``--input`` takes what ``vectordb-load`` takes, or says it does not: a folder is its
data files (Spark's part files, partition folders, the format of the first one), and CSV, which this job
does not read, is refused in one line naming what it reads (it was read as JSON Lines: every row a
"not JSON" dead letter, or a "no vector" error; a folder was a page of IsADirectoryError)."""

from __future__ import annotations

import bz2
import codecs
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers.fixtures import ServerHandle
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam.load import (
    check_json_lines,
    format_of,
    input_dimension,
    input_pattern,
    main,
    resolve_input,
)
from vectordb.connector import ConfigError
from vectordb.connector.ids import uuid5_text

N, DIM = 40, 4
CSV_LINE = (
    "vectordb-beam: ConfigError: --input {}: vectordb-beam reads Parquet and JSON Lines (files, globs, "
    "folders of them), not CSV; vectordb-load reads CSV, or write the rows as Parquet or JSON Lines "
    "(--debug shows the trace)"
)


def rows(first: int, n: int) -> pa.Table:
    values = np.arange(first * DIM, (first + n) * DIM, dtype=np.float32) / 1000
    offsets = pa.array(np.arange(0, (n + 1) * DIM, DIM, dtype=np.int32))
    return pa.table(
        {
            "id": [f"r{i}" for i in range(first, first + n)],
            "values": pa.ListArray.from_arrays(offsets, pa.array(values)),
        }
    )


def spark_folder(folder: Path) -> Path:
    """As Spark writes a partitioned Parquet folder: part files in partition folders, _SUCCESS, .crc."""
    for part in range(2):
        (folder / f"k={part}").mkdir(parents=True)
        pq.write_table(
            rows(part * N // 2, N // 2), folder / f"k={part}" / f"part-0000{part}-x.snappy.parquet"
        )
        (folder / f"k={part}" / f".part-0000{part}-x.snappy.parquet.crc").write_bytes(b"crc")
    (folder / "_SUCCESS").write_bytes(b"")
    return folder


def test_a_new_collection_takes_its_dimension_from_the_folders_files(tmp_path: Path) -> None:
    pattern, fmt, files = resolve_input(str(spark_folder(tmp_path / "data")), "auto")
    assert (pattern, fmt) == (f"{tmp_path}/data", "parquet")
    assert files == [f"{tmp_path}/data/k={k}/part-0000{k}-x.snappy.parquet" for k in range(2)]
    assert input_dimension(pattern, fmt, "values") == input_dimension(pattern, fmt, "values", files) == DIM


@pytest.mark.parametrize("trailing", ["", "/"])
def test_a_folder_of_parquet_part_files_lands_whole(
    trailing: str, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = spark_folder(tmp_path / "data")
    argv = ["--runner=FnApiRunner", f"--input={folder}{trailing}", f"--uri={grpc_server.uri}", "--no_create"]
    assert main([*argv, "--option=namespace=docs"]) == 0, capsys.readouterr().err
    assert f"written:  {N} of {N} rows (0 failed)" in capsys.readouterr().out
    assert grpc_server.arrived().ids("docs") == {f"r{i}" for i in range(N)}


def test_a_folder_of_json_lines_is_read_as_json_lines(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "part-00000.json").write_text(json.dumps({"id": "a", "values": [1.0, 2.0]}) + "\n")
    (folder / "_SUCCESS").write_bytes(b"")
    assert resolve_input(str(folder), "auto") == (str(folder), "jsonl", [f"{folder}/part-00000.json"])


def test_a_folder_in_another_store_holds_parquet() -> None:
    pattern = input_pattern("gs://bucket/embeddings/", "auto")
    assert pattern == "gs://bucket/embeddings/**.parquet" and format_of(pattern) == "parquet"


def test_a_folder_without_data_files_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ConfigError, match="no Parquet or JSON Lines file in the folder"):
        resolve_input(str(tmp_path), "auto")


@pytest.mark.parametrize("name", ["vecs.csv", "exports/*.csv"])
def test_csv_is_refused_in_one_line_naming_what_the_job_reads(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exports").mkdir()
    for path in ("vecs.csv", "exports/a.csv"):
        (tmp_path / path).write_text('id,values\na,"[1.0, 2.0]"\n')
    assert main(["--input", name, "--uri", "qdrant://localhost:6333/docs", "--dim", "2"]) == 2
    assert capsys.readouterr().err.splitlines() == [CSV_LINE.format(name)]


def test_a_folder_of_csv_files_is_refused_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "part-00000.csv").write_text('id,values\na,"[1.0, 2.0]"\n')
    assert main(["--input", str(tmp_path), "--uri", "qdrant://localhost:6333/docs", "--dim", "2"]) == 2
    assert capsys.readouterr().err.splitlines() == [CSV_LINE.format(tmp_path)]


@pytest.mark.parametrize("codec", [("gz", gzip.open), ("bz2", bz2.open)])
def test_compressed_json_lines_land_whole_as_a_file_or_a_folder(
    codec: tuple[str, Any], grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rows.json.gz``, as Spark writes JSON with option ``compression``: a folder of them was "no Parquet or
    JSON Lines file", and the file itself a ``TypeError`` trace from the dimension's sampling."""
    suffix, opener = codec
    folder = tmp_path / "out"
    folder.mkdir()
    with opener(folder / f"part-00000.json.{suffix}", "wt") as stream:
        stream.writelines(json.dumps({"id": f"r{i}", "values": [float(i), 1.0]}) + "\n" for i in range(N))
    assert format_of(f"part-00000.json.{suffix}") == "jsonl" and format_of("x.parquet.gz") is None
    for given, namespace in ((folder, "folder"), (folder / f"part-00000.json.{suffix}", "file")):
        argv = ["--runner=FnApiRunner", f"--input={given}", f"--uri={grpc_server.uri}", "--no_create"]
        assert main([*argv, f"--option=namespace={namespace}"]) == 0, capsys.readouterr().err
        assert f"written:  {N} of {N} rows (0 failed)" in capsys.readouterr().out
        assert grpc_server.arrived().ids(namespace) == {f"r{i}" for i in range(N)}


def test_a_compressed_json_array_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.json.gz"
    with gzip.open(path, "wt") as stream:
        stream.write('[\n{"id": "a", "values": [1.0, 2.0]}\n]\n')
    with pytest.raises(ConfigError, match=r"rows\.json\.gz'?: not JSON Lines .* a JSON array"):
        check_json_lines([str(path)])


def test_named_vectors_into_a_missing_collection_name_vector_dimensions_before_the_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Named vectors left ``create`` unset: the pipeline started, and its write step failed with "option
    create=true makes it", though the job creates a missing collection and the missing piece is each name's
    dimension, which ``vectordb-load`` names up front."""
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": "a", "t": [1.0, 2.0], "tok": [[1.0, 2.0]]}) + "\n")
    with QdrantServer() as server:
        argv = ["--runner=FnApiRunner", f"--input={path}", f"--uri={server.rest_uri('named')}"]
        named = ["--option=vector_columns=title:t", "--option=multi_vector_columns=colbert:tok"]
        assert main([*argv, *named]) == 2
        err = capsys.readouterr().err
        assert err.startswith("vectordb-beam: ConfigError: option vector_dimensions: ") and "ParDo" not in err
        assert main([*argv, *named, "--option=vector_dimensions=title:2,colbert:2"]) == 0, capsys.readouterr()
        assert server.client().retrieve("named", [uuid5_text("a")], with_vectors=True)[0].vector == {
            "title": [1.0, 2.0],
            "colbert": [[1.0, 2.0]],
        }


def test_blank_lines_and_a_byte_order_mark_are_read_as_spark_reads_them(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file's last empty line failed as a row ("not JSON: a zero-length document"), a file of one newline
    in a glob stopped the job as "not JSON Lines", and a byte order mark (Notepad's UTF-8) failed the first
    row, or, in a one-line file, the job as "not JSON Lines": ``vectordb-load`` reads all of them."""
    (tmp_path / "data").mkdir()
    record = json.dumps({"id": "a", "values": [1.0, 2.0]}).encode()
    (tmp_path / "data" / "1.jsonl").write_bytes(codecs.BOM_UTF8 + record + b"\n\n  \n")
    (tmp_path / "data" / "2.jsonl").write_bytes(b"\n")
    (tmp_path / "data" / "3.jsonl").write_bytes(codecs.BOM_UTF8 + record.replace(b'"a"', b'"b"'))
    for given, namespace in ((f"{tmp_path}/data/*.jsonl", "glob"), (f"{tmp_path}/data", "folder")):
        argv = ["--runner=FnApiRunner", f"--input={given}", f"--uri={grpc_server.uri}", "--no_create"]
        assert main([*argv, f"--option=namespace={namespace}"]) == 0, capsys.readouterr().err
        assert "written:  2 of 2 rows (0 failed)" in capsys.readouterr().out
        assert grpc_server.arrived().ids(namespace) == {"a", "b"}
    assert input_dimension(f"{tmp_path}/data/3.jsonl", "jsonl", "values") == 2
