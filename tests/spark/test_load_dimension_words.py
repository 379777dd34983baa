"""``vectordb-load`` into a collection an earlier ``--sample`` made 8-d, with 4-d input: the one line blamed
"option dimension (4)", which the user never set (the command sets it from the input's most common vector
length). It now names the input's vectors, and keeps the advice to write elsewhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from vectordb.spark.load import main

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer


def test_a_mismatch_names_the_inputs_vectors(
    spark: Any,
    milvus_lite: LiteServer,
    collection_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = ["--uri", milvus_lite.uri, "--collection", collection_name]
    assert main(["--sample", "5", "--dim", "8", *target]) == 0
    source = tmp_path / "rows.jsonl"
    source.write_text(
        "".join(json.dumps({"id": f"r{i}", "values": [0.1, 0.2, 0.3, 0.4]}) + "\n" for i in range(5))
    )
    capsys.readouterr()
    assert main(["--input", str(source), *target]) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("vectordb-load: ")]
    assert line.startswith("vectordb-load: DimensionMismatch: the input's vectors (most of length 4): ")
    assert "option dimension" not in line
    assert line.endswith(
        "; write to another collection (--collection NAME) or database (--uri) (--debug shows the trace)"
    )
