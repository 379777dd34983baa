"""Streaming sketch: Pub/Sub JSON messages → ``WriteToVectorDB``, failed rows → a dead-letter Pub/Sub topic.

Each message is one record, ``{"id": ..., "values": [...], ...metadata}``. Unbounded input is
batched with ``GroupIntoBatches.WithShardedKey`` (up to ``rows_per_batch`` rows, at most
``max_buffering_s`` seconds of waiting), so a quiet topic still writes within seconds. With
``on_error="report"`` a failed row goes to ``result.failed`` and on to the dead-letter topic
instead of failing (and endlessly retrying) the bundle; bad credentials still stop the job.
Needs ``apache-beam[gcp]``; see README.md for the flags.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.utils.secret import GcpSecret

from vectordb.beam import WriteToVectorDB
from vectordb.connector.dead_letters import json_line


class StreamingIngestOptions(PipelineOptions):  # type: ignore[misc]
    @classmethod
    def _add_argparse_args(cls, parser) -> None:  # type: ignore[no-untyped-def]
        # no required=True: Beam parses every PipelineOptions subclass for every pipeline in the process
        parser.add_argument("--subscription", help="projects/P/subscriptions/S")
        parser.add_argument("--dead_letter_topic", help="projects/P/topics/T")
        parser.add_argument("--uri")
        parser.add_argument("--namespace", default=None)
        parser.add_argument(
            "--api_key_secret", help="projects/P/secrets/S/versions/V: each worker fetches the key"
        )


def letter_message(letter: dict[str, Any]) -> bytes:
    """A failed row's letter as a Pub/Sub message, as the sink writes its ``dead_letter_path`` files
    (``json_line``): bytes as base64, so ``rows_from_letters(json.loads(message))`` gives the row back with
    them (``json.dumps(letter, default=str)`` wrote bytes as their Python literal, stored as text when the
    row is written again), and text holding a lone surrogate as JSON's escape."""
    return json_line(letter).encode()


def run(argv: Sequence[str] | None = None) -> None:
    options = PipelineOptions(argv)
    options.view_as(StandardOptions).streaming = True
    args = options.view_as(StreamingIngestOptions)
    sink = WriteToVectorDB(
        args.uri,
        api_key=GcpSecret(args.api_key_secret),  # fetched by each worker: the job never holds the key
        namespace=args.namespace,
        on_error="report",
        rows_per_batch=1000,
        max_buffering_s=2,
    )
    with beam.Pipeline(options=options) as pipeline:
        result = (
            pipeline
            | "Read" >> beam.io.ReadFromPubSub(subscription=args.subscription)
            | "Parse" >> beam.Map(json.loads)
            | "Write" >> sink
        )
        _ = (
            result.failed
            | "As bytes" >> beam.Map(letter_message)
            | "Dead letters" >> beam.io.WriteToPubSub(args.dead_letter_topic)
        )


if __name__ == "__main__":
    run()
