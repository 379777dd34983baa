"""``on_error="dead_letter"`` with unbounded batching is refused with the advice itself: a pip user has no
checkout, so no example folder to be pointed to."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import pytest

from vectordb.beam import WriteToVectorDB
from vectordb.connector.errors import ConfigError


def test_the_refusal_says_what_to_do_instead_without_naming_a_file_of_the_checkout(tmp_path: Path) -> None:
    sink = WriteToVectorDB(
        str(tmp_path / "vectors.db"),
        on_error="dead_letter",
        dead_letter_path=str(tmp_path / "dl"),
        batching="unbounded",
    )
    with pytest.raises(ConfigError) as raised, beam.Pipeline() as pipeline:
        _ = pipeline | beam.Create([{"id": "a", "values": [0.1, 0.2]}]) | sink
    message = str(raised.value)
    assert "examples/" not in message and "README" not in message
    assert 'on_error="report"' in message and "result.failed" in message
    assert "WriteToPubSub" in message
