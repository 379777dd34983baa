"""A ``Chunk`` whose metadata has a key holding a lone surrogate (``{"\\ud800x": 1}``: Python text may hold
one, UTF-8 cannot) fails alone, and its letter goes to the ``dead_letter_path`` file with the key as JSON's
escape. The file's writer escaped such values but not keys: orjson refused the key and the job stopped
(``TypeError: str is not valid UTF-8: surrogates not allowed [while running 'WriteToVectorDB/Dead letters as
JSON']``). The line read back (``json.loads``, or ``vectordb-beam``'s reader) gives the same key.
"""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
from apache_beam.ml.rag.types import Chunk, Content, Embedding
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB
from vectordb.beam.load import parse_line
from vectordb.connector import rows_from_letters

KEY = "\ud800x"


def _chunk(cid: str, metadata: dict) -> Chunk:
    return Chunk(
        id=cid,
        content=Content(text="t"),
        metadata=metadata,
        embedding=Embedding(dense_embedding=[1.0, 2.0, 3.0]),
    )


def test_a_letter_with_a_lone_surrogate_key_is_written_and_read_back(
    rest_server: ServerHandle, tmp_path: Path
) -> None:
    chunks = [_chunk("good", {"k": 1}), _chunk("bad", {KEY: 1, "nested": {"\udc01": "\udc00v"}})]
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = (
            pipeline
            | beam.Create(chunks, reshuffle=False)
            | WriteToVectorDB(
                rest_server.uri, api_key="k", on_error="dead_letter", dead_letter_path=str(tmp_path)
            )
        )
    assert [key for _, key in rest_server.arrived().final] == ["good"]
    lines = [line for f in sorted(tmp_path.glob("dead-letters*")) for line in f.read_text().splitlines()]
    (line,) = lines
    assert '"\\ud800x":1' in line
    for letter in (json.loads(line), parse_line("letters.jsonl", line.encode())):  # as vectordb-beam reads it
        assert (letter["id"], letter["error_type"]) == ("bad", "Invalid")
        row = rows_from_letters(letter)
        assert (row[KEY], row["nested"]) == (1, {"\udc01": "\udc00v"})
