"""Arrow text that is not valid UTF-8 where the rows' reader is not the first to read it: the embedding
stage's text column, and dead letters as dicts (Beam's failed output, an input mixing Arrow batches and
dicts). Each raised ``UnicodeDecodeError`` out of the write before."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.embedding.fixtures import embedding_options, embeddings_server
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import ServerHandle, start_server
from vectordb.beam import WriteToVectorDB
from vectordb.connector import connect

__all__ = ["embeddings_server"]  # fixture, used by name

VECTOR = [1.0, 2.0, 3.0, 4.0]
REASON = "column 'title': text is not valid UTF-8"
_LETTERS: list[dict[str, Any]] = []


def raw_text(values: list[bytes | None]) -> pa.Array:
    return pa.array(values, pa.binary()).view(pa.string())


@pytest.fixture
def pinecone() -> Iterator[ServerHandle]:
    with start_server("grpc") as server:
        yield server


def stored(server: ServerHandle) -> set[str]:
    return {vid for (_, vid) in server.arrived().final}


def test_a_text_to_embed_not_utf8_fails_its_row_unsent(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    table = pa.table({"id": ["a", "b", "c"], "text": raw_text([b"hello", b"caf\xe9", b"world"])})
    with connect(pinecone.uri, on_error="report", **embedding_options(embeddings_server)) as client:
        report = client.write(table)
    assert [(f.ids, f.error) for f in report.failures] == [
        (("b",), "text not embedded: column 'text': text is not valid UTF-8")
    ]
    assert (report.written, report.embedded) == (2, 2)
    assert stored(pinecone) == {"a", "c"}


def test_dead_letters_of_an_input_mixing_arrow_and_dicts(pinecone: ServerHandle) -> None:
    batch = pa.record_batch(
        {"id": ["a", "b"], "values": [VECTOR] * 2, "title": raw_text([b"doc", b"caf\xe9"])}
    )
    data = [batch, {"id": "c", "values": VECTOR}]
    with connect(pinecone.uri, dimension=4, on_error="report") as client:
        report = client.write(data)
        letters = client.dead_letters(data, report)
    assert letters == [
        {
            "id": "b",
            "error": REASON,
            "error_type": "Invalid",
            "retryable": False,
            "attempts": 0,
            "values": VECTOR,
            "title": b"caf\xe9",  # the row's own bytes
        }
    ]
    assert stored(pinecone) == {"a", "c"}


def _collect(letter: dict[str, Any]) -> None:
    _LETTERS.append(letter)  # a module function: the runner pickles it by name, so the list is this one


def test_beams_failed_output_holds_the_row(pinecone: ServerHandle) -> None:
    batch = pa.record_batch(
        {"id": ["a", "b"], "values": [VECTOR] * 2, "title": raw_text([b"doc", b"caf\xe9"])}
    )
    _LETTERS.clear()
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        result = (
            pipeline
            | beam.Create([batch], reshuffle=False)
            | WriteToVectorDB(pinecone.uri, dimension=4, on_error="report")
        )
        _ = result.failed | beam.Map(_collect)
    (letter,) = _LETTERS
    assert (letter["id"], letter["error"], letter["title"]) == ("b", REASON, b"caf\xe9")
    assert stored(pinecone) == {"a"}
