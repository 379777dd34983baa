"""A JSON array, or a pretty-printed JSON file, given to ``vectordb-load``: Spark reads each line as a
broken record (its only column ``_corrupt_record``), and the job blamed the vector column ("no column
'values' in the input (columns: _corrupt_record); see --vector-column"). It says what the file is not,
in ``vectordb-beam``'s words (``connector/cli.py`` ``NOT_JSON_LINES``), before anything is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.spark.load import main


@pytest.mark.parametrize(
    "extra", [[], ["--text-column", "text", "--embed-url", "http://127.0.0.1:9", "--embed-model", "m"]]
)
def test_a_json_array_file_is_named_as_not_json_lines(
    spark: Any,
    grpc_server: ServerHandle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
) -> None:
    path = tmp_path / "rows.json"
    rows = [{"id": f"a{i}", "values": [0.1, 0.2, 0.3, i / 10], "text": "t"} for i in range(5)]
    path.write_text(json.dumps(rows, indent=2))
    assert main(["--input", str(path), "--uri", grpc_server.uri, *extra]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"vectordb-load: ConfigError: --input {str(path)!r}: not JSON Lines (one JSON object a line): it "
        "starts with '[', a JSON array; a JSON array or a pretty-printed file is not read, write one "
        "object a line (--debug shows the trace)"
    )
    assert grpc_server.arrived().final == {}
