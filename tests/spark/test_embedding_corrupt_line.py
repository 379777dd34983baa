"""``vectordb-load --text-column`` with a JSON Lines line that is not UTF-8: Spark reads the text of that line
as null and hands the line over in ``_corrupt_record``; the row fails with the documented reason for the
line (``column '_corrupt_record': text is not valid UTF-8; Spark could not parse the line``), as it does
without ``--text-column``. The embedding stage failed it as ``no text in column 'text' and no vector``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.embedding.fixtures import embeddings_server
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

__all__ = ["embeddings_server"]

# the key through --embed-api-key-env (the command refuses --option embed_api_key=KEY: a key in a command line
# shows in ps), its variable set at import, before any JVM starts: the data source's driver code runs in a
# Python worker the JVM started, which sees only the variables set before it
os.environ.setdefault("VDB_TEST_EMBED_KEY", DEFAULT_KEY)

REASON = "Invalid: column '_corrupt_record': text is not valid UTF-8; Spark could not parse the line"


def test_vectordb_load_fails_a_line_that_is_not_utf8_for_its_line(
    spark: Any,
    embeddings_server: EmbeddingsServer,
    milvus_lite: LiteServer,
    collection_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from vectordb.spark.load import main

    source = tmp_path / "docs.jsonl"
    source.write_bytes(b'{"id": "a", "text": "fine"}\n{"id": "b", "text": "bad \xff\xfe bytes"}\n')
    letters = tmp_path / "letters"
    argv = ["--input", str(source), "--uri", milvus_lite.uri, "--collection", collection_name]
    argv += ["--text-column", "text", "--embed-url", embeddings_server.url, "--embed-model", "test-embed-64"]
    argv += ["--embed-api-key-env", "VDB_TEST_EMBED_KEY"]  # set at import, above
    argv += ["--on-error", "dead_letter", "--dead-letter-path", str(letters)]
    assert main(argv) == 1
    assert "written:  1 of 2 rows (1 failed)" in capsys.readouterr().out
    assert [r["error"] for r in spark.read.parquet(str(letters)).collect()] == [REASON]
