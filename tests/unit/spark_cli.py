"""Set-up shared by the ``vectordb-load`` tests that must not start Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vectordb.spark import load


def refuse_spark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Starting Spark fails the test, unless a test says how it fails. Run in an empty folder."""

    def session(master: str | None) -> Any:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(load, "session", session)
    monkeypatch.chdir(tmp_path)


def fake_java(home: Path) -> Path:
    """A ``JAVA_HOME`` whose java exits at once, as a broken or too old Java does."""
    (home / "bin").mkdir(parents=True, exist_ok=True)
    (home / "bin" / "java").write_text("#!/bin/sh\nexit 1\n")
    (home / "bin" / "java").chmod(0o755)
    return home
