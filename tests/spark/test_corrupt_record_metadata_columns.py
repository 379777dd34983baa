"""A JSON Lines file with one Latin-1 byte in one title, written with option ``metadata_columns``: Spark 4
parses that line's ``id`` and ``values``, reads ``title`` as null and keeps the whole line in
``_corrupt_record``. That column was read only as metadata, so with ``metadata_columns`` naming the real
columns the row was written without its title (written=20, failed=0). Now a row with a text in
``_corrupt_record`` fails, saying Spark could not parse its line, whatever ``metadata_columns`` names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.servers.fixtures import ServerHandle
from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow

BAD = 3
NOT_UTF8 = "column '_corrupt_record': text is not valid UTF-8; Spark could not parse the line"


def latin1_jsonl(directory: Path) -> Path:
    """20 rows, the title of row ``BAD`` "café" in Latin-1."""
    path = directory / "in.jsonl"
    with path.open("w", encoding="latin-1") as f:
        for i in range(20):
            title = "café" if i == BAD else f"doc {i}"
            f.write(f'{{"id": "l{i}", "values": [1.0, 2.0, 3.0], "title": "{title}", "n": {i}}}\n')
    return path


def reasons(prepared: Any) -> dict[str, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


def test_a_corrupt_record_fails_its_row_whatever_metadata_columns_names() -> None:
    batch = pa.record_batch(
        {
            "id": ["a", "b", "c"],
            "values": [[1.0, 2.0], [1.0, 2.0], [3.0, 4.0]],
            "title": ["x", None, None],
            "_corrupt_record": [None, '{"id": "b", "values": [1.0, 2.0], "title": 1e999e}', None],
        }
    )
    for metadata_columns in (("title",), None):
        spec = ColumnSpec(metadata_columns=metadata_columns)
        prepared = prepare_arrow(batch, spec, RowRules(), DimensionState())
        assert reasons(prepared) == {
            "b": "column '_corrupt_record': Spark could not parse the line: "
            + repr('{"id": "b", "values": [1.0, 2.0], "title": 1e999e}'[:40] + "...")
        }
        (sent,) = prepared.batches
        assert sent.ids == ["a", "c"]
        assert sent.metadata == [{"title": "x"}, {}]  # the column is never metadata


def test_spark_fails_the_line_that_is_not_utf8_with_metadata_columns(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    df = spark.read.json(str(latin1_jsonl(tmp_path)))
    bad = df.where(df["id"] == f"l{BAD}").first()
    assert (bad["title"], bad["n"]) == (None, BAD)  # what Spark 4 reads of that line
    reports = tmp_path / "reports"
    (
        df.write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("dimension", "3")
        .option("metadata_columns", "title,n")
        .option("on_error", "report")
        .option("report_path", str(reports))
        .mode("append")
        .save()
    )
    (file,) = reports.glob("job-*.json")
    report = json.loads(file.read_text())
    assert (report["written"], report["failed"]) == (19, 1)
    assert report["failed_ids_sample"] == [f"l{BAD}"]
    assert NOT_UTF8 in report["reasons"][0][0]
    arrived = grpc_server.arrived()
    assert arrived.ids() == {f"l{i}" for i in range(20) if i != BAD}
    assert arrived.vector("l4").metadata == {"title": "doc 4", "n": 4}
