"""``vectordb-beam`` reads each Parquet file's schema (its footer, no rows) before the pipeline runs: a file
the writer cannot read (no id column, an id of another type, not Parquet at all) is one line naming the
file and the column, exit 2, and nothing is written. One such file among several stopped the whole job after
the other files' rows were written, with an error that named no file, and the dead letters of the rows that
had failed were left unfinished in a ``beam-temp-*`` folder."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.embedding.fixtures import embeddings_server, expected_vectors, words
from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main

__all__ = ["embeddings_server"]  # a fixture, used by name

DIM = 4


def vectors(n: int, k: int) -> pa.Array:
    return pa.array([[1.0, 0.5, 0.25, float(k * 100 + i + 1)] for i in range(n)], pa.list_(pa.float32()))


def good_files(folder: Path) -> None:
    """Two files the writer reads, one with a bad row (a vector of 1 float) and an extra column."""
    folder.mkdir()
    pq.write_table(
        pa.table({"id": [f"a{i}" for i in range(10)], "values": vectors(10, 0)}), folder / "part-0.parquet"
    )
    short = pa.array(
        [[1.0, 2.0, 3.0, float(i)] if i != 4 else [1.0] for i in range(10)], pa.list_(pa.float32())
    )
    table = pa.table({"id": [f"c{i}" for i in range(10)], "values": short, "title": ["t"] * 10})
    pq.write_table(table, folder / "part-2.parquet")


def run(
    folder: Path, server: ServerHandle, dead: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    status = main([f"--input={folder}", f"--uri={server.uri}", f"--dead_letters={dead}"])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    ("table", "reason"),
    [
        (
            pa.table({"doc": [f"b{i}" for i in range(10)], "values": vectors(10, 1)}),
            "option id_column: no column 'id' in the input (columns: doc, values)",
        ),
        (
            pa.table({"id": [float(i) for i in range(10)], "values": vectors(10, 1)}),
            "option id_column: column 'id' has type double; expected a string or integer",
        ),
    ],
)
def test_a_file_the_writer_cannot_read_is_one_line_naming_it_and_nothing_is_written(
    table: pa.Table,
    reason: str,
    rest_server: ServerHandle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rest_server.script(dimension=DIM)
    folder = tmp_path / "in"
    good_files(folder)
    pq.write_table(table, folder / "part-1.parquet")
    status, out, err = run(folder, rest_server, tmp_path / "dead", capsys)
    assert status == 2
    (line,) = err.splitlines()
    assert line.startswith(f"vectordb-beam: ConfigError: --input {folder / 'part-1.parquet'}: {reason}")
    assert "writing" not in out
    assert rest_server.arrived().requests == []
    assert not (tmp_path / "dead").exists()


def test_a_file_that_is_not_parquet_is_one_line_naming_it(
    rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rest_server.script(dimension=DIM)
    folder = tmp_path / "in"
    good_files(folder)
    (folder / "part-3.parquet").write_bytes(b"not parquet at all")
    status, _, err = run(folder, rest_server, tmp_path / "dead", capsys)
    assert status == 2
    (line,) = err.splitlines()
    assert line.startswith(f"vectordb-beam: ConfigError: --input {folder / 'part-3.parquet'}: ")
    assert "not a parquet file" in line.lower()
    assert rest_server.arrived().requests == []


def test_files_the_writer_reads_pass_the_check_and_a_bad_row_fails_alone(
    rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rest_server.script(dimension=DIM)
    folder = tmp_path / "in"
    good_files(folder)
    status, out, _ = run(folder, rest_server, tmp_path / "dead", capsys)
    assert status == 1
    assert "written:  19 of 20 rows (1 failed)" in out
    dead = (tmp_path / "dead").glob("dead-letters-*.jsonl")
    (letter,) = [json.loads(line) for f in dead for line in f.read_text().splitlines()]
    assert letter["id"] == "c4"


def test_parquet_text_without_vectors_passes_the_check_with_the_embedding_options(
    rest_server: ServerHandle,
    tmp_path: Path,
    embeddings_server: EmbeddingsServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The embedding stage adds the vector column: the check must see the batch as the stage hands it on."""
    texts = [words(i) for i in range(6)]
    source = tmp_path / "texts.parquet"
    pq.write_table(pa.table({"id": [f"t{i}" for i in range(6)], "text": texts}), source)
    argv = [f"--input={source}", f"--uri={rest_server.uri}", "--no_create", "--option=text_column=text"]
    argv += [f"--option=embed_url={embeddings_server.url}", f"--option=embed_model={DEFAULT_MODEL}"]
    monkeypatch.setenv("VDB_TEST_EMBED_KEY", DEFAULT_KEY)  # a key is refused in the command line
    assert main([*argv, "--option=embed_api_key_env=VDB_TEST_EMBED_KEY"]) == 0
    expected = expected_vectors(texts)
    arrived = rest_server.arrived()
    assert [arrived.vector(f"t{i}").values_f32 for i in range(6)] == [v.tobytes() for v in expected]
