"""``vectordb-load --dead-letter-path DIR`` without ``--on-error`` answered after Spark had started (42 s)
in the API's words ("option dead_letter_path ... set on_error="dead_letter""), and a misspelt ``--option``
name only once Spark ran. As ``vectordb-beam``'s ``--dead_letters`` does, the folder now implies
``--on-error dead_letter``, and ``--on-error fail``/``report`` with it is refused in flag words when the
flags are parsed; the ``--option`` pairs are parsed by the connector's parser (``check_options``, which
``load`` calls before ``session()``), so a misspelt name is one line and exit 2 before Spark starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vectordb.connector.backends.registry import canonical_uri
from vectordb.connector.errors import ConfigError
from vectordb.spark import load

WRONG_POLICY = "vectordb-load: error: --dead-letter-path is written only with --on-error dead_letter"


def test_the_folder_implies_dead_letters() -> None:
    assert load.parse_args(["--sample", "5", "--dead-letter-path", "dl"]).on_error == "dead_letter"
    assert load.parse_args(["--sample", "5"]).on_error == "fail"
    assert load.parse_args(["--sample", "5", "--on-error", "report"]).on_error == "report"
    argv = ["--sample", "5", "--on-error", "dead_letter", "--dead-letter-path", "dl"]
    assert load.parse_args(argv).on_error == "dead_letter"


@pytest.mark.parametrize("policy", ["fail", "report"])
def test_another_policy_with_the_folder_is_refused_in_flag_words(
    policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        load.parse_args(["--sample", "5", "--on-error", policy, "--dead-letter-path", "dl"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == WRONG_POLICY


def args(tmp_path: Path, *argv: str) -> load.argparse.Namespace:
    parsed = load.parse_args(["--sample", "5", "--uri", str(tmp_path / "v.db"), *argv])
    parsed.uri = canonical_uri(parsed.uri)
    return parsed


def test_the_options_are_parsed_without_spark(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown option 'batchsize' \(did you mean 'batch_size'\?\)"):
        load.check_options(args(tmp_path, "--option", "batchsize=10"))
    with pytest.raises(ConfigError, match="batch_size"):
        load.check_options(args(tmp_path, "--option", "batch_size=0"))
    with pytest.raises(ConfigError, match="budget_tasks"):  # an option of the Spark adapter's
        load.check_options(args(tmp_path, "--option", "budget_tasks=x"))
    load.check_options(args(tmp_path, "--dead-letter-path", "dl", "--option", "batch_size=10"))
    load.check_options(args(tmp_path, "--option", "report_path=r", "--option", "dimension=8"))


def run(tmp_path: Path, *argv: str) -> tuple[int, list[str], bool]:
    """The command in a process of its own whose only Java records that it was started (Spark starts
    it first) and exits: its status, its stderr's lines, and whether Spark was started."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    started = tmp_path / "java-started"
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\ntouch {started}\nexit 1\n")
    java.chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vectordb.spark.load",
            "--sample",
            "5",
            "--uri",
            str(tmp_path / "v.db"),
            *argv,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stderr.strip().splitlines(), started.exists()


def test_the_command_answers_before_spark_starts(tmp_path: Path) -> None:
    status, lines, spark = run(tmp_path, "--option", "batchsize=10")
    assert (status, spark) == (2, False)
    assert lines == [
        "vectordb-load: ConfigError: invalid options: unknown option 'batchsize' (did you mean 'batch_size'?) "
        "(--debug shows the trace)"
    ]
    status, lines, spark = run(tmp_path, "--on-error", "report", "--dead-letter-path", "dl")
    assert (status, lines[-1], spark) == (2, WRONG_POLICY, False)
    # the same Java is what Spark starts once the flags pass: it exits, and the command says so
    status, lines, spark = run(tmp_path, "--dead-letter-path", "dl")
    assert (status, spark) == (2, True)
    assert not (tmp_path / "dl").exists()
