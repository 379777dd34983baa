"""``vectordb-load --no-create`` into a missing collection: one line that says to drop the flag (the
command's way to create it), not the API's ``set create=true``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from vectordb.spark.load import main

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer


def test_no_create_into_a_missing_collection_names_the_flag(
    spark: Any, milvus_lite: LiteServer, collection_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--sample", "20", "--dim", "4", "--uri", milvus_lite.uri, "--collection", collection_name]
    assert main([*argv, "--no-create"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"vectordb-load: ConfigError: milvus collection {collection_name!r} does not exist"
    )
    assert line.endswith("; run without --no-create to create it (--debug shows the trace)")
    assert "create=true" not in line
    assert not milvus_lite.client.has_collection(collection_name)
