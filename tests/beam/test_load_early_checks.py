"""``vectordb-beam`` into the embedded default without Milvus Lite: one line before the pipeline starts
(it came from a worker once the pipeline ran), and no ``./vectors.db`` left behind."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from vectordb.beam import load

REAL_FIND_SPEC = importlib.util.find_spec


def test_the_embedded_default_without_milvus_lite_is_refused_before_the_pipeline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name.partition(".")[0] == "milvus_lite" else REAL_FIND_SPEC(name, *args, **kwargs)

    def no_pipeline(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the pipeline was built")

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(load, "build", no_pipeline)
    monkeypatch.chdir(tmp_path)
    assert load.main(["--sample", "10", "--dim", "4"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "vectordb-beam: MissingExtra: the embedded default needs Milvus Lite (milvus-lite missing): "
        "pip install 'vectordb-connector[milvus]' (--debug shows the trace)"
    ]
    assert list(tmp_path.iterdir()) == []
