"""``vectordb-load --text-column`` with a CSV vector column of JSON text: each row's vector text is read
strictly, as without ``--text-column``. read_input turned the column into ``array<float>`` with Spark's
``from_json``, which read ``'[1,2,3,4] [5]'`` as its first list (the row then failed as 4-dimensional,
its letter holding the list, not the text) and made ``'not a vector'`` null (the row embedded from its
text and stored). The text now goes to the writer as it is; the embedding stage reads it with the Arrow
rows' reader, so each such row fails alone with that reason and its letter keeps the text."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from tests.embedding.fixtures import embeddings_server, expected_vectors
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

__all__ = ["embeddings_server"]

# the key through --embed-api-key-env (the command refuses --option embed_api_key=KEY: a key in a command line
# shows in ps), its variable set at import, before any JVM starts: the data source's driver code runs in a
# Python worker the JVM started, which sees only the variables set before it
os.environ.setdefault("VDB_TEST_EMBED_KEY", DEFAULT_KEY)

MODEL = "test-embed-64"
OWN = [round(0.01 * k, 2) for k in range(64)]
ROWS = {"own": json.dumps(OWN), "cut": "[1,2,3,4] [5]", "words": "not a vector", "none": ""}
NOT_JSON = "column 'values': vector text is not a JSON list of numbers: "


def test_vectordb_load_reads_csv_vector_text_strictly_with_the_text_column(
    spark: Any,
    embeddings_server: EmbeddingsServer,
    milvus_lite: LiteServer,
    collection_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from vectordb.spark.load import main

    source = tmp_path / "docs.csv"
    with source.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text", "values"])
        writer.writerows([i, f"the text of row {i}", vector] for i, vector in ROWS.items())
    letters = tmp_path / "letters"
    argv = ["--input", str(source), "--uri", milvus_lite.uri, "--collection", collection_name]
    argv += ["--text-column", "text", "--embed-url", embeddings_server.url, "--embed-model", MODEL]
    argv += ["--embed-api-key-env", "VDB_TEST_EMBED_KEY"]  # set at import, above
    argv += ["--on-error", "dead_letter", "--dead-letter-path", str(letters)]
    assert main(argv) == 1  # two rows failed
    assert "written:  2 of 4 rows (2 failed)" in capsys.readouterr().out

    kept = {r["id"]: (r["error"], r["values"]) for r in spark.read.parquet(str(letters)).collect()}
    assert kept == {
        "cut": (f"Invalid: {NOT_JSON}'[1,2,3,4] [5]'", "[1,2,3,4] [5]"),
        "words": (f"Invalid: {NOT_JSON}'not a vector'", "not a vector"),
    }
    client = milvus_lite.client
    client.load_collection(collection_name)
    got = {row["id"]: row for row in client.get(collection_name, ids=list(ROWS), output_fields=["*"])}
    assert set(got) == {"own", "none"}
    np.testing.assert_array_equal(np.asarray(got["own"]["vector"], dtype=np.float32), np.float32(OWN))
    np.testing.assert_array_equal(
        np.asarray(got["none"]["vector"], dtype=np.float32),
        expected_vectors(["the text of row none"], model=MODEL)[0],
    )
