"""Dead letters carry the whole original row, from Python, Spark and Beam alike, whatever the ids are.

One input of six rows per id kind (text, 64-bit integers, 16-byte binary UUIDs, a null id, the same id
twice), with a row of the wrong length (refused before sending) and a row the server refuses. Each
engine's dead letters must be exactly those rows, each with every original column holding its
original value, and the reason. A failure names its rows by position in the write, so a repeated id
or an id the report spells differently from the input (a UUID's bytes as text) still finds its row.

Here rather than in tests/e2e because the Spark case needs the shared session (tests/spark/conftest).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB
from vectordb.connector import connect

DIM = 4
SHORT, REFUSED = 1, 2  # the row whose vector is too short; the row the server refuses
UUIDS = [uuid.uuid5(uuid.NAMESPACE_URL, f"row-{i}").bytes for i in range(6)]
KEYS: dict[str, tuple[pa.DataType, list[Any]]] = {
    "string": (pa.string(), [f"s{i}" for i in range(6)]),
    "int64": (pa.int64(), [100 + i for i in range(6)]),
    "uuid": (pa.binary(16), UUIDS),
    "null": (pa.string(), ["n0", "n1", "n2", None, "n4", "n5"]),  # row 3: no id, refused
    "duplicate": (pa.string(), ["d0", "dup", "dup", "d3", "d4", "d5"]),  # rows 1 and 2 share an id
}
OWN = ("key", "values", "title", "n")

_BEAM_LETTERS: dict[str, list[dict[str, Any]]] = {}  # filled by the in-process runner


def reported_id(key: Any) -> str | None:
    """The id as reports name it: text; a 16-byte UUID as its canonical text."""
    if key is None:
        return None
    return str(uuid.UUID(bytes=key)) if isinstance(key, bytes) else str(key)


def input_table(kind: str) -> pa.Table:
    key_type, keys = KEYS[kind]
    values = [[float(i), 0.5, -1.25, 2.0] for i in range(6)]
    values[SHORT] = [1.0, 2.0, 3.0]
    return pa.table(
        {
            "key": pa.array(keys, type=key_type),
            "values": pa.array(values, type=pa.list_(pa.float32())),
            "title": [f"title {i}" for i in range(6)],
            "n": pa.array([i * 10 for i in range(6)], type=pa.int64()),
        }
    )


def expected_failures(kind: str) -> list[tuple[str | None, str, dict[str, Any]]]:
    """(reported id, error type, the original row) of every row that must be a dead letter."""
    rows = input_table(kind).to_pylist()
    failed = {SHORT: "Invalid", REFUSED: "Rejected"}
    if kind == "null":
        failed[3] = "Invalid"
    return sorted(
        ((reported_id(rows[i]["key"]), error_type, rows[i]) for i, error_type in failed.items()),
        key=repr,
    )


def refused_id(kind: str) -> str:
    refused = reported_id(KEYS[kind][1][REFUSED])
    assert refused is not None
    return refused


# -- each engine's dead letters, as (reported id, error type, own columns) --------------------------


def python_letters(server: ServerHandle, table: pa.Table, tmp_path: Path) -> list[dict[str, Any]]:
    with connect(server.uri, id_column="key", dimension=DIM, on_error="report") as client:
        report = client.write(table)
        letters = client.dead_letters(table, report)
    assert isinstance(letters, pa.Table)
    return letters.to_pylist()


def spark_letters(server: ServerHandle, table: pa.Table, tmp_path: Path, spark: Any) -> list[dict[str, Any]]:
    dead = tmp_path / "dead"
    if pa.types.is_fixed_size_binary(table.schema.field("key").type):  # Spark's binary has no fixed size
        table = table.set_column(0, "key", table.column("key").cast(pa.binary()))
    (
        spark.createDataFrame(table)
        .write.format("vectordb")
        .option("uri", server.uri)
        .option("id_column", "key")
        .option("dimension", str(DIM))
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(dead))
        .mode("append")
        .save()
    )
    letters = pq.read_table(dead).to_pylist()
    for letter in letters:  # Spark's files say "Type: reason" in one column
        letter["error_type"], letter["error"] = letter["error"].split(": ", 1)
    return letters


def _collect(letter: dict[str, Any], token: str) -> None:
    _BEAM_LETTERS.setdefault(token, []).append(letter)


def beam_letters(server: ServerHandle, table: pa.Table, tmp_path: Path) -> list[dict[str, Any]]:
    token = str(tmp_path)
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        result = (
            pipeline
            | beam.Create(table.to_batches(), reshuffle=False)
            | WriteToVectorDB(server.uri, id_column="key", dimension=DIM, on_error="report")
        )
        _ = result.failed | beam.Map(_collect, token)
    return _BEAM_LETTERS.pop(token, [])


@pytest.mark.parametrize("kind", list(KEYS))
@pytest.mark.parametrize("engine", ["python", "spark", "beam"])
def test_dead_letters_carry_the_whole_original_row(
    engine: str, kind: str, grpc_server: ServerHandle, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    grpc_server.script(reject_ids=frozenset({refused_id(kind)}), dimension=DIM)  # a dense index of DIM
    table = input_table(kind)
    if engine == "spark":
        letters = spark_letters(grpc_server, table, tmp_path, request.getfixturevalue("spark"))
    else:
        letters = {"python": python_letters, "beam": beam_letters}[engine](grpc_server, table, tmp_path)

    got = sorted(
        ((d["id"], d["error_type"], {name: d.get(name, "<missing>") for name in OWN}) for d in letters),
        key=repr,
    )
    assert got == expected_failures(kind)
    for letter in letters:
        assert letter["retryable"] is False and letter["error"]
        never_sent = letter["error_type"] == "Invalid"  # refused before sending
        assert (letter["attempts"] == 0) == never_sent
    assert len(grpc_server.arrived().ids()) == 6 - len(letters)


def test_dead_letters_the_driver_cannot_see_fail_the_job_naming_dead_letter_path(
    grpc_server: ServerHandle, tmp_path: Path, spark: Any
) -> None:
    """dead_letter_path on each node's own disk: pyarrow's ``mock://`` filesystem lives in each process's
    memory, so the tasks stage their letters where the driver's commit cannot find them. The job must fail
    and say so (the rows stay written), not succeed with ``dead_letter_files: []``."""
    grpc_server.script(reject_ids=frozenset({refused_id("string")}), dimension=DIM)
    reports = tmp_path / "reports"
    with pytest.raises(Exception) as info:
        (
            spark.createDataFrame(input_table("string"))
            .write.format("vectordb")
            .option("uri", grpc_server.uri)
            .option("id_column", "key")
            .option("dimension", str(DIM))
            .option("on_error", "dead_letter")
            .option("dead_letter_path", f"mock://{tmp_path}/dead")
            .option("report_path", str(reports))
            .mode("append")
            .save()
        )
    message = str(info.value)
    assert re.search(
        r"option dead_letter_path: the driver cannot see the dead letters the tasks staged under "
        rf"dead_letter_path \(mock://{tmp_path}/dead; no file of partition \d+(, \d+)*\); dead_letter_path "
        "must be storage shared by the driver and the executors",
        message,
    ), message
    assert "The job's 4 written rows stay written" in message and "the 2 dead letters" in message, message
    assert len(grpc_server.arrived().ids()) == 4  # written, and it stays
    assert list(reports.glob("*.json")) == []  # no report says the letters are nowhere


def test_spark_letter_files_keep_an_int_id_column_of_its_type(
    grpc_server: ServerHandle, tmp_path: Path, spark: Any
) -> None:
    """An id column named ``id`` is the letters' ``id``, of its type (a long here, not the report's text
    '101'), so the letters read back and fixed write the rows they came from."""
    grpc_server.script(dimension=DIM)
    table = input_table("int64").rename_columns(["id", "values", "title", "n"])
    dead = tmp_path / "dead"
    (
        spark.createDataFrame(table)
        .write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("dimension", str(DIM))
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(dead))
        .mode("append")
        .save()
    )
    letters = pq.read_table(dead)
    assert letters.schema.field("id").type == pa.int64()
    assert [(r["id"], r["n"]) for r in letters.to_pylist()] == [(100 + SHORT, SHORT * 10)]
