"""``python -m vectordb.beam.load`` without Beam: Python imports ``vectordb.beam`` before the job's module,
so the package asks ``exit_if_run_without_extra`` first, which prints the command's one line and exits 2
only while that module is being started with ``-m``."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest

from vectordb.connector.cli import exit_if_run_without_extra

REAL_FIND_SPEC = importlib.util.find_spec
LINE = "vectordb-beam: apache_beam not installed, which the [beam] extra brings: pip install 'vectordb-connector[beam]'"


@pytest.fixture
def without_beam(monkeypatch: pytest.MonkeyPatch) -> None:
    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name.partition(".")[0] == "apache_beam" else REAL_FIND_SPEC(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize(
    "orig_argv",
    [
        ["python", "-m", "vectordb.beam.load", "--sample", "5"],
        ["python", "-X", "importtime", "-mvectordb.beam.load"],
    ],
)
def test_python_m_of_the_beam_job_is_one_line_and_status_2(
    orig_argv: list[str],
    without_beam: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    monkeypatch.setattr(sys, "argv", ["-m", *orig_argv[3:]])  # as runpy sets it while it finds the module
    with pytest.raises(SystemExit) as exited:
        exit_if_run_without_extra("vectordb-beam")
    assert exited.value.code == 2
    assert capsys.readouterr().err == LINE + "\n"


@pytest.mark.parametrize(
    ("argv", "orig_argv"),
    [
        (["-c"], ["python", "-c", "import vectordb.beam"]),  # a user's import: its MissingExtra
        (["-m"], ["python", "-m", "my_job", "-m", "vectordb.beam.load"]),  # another module's -m
        (["job.py"], ["python", "job.py", "-m", "vectordb.beam.load"]),  # a script's own argument
    ],
)
def test_any_other_import_is_left_alone(
    argv: list[str], orig_argv: list[str], without_beam: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    monkeypatch.setattr(sys, "argv", argv)
    assert exit_if_run_without_extra("vectordb-beam") is None


def test_with_beam_installed_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "orig_argv", ["python", "-m", "vectordb.beam.load"])
    monkeypatch.setattr(sys, "argv", ["-m"])
    assert exit_if_run_without_extra("vectordb-beam") is None
