"""``vectordb-load --option create=false`` into a missing collection keeps the API's advice (set
``create=true``): it was said as "run without --no-create", a flag the user had not given."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from vectordb.spark.load import main

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer


def test_create_false_into_a_missing_collection_keeps_the_apis_advice(
    spark: Any, milvus_lite: LiteServer, collection_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--sample", "20", "--dim", "4", "--uri", milvus_lite.uri, "--collection", collection_name]
    assert main([*argv, "--option", "create=false"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"vectordb-load: ConfigError: milvus collection {collection_name!r} does not exist"
    )
    assert line.endswith("; set create=true to create it (--debug shows the trace)")
    assert "--no-create" not in line
    assert not milvus_lite.client.has_collection(collection_name)
