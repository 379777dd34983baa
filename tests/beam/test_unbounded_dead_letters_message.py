"""``on_error="dead_letter"`` with unbounded input is refused with the advice itself: a pip user has no
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
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    from apache_beam.testing.test_stream import TestStream

    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    stream = TestStream().add_elements([{"id": "a", "values": [0.1, 0.2]}]).advance_watermark_to_infinity()
    with pytest.raises(ConfigError) as raised, beam.Pipeline(options=options) as pipeline:
        _ = pipeline | stream | sink
    message = str(raised.value)
    assert "examples/" not in message and "README" not in message
    assert 'on_error="report"' in message and "result.failed" in message
    assert "WriteToPubSub" in message


def test_bounded_batching_on_a_stream_is_refused_by_the_sink(tmp_path: Path) -> None:
    """``batching="bounded"`` does not make a stream bounded: dead letters (files) are refused by the
    sink, naming on_error, not by Beam's WriteToText with its own error about triggering_frequency."""
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    from apache_beam.testing.test_stream import TestStream

    sink = WriteToVectorDB(
        str(tmp_path / "vectors.db"),
        on_error="dead_letter",
        dead_letter_path=str(tmp_path / "dl"),
        batching="bounded",
    )
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    stream = TestStream().add_elements([{"id": "a", "values": [0.1, 0.2]}]).advance_watermark_to_infinity()
    with (
        pytest.raises(ConfigError, match='option on_error="dead_letter"'),
        beam.Pipeline(options=options) as p,
    ):
        _ = p | stream | sink
