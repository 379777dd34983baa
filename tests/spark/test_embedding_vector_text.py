"""Text and a vector column of JSON text through Spark into Milvus Lite, with the embedding options: each
row's vector text is read strictly in the tasks, as without the stage. A row whose text is not a JSON
list of numbers is a dead letter alone, with that reason and its text as given; a row without a vector
text is embedded; a row with one keeps its own. Before, the data source refused the column on the driver
(``holds text (JSON vectors?)``), and vectordb-load parsed it first with Spark's ``from_json``, which
stored ``'[1,2,3,4] [5]'`` cut short and made other text null (its row embedded from its text instead)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from tests.embedding.fixtures import embeddings_server, expected_vectors
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

__all__ = ["embeddings_server"]

MODEL = "test-embed-64"
OWN = [round(0.01 * k, 2) for k in range(64)]
VECTOR_TEXTS = {
    "own": json.dumps(OWN),
    "cut": "[1,2,3,4] [5]",
    "words": "not a vector",
    "null": None,
    "empty": "",
}
BAD = {
    "cut": "column 'values': vector text is not a JSON list of numbers: '[1,2,3,4] [5]'",
    "words": "column 'values': vector text is not a JSON list of numbers: 'not a vector'",
}


def test_a_string_vector_column_is_read_strictly_in_the_tasks(
    spark: Any,
    embeddings_server: EmbeddingsServer,
    milvus_lite: LiteServer,
    collection_name: str,
    tmp_path: Path,
) -> None:
    ids = list(VECTOR_TEXTS)
    texts = [f"the text of row {i}" for i in ids]
    table = pa.table(
        {"id": ids, "text": texts, "values": pa.array(list(VECTOR_TEXTS.values()), type=pa.string())}
    )
    frame = spark.createDataFrame(table)
    assert dict(frame.dtypes)["values"] == "string"
    dead = tmp_path / "dead"
    options = {
        "uri": milvus_lite.uri,
        "collection": collection_name,
        "create": "true",
        "dimension": "64",
        "text_column": "text",
        "embed_url": embeddings_server.url,
        "embed_model": MODEL,
        "embed_api_key": DEFAULT_KEY,
        "on_error": "dead_letter",
        "dead_letter_path": str(dead),
    }
    frame.write.format("vectordb").options(**options).mode("append").save()

    letters = {r["id"]: r.asDict() for r in spark.read.parquet(str(dead)).collect()}
    assert {i: (letter["error"], letter["values"]) for i, letter in letters.items()} == {
        i: (f"Invalid: {why}", VECTOR_TEXTS[i]) for i, why in BAD.items()
    }

    client = milvus_lite.client
    client.load_collection(collection_name)
    got = {row["id"]: row for row in client.get(collection_name, ids=ids, output_fields=["*"])}
    assert set(got) == {"own", "null", "empty"}
    np.testing.assert_array_equal(np.asarray(got["own"]["vector"], dtype=np.float32), np.float32(OWN))
    expected = expected_vectors([texts[ids.index(i)] for i in ("null", "empty")], model=MODEL)
    for k, i in enumerate(("null", "empty")):
        np.testing.assert_array_equal(np.asarray(got[i]["vector"], dtype=np.float32), expected[k])
