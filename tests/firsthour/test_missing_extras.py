"""A command whose extra is not installed says which to install, in one line, and exits with 2.

The installed console scripts run with their extra's package hidden, as where it was never installed:
a ``sitecustomize`` on ``PYTHONPATH`` makes Python's path finder find nothing under that name (so
``importlib.util.find_spec`` answers ``None`` and an import raises ``ModuleNotFoundError``, as they do
without the package).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(sys.executable).parent  # where the install put the console scripts of this environment

HIDE = """
import importlib.machinery
import os
import sys

HIDDEN = set(os.environ["VDB_TEST_HIDDEN"].split(","))


class HidingPathFinder(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            return None
        return super().find_spec(name, path, target)


sys.meta_path[sys.meta_path.index(importlib.machinery.PathFinder)] = HidingPathFinder
"""

CASES = {  # command: (the package hidden, the one line on stderr)
    "vectordb-beam": (
        "apache_beam",
        "vectordb-beam: apache_beam not installed, which the [beam] extra brings: "
        "pip install 'vectordb-connector[beam]'",
    ),
    "vectordb-load": (
        "pyspark",
        "vectordb-load: pyspark not installed, which the [spark] extra brings: "
        "pip install 'vectordb-connector[spark]'",
    ),
}


def run_without(command: list[str], hidden: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(HIDE)
    env = {**os.environ, "PYTHONPATH": str(shim), "VDB_TEST_HIDDEN": hidden}
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("command", list(CASES))
def test_a_command_without_its_extra_names_it_in_one_line(command: str, tmp_path: Path) -> None:
    script = SCRIPTS / command
    if not script.exists():
        pytest.skip(f"no {command} beside {sys.executable}: install the package (the README's set-up block)")
    hidden, line = CASES[command]
    done = run_without([str(script), "--sample", "10"], hidden, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")
    assert list(tmp_path.iterdir()) == [tmp_path / "shim"]  # nothing started, nothing written


def test_the_spark_jobs_help_needs_no_spark(tmp_path: Path) -> None:
    """``vectordb-load --help`` shows its flags before Spark is installed (the job checks after them)."""
    script = SCRIPTS / "vectordb-load"
    if not script.exists():
        pytest.skip(
            f"no vectordb-load beside {sys.executable}: install the package (the README's set-up block)"
        )
    done = run_without([str(script), "--help"], "pyspark", tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: vectordb-load") and "--dead-letter-path" in done.stdout


def test_python_m_of_the_spark_job_says_the_same(tmp_path: Path) -> None:
    hidden, line = CASES["vectordb-load"]
    done = run_without([sys.executable, "-m", "vectordb.spark.load", "--sample", "10"], hidden, tmp_path)
    assert (done.returncode, done.stderr) == (2, line + "\n")


def test_python_m_of_the_beam_job_says_the_same(tmp_path: Path) -> None:
    hidden, line = CASES["vectordb-beam"]
    done = run_without([sys.executable, "-m", "vectordb.beam.load", "--sample", "10"], hidden, tmp_path)
    assert (done.returncode, done.stderr) == (2, line + "\n")


def test_a_missing_module_that_no_extra_brings_keeps_its_traceback(tmp_path: Path) -> None:
    """Only the extra's own package is reported as a missing extra: a broken install is a bug to see."""
    script = SCRIPTS / "vectordb-beam"
    if not script.exists():
        pytest.skip(
            f"no vectordb-beam beside {sys.executable}: install the package (the README's set-up block)"
        )
    done = run_without([str(script), "--sample", "10"], "orjson", tmp_path)
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.splitlines()[-1] == "ModuleNotFoundError: No module named 'orjson'"


def test_importing_the_beam_sink_without_its_extra_names_it(tmp_path: Path) -> None:
    """``import vectordb.beam`` without apache_beam: a ``MissingExtra`` naming the pip command, as a
    database's driver does, not a bare ``ModuleNotFoundError`` from deep inside."""
    code = "import vectordb.beam"
    done = run_without([sys.executable, "-c", code], "apache_beam", tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "vectordb.connector.errors.MissingExtra: vectordb.beam needs apache_beam: "
        "pip install 'vectordb-connector[beam]'"
    )
