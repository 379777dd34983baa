"""``vectordb-load`` refuses what needs no Spark before it starts Spark (40-90 s on a busy machine): the
embedded default without Milvus Lite, ``--on-error dead_letter`` without its folder, an ``--input`` that
matches nothing."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from tests.unit.spark_cli import fake_java, refuse_spark
from vectordb.spark import load

REAL_FIND_SPEC = importlib.util.find_spec


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every refusal here comes before Spark; a Java is there, as the checks need one."""
    refuse_spark(monkeypatch, tmp_path)
    if not (os.environ.get("JAVA_HOME") or load.shutil.which("java")):
        monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path.parent / f"{tmp_path.name}-jdk")))


def test_the_embedded_default_without_milvus_lite_is_refused_before_spark(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name.partition(".")[0] == "milvus_lite" else REAL_FIND_SPEC(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert load.main(["--sample", "10", "--dim", "4"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "vectordb-load: MissingExtra: the embedded default needs Milvus Lite (milvus-lite missing): "
        "pip install 'vectordb-connector[milvus]' (--debug shows the trace)"
    ]
    assert list(tmp_path.iterdir()) == []  # no ./vectors.db left behind


def test_dead_letters_without_their_folder_name_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        load.main(["--input", "rows.csv", "--on-error", "dead_letter"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "vectordb-load: error: --on-error dead_letter writes failed rows to files: give --dead-letter-path DIR"
    )


def test_dead_letters_with_the_folder_as_an_option_pass_the_flags() -> None:
    args = load.parse_args(
        ["--input", "x.csv", "--on-error", "dead_letter", "--option", "dead_letter_path=dl"]
    )
    assert args.on_error == "dead_letter"


def test_an_input_that_matches_nothing_is_refused_before_spark(capsys: pytest.CaptureFixture[str]) -> None:
    assert load.main(["--input", "nothing*.parquet", "--uri", "qdrant://localhost:6333/docs"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "vectordb-load: ConfigError: --input: nothing matches 'nothing*.parquet' (--debug shows the trace)"
    ]
