"""``vectordb-beam`` on a new user's first inputs: vectors as JSON text (which the README accepts) give the
new collection its dimension, as they do in ``vectordb-load``; a mistyped vector column is one line naming
the file's columns (it was an IndexError's trace and exit 1); a JSON array file is named as not JSON Lines
(it was "no vector … give --dim N"); a misspelt connector option is suggested as ``--option``; an option
given without ``=`` is named; a dimension mismatch says which flags write elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vectordb.beam.load import input_dimension, parse_args
from vectordb.connector.cli import option_pairs, run_command
from vectordb.connector.errors import ConfigError, DimensionMismatch


def test_parquet_vectors_as_json_text_give_the_dimension(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "values": ["[1,2,3,4]", "[1,2,3,4]", "[1,2]"]}), path)
    assert input_dimension(str(path), "parquet", "values") == 4


def test_json_lines_vectors_as_json_text_give_the_dimension(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"id": i, "values": "[1, 2, 3]"}) + "\n" for i in range(3)))
    assert input_dimension(str(path), "jsonl", "values") == 3


def test_a_missing_vector_column_names_the_files_columns(tmp_path: Path) -> None:
    path = tmp_path / "l.parquet"
    pq.write_table(pa.table({"id": ["a"], "values": [[1.0, 2.0]], "title": ["x"]}), path)
    with pytest.raises(ConfigError) as caught:
        input_dimension(str(path), "parquet", "vec")
    assert str(caught.value) == (
        f"--input {path}: no column 'vec' (columns: id, values, title); name the vectors' column with "
        "--option vector_column=NAME"
    )


def test_a_json_array_file_is_named_as_not_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{"id": i, "values": [1, 2, 3]} for i in range(3)], indent=2))
    with pytest.raises(ConfigError, match=r"rows\.json: not JSON Lines \(one JSON object a line\)"):
        input_dimension(str(path), "jsonl", "values")
    one_line = tmp_path / "one.json"
    one_line.write_text(json.dumps([{"id": 1, "values": [1, 2, 3]}]))
    with pytest.raises(ConfigError, match="not JSON Lines"):
        input_dimension(str(one_line), "jsonl", "values")


def test_a_misspelt_connector_option_is_suggested_as_an_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--sample", "3", "--namespce", "docs"])
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("error: unrecognized argument --namespce: did you mean --option namespace=VALUE?")
    )


def test_an_option_name_without_a_value_is_named() -> None:
    with pytest.raises(ConfigError, match=r"^--option create has no value: give --option create=VALUE$"):
        option_pairs(["create"])
    with pytest.raises(ConfigError, match=r"not shown: it may be a key"):
        option_pairs(["sk-not-an-option-name"])


def test_a_dimension_mismatch_names_the_flags_that_write_elsewhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def job() -> int:
        raise DimensionMismatch("dimension mismatch: collection vectors has dim 4, data has 8")

    assert run_command("vectordb-beam", job, debug=False) == 2
    assert capsys.readouterr().err.strip() == (
        "vectordb-beam: DimensionMismatch: dimension mismatch: collection vectors has dim 4, data has 8; write "
        "to another collection (--collection NAME) or database (--uri) (--debug shows the trace)"
    )
