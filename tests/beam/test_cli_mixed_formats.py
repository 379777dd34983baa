"""``vectordb-beam`` reads an ``--input`` folder or glob in one format, as ``vectordb-load`` does, and
refuses one whose files' names say two, naming a file of each. A folder was read as ``FOLDER/**.<its first
file's extension>``: a Parquet file next to a JSON Lines one was skipped, and the job said "2 of 2 rows",
exit 0; a glob of both read the Parquet file as JSON Lines, its rows failed as garbage."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main

VECTOR = [0.5, 0.25, 1.0, 2.0]


def mixed(folder: Path) -> Path:
    """a.jsonl (2 rows) and b.parquet (3 rows), and what Spark leaves beside them."""
    folder.mkdir()
    (folder / "a.jsonl").write_text(
        "".join(json.dumps({"id": f"j{i}", "values": VECTOR}) + "\n" for i in range(2))
    )
    pq.write_table(
        pa.table({"id": [f"p{i}" for i in range(3)], "values": [VECTOR] * 3}), folder / "b.parquet"
    )
    (folder / "_SUCCESS").write_bytes(b"")
    return folder


@pytest.mark.parametrize("given", ["{folder}", "{folder}/", "{folder}/*"])
def test_a_folder_or_glob_of_two_formats_is_refused_naming_a_file_of_each(
    given: str, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = mixed(tmp_path / "mixed")
    given = given.format(folder=folder)
    argv = [f"--input={given}", f"--uri={grpc_server.uri}", "--no_create", "--option=on_error=report"]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"vectordb-beam: ConfigError: --input {given!r}: '{folder}/b.parquet' is parquet, but "
        f"'{folder}/a.jsonl' is jsonl: a job reads one format (--input_format), so load each format in a "
        "run of its own (--debug shows the trace)"
    ]
    assert not grpc_server.arrived().ids()


def test_a_file_whose_name_contradicts_input_format_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = mixed(tmp_path / "mixed")
    argv = [f"--input={folder}", "--input_format=jsonl", "--uri=qdrant://localhost:6333/docs", "--dim=4"]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"vectordb-beam: ConfigError: --input {str(folder)!r}: '{folder}/b.parquet' is parquet, but "
        "--input_format is jsonl: a job reads one format, so load each format in a run of its own "
        "(--debug shows the trace)"
    ]


def test_a_folder_reads_every_file_spark_reads_in_its_format(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose name says no format (Spark's compressed part files, an odd name) is read in the
    folder's format, as Spark reads it: it was skipped."""
    folder = tmp_path / "out"
    folder.mkdir()
    for i, name in enumerate(["part-00000.json", "part-00001", "part-00002.txt"]):
        (folder / name).write_text(json.dumps({"id": f"r{i}", "values": VECTOR}) + "\n")
    (folder / "_SUCCESS").write_bytes(b"")
    argv = [f"--input={folder}", f"--uri={grpc_server.uri}", "--no_create"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "written:  3 of 3 rows (0 failed)" in capsys.readouterr().out
    assert grpc_server.arrived().ids() == {"r0", "r1", "r2"}


def test_a_glob_of_parquet_files_whose_pattern_names_no_format_is_read_as_parquet(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'data/*' was read as JSON Lines (its pattern has no extension): every row failed as not JSON."""
    folder = tmp_path / "data"
    folder.mkdir()
    for part in range(2):
        ids = [f"p{part}-{i}" for i in range(3)]
        pq.write_table(pa.table({"id": ids, "values": [VECTOR] * 3}), folder / f"part-{part}.parquet")
    argv = [f"--input={folder}/*", f"--uri={grpc_server.uri}", "--no_create"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "written:  6 of 6 rows (0 failed)" in capsys.readouterr().out
    assert len(grpc_server.arrived().ids()) == 6
