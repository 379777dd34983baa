"""``vectordb-load`` with a ``JAVA_HOME`` that holds no Java, or a Java that exits at start (not Java 17+):
the one line that says Spark needs Java 17 or later, and exit status 2, before (or instead of) Spark's
40-line trace and status 1 (the status of failed rows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.spark_cli import fake_java, refuse_spark
from vectordb.spark import load

JAVA_LINE = (
    "vectordb-load runs Spark, which needs Java 17 or later (e.g. apt-get install openjdk-17-jre-headless)"
)


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    refuse_spark(monkeypatch, tmp_path)


def test_a_java_home_without_java_is_one_line_and_status_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nonexistent"))
    with pytest.raises(SystemExit) as exited:
        load.main(["--sample", "10", "--dim", "4", "--uri", "qdrant://localhost:6333/docs"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{JAVA_LINE}; JAVA_HOME={tmp_path / 'nonexistent'} has no bin/java: "
        "set it to a Java 17+ installation, or unset it"
    ]


def test_a_java_that_exits_at_start_is_the_same_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pyspark.errors import PySparkRuntimeError

    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path / "jdk")))

    def session(master: str | None) -> Any:
        raise PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED", messageParameters={})

    monkeypatch.setattr(load, "session", session)
    with pytest.raises(SystemExit) as exited:
        load.main(["--sample", "10", "--dim", "4", "--uri", "qdrant://localhost:6333/docs"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{JAVA_LINE}; Java exited before Spark could start (JAVA_GATEWAY_EXITED)"
    ]


def test_a_java_home_that_holds_a_file_not_executable_is_refused_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = fake_java(tmp_path / "jdk")
    (home / "bin" / "java").chmod(0o644)
    monkeypatch.setenv("JAVA_HOME", str(home))
    with pytest.raises(SystemExit) as exited:
        load.main(["--sample", "10", "--dim", "4", "--uri", "qdrant://localhost:6333/docs"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith(JAVA_LINE + f"; JAVA_HOME={home} has no bin/java")
