"""vectordb-load from JSON lines where one row's vector is nested wrongly: a flat multi-vector among lists
of lists, or a nested dense vector among flat ones. Spark infers one type from every row, so that row made
the whole column ``array<string>``, which the writer refused on the driver ("column 'c' has type
list<element: string>; expected a list of lists of floats", exit 2, nothing stored). Now that column is
read as text, and the bad row fails alone with its reason; the other rows are written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.servers import qdrant_grpc
from tests.servers.fixtures import ServerHandle
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.spark.load import main

qdrant_session_server = qdrant_grpc.qdrant_session_server  # the fixture

BAD = 2


def jsonl(directory: Path, bad: dict[str, Any]) -> Path:
    """4 rows of a dense vector ``t`` and a multi-vector ``c``; row ``BAD`` takes ``bad``'s values."""
    path = directory / "rows.jsonl"
    with path.open("w") as f:
        for i in range(4):
            row = {"id": i, "t": [1.5, 2, 3, 4], "c": [[1.5, 2, 3], [4, 5, 6]]}
            f.write(json.dumps({**row, **(bad if i == BAD else {})}) + "\n")
    return path


def test_a_flat_multi_vector_among_lists_of_lists_fails_its_row_alone(
    spark: Any, qdrant_session_server: QdrantServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = jsonl(tmp_path, {"c": [1.5, 2, 3]})
    assert dict(spark.read.json(str(path)).dtypes)["c"] == "array<string>"  # what Spark infers
    argv = ["--input", str(path), "--uri", qdrant_session_server.uri("grpc", "load_jsonl_flat_multi")]
    argv += ["--option", "vector_columns=title:t", "--option", "multi_vector_columns=colbert:c"]
    argv += ["--option", "vector_dimensions=title:4,colbert:3", "--on-error", "report"]
    assert main(argv) == 1  # rows failed
    out = capsys.readouterr().out
    assert "written:  3 of 4 rows (1 failed)" in out
    reason = "multi-vector 'colbert' (column 'c') text is not a JSON list of lists of numbers: '[1.5, 2, 3]'"
    assert f"1 x Invalid: {reason}" in out
    client = qdrant_session_server.client(prefer_grpc=True)
    try:
        stored = client.retrieve("load_jsonl_flat_multi", [0, 1, 2, 3], with_vectors=True)
    finally:
        client.close()
    assert {r.id: r.vector for r in stored} == {
        i: {"title": [1.5, 2, 3, 4], "colbert": [[1.5, 2, 3], [4, 5, 6]]} for i in (0, 1, 3)
    }


def test_a_nested_dense_vector_among_flat_ones_fails_its_row_alone(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = jsonl(tmp_path, {"t": [[1.5, 2, 3, 4]]})
    assert dict(spark.read.json(str(path)).dtypes)["t"] == "array<string>"
    argv = ["--input", str(path), "--uri", grpc_server.uri, "--vector-column", "t"]
    argv += ["--option", "metadata_columns=id", "--option", "dimension=4", "--on-error", "report"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "written:  3 of 4 rows (1 failed)" in out
    assert "1 x Invalid: column 't': vector text is not a JSON list of numbers: '[[1.5, 2, 3, 4]]'" in out
    assert {vid for (_, vid) in grpc_server.arrived().final} == {"0", "1", "3"}
