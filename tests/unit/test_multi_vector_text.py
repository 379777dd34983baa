"""A multi-vector given as text (a CSV's only kind) is read strictly as a JSON list of lists of numbers, as
a dense vector's text is: a text with trailing text, a cut one or a flat list fails its row with that
reason and an excerpt, naming the multi-vector and its column, and the row's dead letter keeps the text.
``vectordb-load`` read such text with Spark's ``from_json``, which read the first JSON value and dropped
what followed (``[[1,2,3],[4,5,6]] [[7,8,9]]`` stored as two vectors and reported written) and made a text
it could not read null ("multi-vector 'colbert' is null", the letter's ``tok`` None)."""

from __future__ import annotations

import csv
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer
from tests.spark.conftest import spark
from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow
from vectordb.spark.load import main

__all__ = ["qdrant_session_server", "spark"]  # fixtures, used by name

qdrant_session_server = qdrant_grpc.qdrant_session_server

NOT_JSON = "multi-vector 'colbert' (column 'tok') text is not a JSON list of lists of numbers: "


def reasons(prepared: Any) -> dict[str, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


def test_multi_vector_text_is_read_strictly_and_other_text_fails_its_row() -> None:
    texts = [
        "[[1,2,3],[4,5,6]]",
        "[[1,2,3],[4,5,6]] [[7,8,9]]",
        "[[1,2,3],[4,5,6],[7,8",
        "[1.5,2,3]",
        '[[1,2,3],{"a":1}]',
        "[[1,2,3],[true,5,6]]",
        "[[1,2,3],[4,null,6]]",
        None,
        " ",
        "[[0.5, 0.25, 4]]",
    ]
    batch = pa.record_batch({"id": [f"r{i}" for i in range(len(texts))], "tok": texts})
    spec = ColumnSpec(multi_vector_columns=(("colbert", "tok"),))
    prepared = prepare_arrow(batch, spec, RowRules(), DimensionState(named={"colbert": 3}))
    assert reasons(prepared) == {
        **{f"r{i}": NOT_JSON + repr(texts[i]) for i in range(1, 7)},
        "r7": "multi-vector 'colbert' is null",
        "r8": "multi-vector 'colbert' is null",
    }
    (sent,) = prepared.batches
    assert sent.ids == ["r0", "r9"]
    multi = sent.multi_vectors["colbert"]
    np.testing.assert_array_equal(multi.values, np.array([[1, 2, 3], [4, 5, 6], [0.5, 0.25, 4]], np.float32))
    assert multi.offsets.tolist() == [0, 2, 3]


def test_the_checks_judge_a_text_multi_vectors_shape_as_an_arrow_lists() -> None:
    texts = ["[[1,2,3],[4,5]]", "[]", "[[1,2,3],[]]", "[[1,2]]"]
    batch = pa.record_batch({"id": ["a", "b", "c", "d"], "tok": texts})
    spec = ColumnSpec(multi_vector_columns=(("colbert", "tok"),))
    prepared = prepare_arrow(batch, spec, RowRules(), DimensionState(named={"colbert": 3}))
    assert reasons(prepared) == {
        "a": "multi-vector 'colbert' holds vectors of different lengths (2 to 3)",
        "b": "multi-vector 'colbert' is empty",
        "c": "multi-vector 'colbert' holds an empty vector",
        "d": "multi-vector 'colbert' holds 2-dimensional vectors; expected 3",
    }


def test_vectordb_load_fails_a_csv_row_whose_multi_vector_text_is_not_json_and_keeps_its_text(
    spark: Any, qdrant_session_server: QdrantServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {
        0: ("[1,2,3,4]", "[[1,2,3],[4,5,6]]"),
        1: ("[1,2,3,4]", "[[1,2,3],[4,5,6]] [[7,8,9]]"),
        2: ("[1,2,3,4]", "[[1,2,3],[4,5,6],[7,8"),
        3: ("[1,2,3,4] [5]", "[[1,2,3]]"),
    }
    ids = {i: str(uuid.UUID(int=i)) for i in rows}
    path = tmp_path / "named.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "t", "tok"])
        writer.writerows([ids[i], t, tok] for i, (t, tok) in rows.items())
    letters = tmp_path / "letters"
    argv = ["--input", str(path), "--uri", qdrant_session_server.uri("grpc", "load_csv_multi_text")]
    argv += ["--option", "vector_columns=title:t", "--option", "multi_vector_columns=colbert:tok"]
    argv += ["--option", "vector_dimensions=title:4,colbert:3", "--on-error", "dead_letter"]
    argv += ["--dead-letter-path", str(letters)]
    assert main(argv) == 1  # rows failed
    out = capsys.readouterr().out
    assert "written:  1 of 4 rows (3 failed)" in out
    client = qdrant_session_server.client(prefer_grpc=True)
    try:
        stored = client.retrieve("load_csv_multi_text", list(ids.values()), with_vectors=True)
    finally:
        client.close()
    assert [(r.id, r.vector) for r in stored] == [
        (ids[0], {"title": [1, 2, 3, 4], "colbert": [[1, 2, 3], [4, 5, 6]]})
    ]
    held = {r["id"]: (r["tok"], r["error"]) for r in pq.read_table(letters).to_pylist()}
    assert held == {
        ids[1]: (rows[1][1], "Invalid: " + NOT_JSON + repr(rows[1][1])),
        ids[2]: (rows[2][1], "Invalid: " + NOT_JSON + repr(rows[2][1])),
        ids[3]: (
            rows[3][1],
            "Invalid: vector 'title' (column 't') text is not a JSON list of numbers: '[1,2,3,4] [5]'",
        ),
    }
