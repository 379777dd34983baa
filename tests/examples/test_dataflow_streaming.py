"""``examples/dataflow/streaming.py`` sends each failed row's letter to a Pub/Sub topic as JSON. With
``json.dumps(letter, default=str)`` a bytes value became its Python literal (``"b'\\x00\\x01'"``), so a
re-driven letter stored that text. Its ``letter_message`` runs here on the letters of a real sink (Beam's
DirectRunner, the project's Pinecone REST test server), and the message gives the row back with its bytes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

beam = pytest.importorskip("apache_beam")

from apache_beam.testing.util import assert_that  # noqa: E402

from tests.servers.fixtures import start_server  # noqa: E402
from tests.servers.pinecone_rules import dense  # noqa: E402
from vectordb.beam import WriteToVectorDB  # noqa: E402
from vectordb.connector import rows_from_letters  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dataflow" / "streaming.py"
BLOB = b"\x00\x01\xff"


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dataflow_streaming_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_letter_sent_as_a_message_gives_its_row_back_with_its_bytes() -> None:
    streaming = example()
    bad = {"id": "b", "values": [0.1, 0.2], "metadata": {"blob": BLOB, "title": "t"}}  # 2 of 4 dimensions
    rows = [{"id": "a", "values": [0.1, 0.2, 0.3, 0.4]}, bad]

    def the_row_comes_back(messages: list[bytes]) -> None:
        (message,) = messages
        letter: dict[str, Any] = json.loads(message)
        assert "dimension" in str(letter["error"]), letter
        row = rows_from_letters(letter)
        assert row["id"] == "b" and row["values"] == pytest.approx([0.1, 0.2])
        assert row["metadata"] == {"blob": BLOB, "title": "t"}, (message, row)

    with start_server("rest", index=dense(4)) as server, beam.Pipeline() as pipeline:
        result = pipeline | beam.Create(rows) | WriteToVectorDB(server.uri, api_key="k", on_error="report")
        messages = result.failed | beam.Map(streaming.letter_message)
        assert_that(messages, the_row_comes_back)
