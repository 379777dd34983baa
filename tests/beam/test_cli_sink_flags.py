"""``vectordb-beam``'s ``--batching`` and ``--check_target`` given as ``--option batching=…`` /
``--option check_target=…`` too: the option counts where the flag was not given, and a flag and an option
that disagree are one line naming both (exit 2). Either option was a raw ``TypeError`` ("got multiple
values for keyword argument"), exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main, parse_args
from vectordb.connector import ConfigError


def write_rows(path: Path, n: int = 5) -> None:
    path.write_text(
        "".join(json.dumps({"id": f"r{i}", "values": [1.0, 2.0, 3.0, float(i)]}) + "\n" for i in range(n))
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], {"batching": "auto", "check_target": False}),
        (["--option=batching=unbounded"], {"batching": "unbounded", "check_target": False}),
        (["--option=check_target=TRUE"], {"batching": "auto", "check_target": True}),
        (["--batching=bounded", "--option=batching=bounded"], {"batching": "bounded", "check_target": False}),
        (["--check_target", "--option=check_target=yes"], {"batching": "auto", "check_target": True}),
        (
            ["--batching=unbounded", "--option=check_target=false"],
            {"batching": "unbounded", "check_target": False},
        ),
    ],
)
def test_an_option_counts_where_its_flag_was_not_given(argv: list[str], expected: dict[str, object]) -> None:
    from vectordb.beam.load import sink_parameters

    args = parse_args(["--sample=1", *argv])[0]
    options = {
        "namespace": "docs",
        **dict(o.split("=", 1)[1].split("=", 1) for o in argv if o.startswith("--option")),
    }
    assert sink_parameters(args, options) == expected
    assert options == {"namespace": "docs"}  # the connector's options, without the sink's parameters


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--batching=bounded", "--option=batching=unbounded"],
            "vectordb-beam: ConfigError: --option batching=unbounded and --batching bounded disagree: give one "
            "of them (--debug shows the trace)",
        ),
        (
            ["--check_target", "--option=check_target=false"],
            "vectordb-beam: ConfigError: --option check_target=false and --check_target disagree: give one "
            "of them (--debug shows the trace)",
        ),
    ],
)
def test_a_flag_and_an_option_that_disagree_are_one_line_and_status_2(
    argv: list[str], line: str, rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    write_rows(source)
    assert main([f"--input={source}", f"--uri={rest_server.uri}", "--dim=4", *argv]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [line] and "writing" not in out
    assert rest_server.arrived().requests == []


def test_a_bad_value_of_either_option_is_a_config_error_naming_it() -> None:
    from vectordb.beam.load import sink_parameters

    args = parse_args(["--sample=1"])[0]
    with pytest.raises(ConfigError, match="batching"):
        sink_parameters(args, {"batching": "sometimes"})
    with pytest.raises(ConfigError, match="check_target"):
        sink_parameters(args, {"check_target": "maybe"})


@pytest.mark.parametrize("option", ["batching=unbounded", "check_target=true"])
def test_the_job_runs_with_either_option(
    option: str, rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rest_server.script(dimension=4)
    source = tmp_path / "in.jsonl"
    write_rows(source)
    assert main([f"--input={source}", f"--uri={rest_server.uri}", "--no_create", f"--option={option}"]) == 0
    assert "written:  5 of 5 rows (0 failed)" in capsys.readouterr().out
    assert len(rest_server.arrived().final) == 5


def test_option_check_target_asks_the_database_before_the_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens there: asked while the pipeline is built, so the job says so before it runs."""
    source = tmp_path / "in.jsonl"
    write_rows(source)
    argv = [f"--input={source}", "--uri=pinecone://127.0.0.1:9", "--no_create", "--option=check_target=true"]
    assert main([*argv, "--option=max_retries=0", "--option=timeout_s=2"]) == 2
    out, err = capsys.readouterr()
    assert "writing" not in out
    (line,) = err.splitlines()
    assert line.startswith("vectordb-beam: ConnectError: ") and "127.0.0.1:9" in line
