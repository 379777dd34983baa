"""``vectordb-beam``'s summary and exit status come from the sink's outputs (its reports and its refused
rows), not from Metrics counters: the DirectRunner drops the counters of batches ``GroupIntoBatches``
flushes, so ``--batching unbounded`` said "written: 0 of 0 rows (0 failed)" and exited 0 while rows failed."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main

GOOD, SHORT = 50, 5


def write_input(path: Path) -> None:
    """50 rows of 4 floats, 5 of 2 (each fails at the server's dimension), one line that is not JSON
    (refused while reading, before any batch)."""
    lines = [json.dumps({"id": f"g{i}", "values": [0.5, 0.25, 1.0, float(i + 1)]}) for i in range(GOOD)]
    lines += [json.dumps({"id": f"short{i}", "values": [1.0, 2.0]}) for i in range(SHORT)]
    lines.append("{not json")
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("batching", ["unbounded", "bounded"])
def test_the_summary_and_status_count_every_row_whatever_the_batching(
    batching: str, rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rest_server.script(dimension=4)
    source = tmp_path / "in.jsonl"
    write_input(source)
    argv = [f"--input={source}", f"--uri={rest_server.uri}", f"--batching={batching}", "--no_create"]
    status = main([*argv, "--option=on_error=report"])  # the default runner, whose counters lose rows
    out = capsys.readouterr().out
    assert len(rest_server.arrived().final) == GOOD
    assert f"written:  {GOOD} of {GOOD + SHORT + 1} rows ({SHORT + 1} failed)" in out
    requests = len(rest_server.arrived().requests)
    assert requests and f"traffic:  {requests} requests, 0 retries, 0 throttled" in out
    assert status == 1


def test_with_a_temp_location_the_counts_go_there_and_are_removed(
    rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Workers elsewhere (Dataflow) cannot reach the job's own temporary folder: ``--temp_location`` they can."""
    rest_server.script(dimension=4)
    source = tmp_path / "in.jsonl"
    write_input(source)
    temp = tmp_path / "temp"
    argv = [f"--input={source}", f"--uri={rest_server.uri}", "--batching=unbounded", "--no_create"]
    assert main([*argv, "--option=on_error=report", f"--temp_location={temp}"]) == 1
    assert f"written:  {GOOD} of {GOOD + SHORT + 1} rows ({SHORT + 1} failed)" in capsys.readouterr().out
    assert not [p for p in temp.rglob("*") if p.is_file()]


def test_an_error_in_an_unbounded_write_is_one_line_without_the_runners_traces(
    rest_server: ServerHandle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The BundleBasedDirectRunner (``--batching unbounded``) logs each failed attempt's trace from its
    executor: about 500 lines of stderr around the one line."""
    rest_server.script(dimension=4, api_key="sk-the-right-one")
    source = tmp_path / "in.jsonl"
    write_input(source)
    argv = [f"--input={source}", f"--uri={rest_server.uri}", "--batching=unbounded", "--no_create"]
    monkeypatch.setenv("VDB_TEST_KEY", "sk-another")  # a key is refused in the command line
    assert main([*argv, "--option=on_error=report", "--option=api_key_env=VDB_TEST_KEY"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("vectordb-beam: AuthError: ") and line.endswith("(--debug shows the trace)")
    assert not [
        r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("apache_beam")
    ]
