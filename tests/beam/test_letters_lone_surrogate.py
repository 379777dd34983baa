"""README: "A text holding a lone surrogate fails alone, unsent (InvalidInput), in Python and Beam". A Beam
Chunk whose text held one stopped the pipeline (``UnicodeEncodeError ... surrogates not allowed`` in
``WriteToVectorDB/Write``): the sink failed the row, then Beam's coder for ``dict[str, Any]`` wrote its
letter as strict UTF-8. Now letters travel in ``ExactCoder``: the row is on ``failed`` with its reason and
its text as given, the other row is stored, and ``dead_letter_path`` files hold the text as JSON's escape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.ml.rag.types import Chunk, Content
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.embedding.fixtures import embeddings_server
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

__all__ = ["embeddings_server"]

LONE = "lone \ud800 surrogate"
LETTERS: list[dict[str, Any]] = []


def _collect(letter: dict[str, Any]) -> None:
    LETTERS.append(letter)  # a module function: pickled by reference, so the in-process runner fills LETTERS


def embed_options(server: EmbeddingsServer) -> dict[str, Any]:
    return {"embed_url": server.url, "embed_model": "test-embed-64", "embed_api_key": DEFAULT_KEY}


def chunks() -> list[Chunk]:
    return [
        Chunk(id="good", index=0, content=Content(text="fine text")),
        Chunk(id="bad", index=1, content=Content(text=LONE)),
    ]


def test_a_chunk_with_a_lone_surrogate_is_a_letter_and_the_other_is_stored(
    embeddings_server: EmbeddingsServer, rest_server: ServerHandle
) -> None:
    LETTERS.clear()
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        result = (
            pipeline
            | beam.Create(chunks(), reshuffle=False)
            | WriteToVectorDB(rest_server.uri, on_error="report", **embed_options(embeddings_server))
        )
        _ = result.failed | beam.Map(_collect)
    (letter,) = LETTERS
    assert (letter["id"], letter["error_type"]) == ("bad", "InvalidInput")
    assert "lone surrogate" in letter["error"]
    assert letter["content"] == LONE  # the text as given, not replaced
    assert set(rest_server.arrived().namespaces.get("", {})) == {"good"}


def test_dead_letter_files_hold_the_text_as_json_escapes_it(
    embeddings_server: EmbeddingsServer, rest_server: ServerHandle, tmp_path: Path
) -> None:
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = (
            pipeline
            | beam.Create(chunks(), reshuffle=False)
            | WriteToVectorDB(
                rest_server.uri,
                on_error="dead_letter",
                dead_letter_path=str(tmp_path),
                **embed_options(embeddings_server),
            )
        )
    lines = [line for f in sorted(tmp_path.glob("dead-letters*")) for line in f.read_text().splitlines()]
    (line,) = lines
    assert "\\ud800" in line
    letter = json.loads(line)
    assert (letter["id"], letter["error_type"]) == ("bad", "InvalidInput")
    assert letter["content"] == LONE
    assert set(rest_server.arrived().namespaces.get("", {})) == {"good"}
