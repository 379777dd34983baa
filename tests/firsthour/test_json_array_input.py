"""A JSON array written one object a line (``[``, ``{…},``, ``{…}``, ``]``) given to either command: read a
line at a time, ``vectordb-load`` wrote both objects and failed ``[`` and ``]`` as garbage rows, and
``vectordb-beam`` wrote the last object only, although the README says both refuse a JSON array. Both now
refuse a JSON file whose first non-blank character is ``[`` (``connector/cli.py`` ``refuse_json_array``),
naming it, before Spark or the pipeline starts: exit 2, nothing written. A failed row without an id shows as
"(no id)" in ``on_error=fail``'s "first ids", not "None"."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from vectordb.connector.errors import ConfigError, WriteFailed
from vectordb.connector.policy import enforce
from vectordb.connector.report import BatchFailure, WriteReport

ONE_A_LINE = '[\n{"id":"a","values":[1.0,2.0]},\n{"id":"b","values":[3.0,4.0]}\n]\n'
ADVICE = (
    "not JSON Lines (one JSON object a line): it starts with '[', a JSON array; a JSON array or a "
    "pretty-printed file is not read, write one object a line"
)


def refusal(path: Path) -> str:
    return f"--input {str(path)!r}: {ADVICE}"


@pytest.mark.parametrize(
    "text", [ONE_A_LINE, "\ufeff  \n\n [{}]", " " * 10_000 + "\n[", '[{"id": "a", "values": [1.0]}]']
)
def test_a_file_that_starts_with_a_bracket_is_refused(text: str) -> None:
    from vectordb.connector.cli import refuse_json_array

    with pytest.raises(ConfigError) as caught:
        refuse_json_array("rows.json", io.BytesIO(text.encode()))
    assert str(caught.value) == f"--input 'rows.json': {ADVICE}"


@pytest.mark.parametrize("text", ['{"id": "[a", "values": [1.0]}\n', "", "  \n", '{\n  "id": "a"\n}'])
def test_json_lines_or_an_empty_file_pass(text: str) -> None:
    from vectordb.connector.cli import refuse_json_array

    refuse_json_array("rows.json", io.BytesIO(text.encode()))


def test_vectordb_load_refuses_it_before_spark(tmp_path: Path) -> None:
    from vectordb.connector.backends.registry import canonical_uri
    from vectordb.spark.load import check_before_spark, parse_args

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_text('{"id": "x", "values": [1.0, 2.0]}\n')
    (folder / "b.json").write_text(ONE_A_LINE)
    for given, named in ((folder / "b.json", folder / "b.json"), (folder, folder / "b.json")):
        args = parse_args(["--input", str(given), "--uri", str(tmp_path / "load.db")])
        args.uri = canonical_uri(args.uri)
        with pytest.raises(ConfigError) as caught:
            check_before_spark(args)  # load() calls it before session()
        assert str(caught.value) == refusal(named)


def test_vectordb_beam_refuses_it_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vectordb.beam.load import main

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "rows.json"
    path.write_text(ONE_A_LINE)
    for flags in ([], ["--dead_letters", str(tmp_path / "dl")]):
        assert main(["--input", str(path), "--uri", str(tmp_path / "beam.db"), *flags]) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last == f"vectordb-beam: ConfigError: {refusal(path)} (--debug shows the trace)"
    assert not (tmp_path / "beam.db").exists() and not (tmp_path / "dl").exists()


def test_a_failed_row_without_an_id_is_named_no_id() -> None:
    failure = BatchFailure(ids=(None, "b"), error="the line is not JSON", error_type="Invalid")
    with pytest.raises(WriteFailed) as caught:
        enforce(WriteReport(failed=2, failures=[failure]), "fail", "target")
    assert "2 of 2 rows failed (first ids: (no id), b);" in str(caught.value)


def test_vectordb_beam_refuses_a_pretty_printed_file_whatever_gives_the_dimension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vectordb.beam.load import main
    from vectordb.connector.cli import NOT_JSON_LINES

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "pretty.json"
    path.write_text('{\n  "id": "a",\n  "values": [1.0, 2.0]\n}\n')
    assert main(["--input", str(path), "--uri", str(tmp_path / "beam.db"), "--dim", "2"]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        last
        == f"vectordb-beam: ConfigError: --input {str(path)!r}: {NOT_JSON_LINES} (--debug shows the trace)"
    )
    assert not (tmp_path / "beam.db").exists()
