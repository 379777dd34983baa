"""The bad-input catalogue's Spark rows (tests/badinput/cases.py, ``spark=True``) in one DataFrame, one
write with dead letters: exactly the rows the catalogue says fail are dead letters, each with its reason,
and every other row is in the index with its metadata as the catalogue says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.badinput.cases import CASES
from tests.servers.fixtures import ServerHandle

COLUMNS = (
    "id string, values array<float>, blob binary, text string, place struct<city: string>, "
    "scores array<bigint>, n bigint, at timestamp, day date, price decimal(10, 2), case string"
)
FIELDS = ("id", "values", "blob", "text", "place", "scores", "n", "at", "day", "price")


def spark_row(case_name: str, row: dict[str, Any], row_id: str | None) -> tuple[Any, ...]:
    values = {**row, "id": row_id}
    return (*(values.get(name) for name in FIELDS), case_name)


def test_the_catalogues_spark_rows_in_one_write(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    grpc_server.script(dimension=4)
    cases = [c for c in CASES if c.spark]
    assert len(cases) >= 15
    rows = []
    for i, case in enumerate(cases):
        assert case.row is not None
        given = case.row.get("id", "bad")
        row_id = given if given is None or given == "" or len(str(given)) > 100 else f"case-{i}"
        rows.append(spark_row(case.name, case.row, row_id))
    rows += [spark_row("good", {"values": [0.5, 1.0, -1.0, 2.0]}, f"good-{i}") for i in range(200)]
    dead = tmp_path / "dead"
    (
        spark.createDataFrame(rows, COLUMNS)
        .repartition(3)
        .write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("api_key", "k")
        .option("dimension", "4")
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(dead))
        .mode("append")
        .save()
    )
    letters = {r["case"]: r for r in spark.read.parquet(str(dead)).collect()}
    failing = {c.name: c for c in cases if c.outcome == "fails alone"}
    assert set(letters) == set(failing)
    for name, letter in letters.items():
        assert failing[name].says in letter["error"], (name, letter["error"])
    stored = grpc_server.arrived().final
    written = {vid for (_, vid) in stored}
    assert written == {f"good-{i}" for i in range(200)} | {
        f"case-{i}" for i, c in enumerate(cases) if c.outcome == "written"
    }
    by_case = {c.name: f"case-{i}" for i, c in enumerate(cases)}
    metadata = {name: stored[("", vid)].metadata for name, vid in by_case.items() if ("", vid) in stored}
    assert metadata["a timestamp in metadata"]["at"].startswith("2024-05-06T07:08:09")
    assert metadata["a date in metadata"]["day"] == "2024-05-06"
    assert metadata["a decimal in metadata"]["price"] == "10.25"
