"""A vector given as text (CSV's only kind, and JSON files that quote their vectors) is read as a JSON list
of numbers; a text that is not one fails its row with that reason, naming the column. Spark's ``from_json``,
which ``vectordb-load`` used, made such a text null, and the row failed as ``null vector``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle
from tests.spark.conftest import grpc_process, grpc_server, spark
from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow
from vectordb.spark.load import main

__all__ = ["grpc_process", "grpc_server", "spark"]  # fixtures, used by name

NOT_JSON = "column 'values': vector text is not a JSON list of numbers: "


def reasons(prepared: Any) -> dict[str, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


def test_json_text_vectors_are_read_and_other_text_fails_its_row_naming_the_column() -> None:
    texts = [
        "[1, 2, 3]",
        "1;2;3",
        "[1,2,",
        '{"a": 1}',
        "[1, null, 3]",
        "[true, 2, 3]",
        "[]",
        None,
        "  ",
        "[4,5,6.5]",
    ]
    batch = pa.record_batch({"id": [f"r{i}" for i in range(len(texts))], "values": texts})
    prepared = prepare_arrow(batch, ColumnSpec(), RowRules(), DimensionState())
    assert reasons(prepared) == {
        "r1": NOT_JSON + "'1;2;3'",
        "r2": NOT_JSON + "'[1,2,'",
        "r3": NOT_JSON + "'{\"a\": 1}'",
        "r4": NOT_JSON + "'[1, null, 3]'",
        "r5": NOT_JSON + "'[true, 2, 3]'",
        "r6": "null vector",  # a list, empty: no vector
        "r7": "null vector",
        "r8": "null vector",
    }
    (sent,) = prepared.batches
    assert sent.ids == ["r0", "r9"]
    np.testing.assert_array_equal(sent.vectors, np.array([[1, 2, 3], [4, 5, 6.5]], dtype=np.float32))


def test_a_long_text_is_quoted_cut_in_the_reason() -> None:
    text = "[" + ";".join(["0.123456"] * 100) + "]"
    batch = pa.record_batch({"id": ["a"], "values": [text]})
    (failure,) = prepare_arrow(batch, ColumnSpec(), RowRules(), DimensionState()).failures
    assert failure.error == NOT_JSON + repr(text[:40] + "...")


def test_named_vectors_as_text_fail_alike() -> None:
    batch = pa.record_batch({"id": ["a", "b"], "img": ["[1, 2]", "1 2"]})
    spec = ColumnSpec(vector_columns=(("image", "img"),))
    prepared = prepare_arrow(batch, spec, RowRules(), DimensionState(named={"image": None}))
    assert reasons(prepared) == {
        "b": "vector 'image' (column 'img') text is not a JSON list of numbers: '1 2'"
    }


def test_vectordb_load_fails_a_csv_row_whose_vector_text_is_not_json_naming_the_column(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "input.csv"
    vectors = {"a": "[1.0, 2.0, 3.0]", "b": "1;2;3", "c": "[1,2,", "d": "[0.5, 0.25, 4]"}
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "values", "title"])
        writer.writerows([i, text, f"title {i}"] for i, text in vectors.items())
    argv = ["--input", str(path), "--uri", grpc_server.uri, "--on-error", "report"]
    assert main(argv) == 1  # rows failed
    out = capsys.readouterr().out
    assert "written:  2 of 4 rows (2 failed)" in out
    assert f"1 x Invalid: {NOT_JSON}'1;2;3'" in out
    assert f"1 x Invalid: {NOT_JSON}'[1,2,'" in out
    arrived = grpc_server.arrived()
    assert arrived.ids() == {"a", "d"}
    assert np.frombuffer(arrived.vector("d").values_f32, dtype="<f4").tolist() == json.loads(vectors["d"])
    assert arrived.vector("a").metadata == {"title": "title a"}
