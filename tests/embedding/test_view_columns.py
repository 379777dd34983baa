"""Arrow's view types (``string_view``, ``binary_view``) in an input the embedding stage reads: a text column
of views is embedded, and a view column beside the text keeps its rows when one text is refused. Arrow has
no ``take`` for views and the stage takes rows, so either input failed the whole write with
``ArrowNotImplementedError``, naming neither a row nor an option, where a write without embedding took them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from tests.embedding.fixtures import EMBED_MODEL, embedding_options, expected_vectors
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect


@pytest.mark.parametrize("texts", [["x", "y", "z"], ["x", "", "z"]], ids=["all-fine", "one-empty"])
def test_view_columns_are_embedded_and_kept(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle, texts: list[str]
) -> None:
    table = pa.table(
        {
            "id": ["a", "b", "c"],
            "text": pa.array(texts, pa.string_view()),
            "note": pa.array(["n1", "n2", "n3"], pa.string_view()),
            "tags": pa.array([["t"], [], ["u", "v"]], pa.list_(pa.string_view())),
        }
    )
    with connect(pinecone.uri, on_error="report", **embedding_options(embeddings_server)) as client:
        report = client.upsert(table)
    fine = [i for i, text in enumerate(texts) if text]
    assert report.written == len(fine), report
    failed = {i: f.error for f in report.failures for i in f.ids}
    assert failed == ({} if len(fine) == 3 else {"b": failed.get("b")}) and all(
        "empty string" in why for why in failed.values()
    ), report
    stored = pinecone.arrived().namespaces[""]
    assert set(stored) == {table["id"][i].as_py() for i in fine}
    wanted = expected_vectors([texts[i] for i in fine], model=EMBED_MODEL)
    for row, i in enumerate(fine):
        record = stored[table["id"][i].as_py()]
        np.testing.assert_array_equal(np.frombuffer(record.values_f32, np.float32), wanted[row])
        assert record.metadata["note"] == f"n{i + 1}" and record.metadata["tags"] == table["tags"][i].as_py()
