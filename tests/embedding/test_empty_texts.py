"""A row whose text is an empty string fails alone, before anything is sent: an OpenAI-compatible server
refuses a whole request for one empty input, and isolating each one by splitting spent the isolation
budget (with every fifth text empty in 10,000 rows, 7,913 rows failed instead of 2,000)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.embedding.fixtures import embedding_options, words
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect

REASON = "text not embedded: column 'text' holds an empty string, which embedding servers refuse"


@pytest.mark.parametrize("kind", ["arrow", "dicts"])
def test_empty_texts_fail_alone_unsent_and_every_other_row_is_written(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle, kind: str
) -> None:
    n = 3000
    texts = ["" if i % 5 == 0 else words(i) for i in range(n)]
    texts[7] = "   "  # spaces are a text: sent, embedded, written
    ids = [f"d{i}" for i in range(n)]
    data: object = (
        pa.table({"id": ids, "text": texts})
        if kind == "arrow"
        else [{"id": id_, "text": text} for id_, text in zip(ids, texts, strict=True)]
    )
    with connect(
        pinecone.uri,
        **embedding_options(embeddings_server),
        dimension=64,
        on_error="report",
    ) as client:
        report = client.upsert(data)
    empty = [i for i in range(n) if i % 5 == 0]
    assert (report.written, report.failed) == (n - len(empty), len(empty))
    assert {(f.error_type, f.error, f.retryable, f.attempts) for f in report.failures} == {
        ("InvalidInput", REASON, False, 0)
    }
    assert [i for f in report.failures for i in f.positions] == empty
    assert set(report.failed_ids) == {f"d{i}" for i in empty}
    # nothing refused, nothing split: the server saw each text once, no empty one among them
    assert set(embeddings_server.stats.statuses) == {200}
    assert embeddings_server.stats.inputs == n - len(empty)
    assert pinecone.arrived().ids() == {f"d{i}" for i in range(n) if i % 5}
