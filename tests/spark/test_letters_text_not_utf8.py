"""README: "A dead letter holds the element as it came" and "Fixed and written again, a row stores what it
would have stored the first time". A Latin-1 byte in a Parquet file's string column (as a producer that
does not check its text writes it) reaches the data source as it is: the row fails ('title': not UTF-8),
and its letter file keeps the bytes, so written again
through ``vectordb.spark.rows_from_letters`` the row fails again with the same reason and nothing stored
changes (no made-up text such as ``'caf\\xe9'`` is stored)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.servers.fixtures import ServerHandle
from vectordb.spark import rows_from_letters

LATIN1 = b"caf\xe9"
REASON = "Invalid: column 'title': text is not valid UTF-8"


def letters_of(folder: Path) -> pa.Table:
    return pa.concat_tables([pq.read_table(f) for f in sorted(folder.glob("*.parquet"))])


def write(df: Any, server: ServerHandle, dead: Path) -> None:
    writer = df.write.format("vectordb").option("uri", server.uri).option("namespace", "latin1")
    writer.option("dimension", "3").option("on_error", "dead_letter").option("dead_letter_path", str(dead))
    writer.mode("append").save()


def test_a_latin1_row_written_again_from_its_letter_file_fails_again(
    spark: Any, rest_server: ServerHandle, tmp_path: Path
) -> None:
    source = tmp_path / "rows.parquet"
    title = pa.array([b"one", LATIN1], pa.binary()).view(pa.string())  # unchecked text
    vectors = pa.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], pa.list_(pa.float32()))
    pq.write_table(pa.table({"id": ["a", "b"], "values": vectors, "title": title}), source)
    write(spark.read.parquet(str(source)), rest_server, tmp_path / "dead1")
    first = letters_of(tmp_path / "dead1")
    assert first.column("error").to_pylist() == [REASON]
    assert first.column("title").cast(pa.binary()).to_pylist() == [LATIN1]  # the row's own bytes
    before = {k: (list(v.values), v.metadata) for k, v in rest_server.arrived().namespaces["latin1"].items()}
    assert sorted(before) == ["a"]

    again = rows_from_letters(spark.read.parquet(str(tmp_path / "dead1")))
    write(again, rest_server, tmp_path / "dead2")
    second = letters_of(tmp_path / "dead2")
    assert second.column("error").to_pylist() == [REASON]
    assert second.column("title").cast(pa.binary()).to_pylist() == [LATIN1]
    after = {k: (list(v.values), v.metadata) for k, v in rest_server.arrived().namespaces["latin1"].items()}
    assert after == before
