"""Without Milvus Lite installed, starting the embedded default fails with ``MissingExtra`` and leaves
nothing behind: no data folder, no ``connector.lock`` in the user's current directory."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from vectordb.connector.backends.milvus import lite
from vectordb.connector.errors import MissingExtra

REAL_FIND_SPEC = importlib.util.find_spec
# what the line names for each module
DISTRIBUTIONS = {"milvus_lite": "milvus-lite", "pymilvus": "pymilvus", "grpc": "grpcio"}


@pytest.fixture(params=["milvus_lite", "pymilvus", "grpc"])
def without(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    hidden: str = request.param

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name.partition(".")[0] == hidden else REAL_FIND_SPEC(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    return hidden


@pytest.mark.parametrize("uri", ["x.db", "milvus+lite://x.db"])
def test_a_server_that_cannot_start_makes_no_folder(
    without: str, uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MissingExtra, match=r"pip install 'vectordb-connector\[milvus\]'") as raised:
        lite.ensure_server(uri, start_timeout_s=5)
    assert list(tmp_path.iterdir()) == []
    assert DISTRIBUTIONS[without] in str(raised.value)


def test_the_check_alone_says_the_same(without: str) -> None:
    with pytest.raises(MissingExtra, match=DISTRIBUTIONS[without]):
        lite.check_installed()
