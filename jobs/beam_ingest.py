"""A runnable Beam pipeline: Parquet or JSON Lines records → a vector database, dead letters → JSON Lines.

::

    python -m jobs.beam_ingest \\
        --input 'data/embeddings-*.parquet' \\
        --uri pinecone+grpc://my-index-abc123.svc.pinecone.io --option api_key_env=PINECONE_API_KEY \\
        --option namespace=docs --dead_letters out/dead-letters

Every other flag is a standard Beam pipeline option (``--runner``, ``--direct_num_workers``,
``--direct_running_mode``, Dataflow's ``--project``/``--region``/``--temp_location``/
``--setup_file`` …); the runner defaults to the ``DirectRunner``. ``--option key=value``
(repeatable) passes any connector option (the README's options table: ``id_column``, ``vector_column``,
``metadata_columns``, ``batch_size``, ``max_concurrency``, …, and the embedding options for text in:
``--option text_column=text --option embed_url=… --option embed_model=… --option embed_api_key_env=…``);
they are checked before the pipeline starts. Parquet files are read as Arrow tables and written without a per-row step;
JSON Lines records are dicts, vectors as lists. With ``--dead_letters DIR`` rows that fail are
written to ``DIR/dead-letters-*.jsonl`` (``on_error=dead_letter``) and the job succeeds; without
it any failed row fails the job (``on_error=fail``), unless ``--option on_error=report``.
``--api_key_secret SPEC`` gives the key as a Beam secret that each worker fetches (on Dataflow,
Secret Manager), so the job's stored pipeline does not hold it.
At the end the job logs the sink's counters (written, failed, requests, retries, throttled, bytes).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import apache_beam as beam
import orjson
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineResult
from apache_beam.utils.secret import Secret

from vectordb.beam import WriteToVectorDB
from vectordb.connector.errors import ConfigError

__all__ = ["IngestOptions", "build", "main"]

_LOGGER = logging.getLogger("jobs.beam_ingest")


class IngestOptions(PipelineOptions):  # type: ignore[misc]
    # No required=True: Beam parses every PipelineOptions subclass it has seen for every pipeline in
    # the process, so a required flag here would break unrelated pipelines; main() checks instead.
    @classmethod
    def _add_argparse_args(cls, parser: Any) -> None:
        parser.add_argument("--input", default=None, help="file pattern: *.parquet, or JSON Lines (required)")
        parser.add_argument(
            "--input_format",
            choices=("auto", "parquet", "jsonl"),
            default="auto",
            help="default: from the name",
        )
        parser.add_argument(
            "--uri", default=None, help="the target, SCHEME://host[:port][/collection] (required)"
        )
        parser.add_argument(
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a connector option (repeatable)",
        )
        parser.add_argument(
            "--api_key_secret",
            default=None,
            metavar="SPEC",
            help="the key as a Beam secret each worker fetches, e.g. "
            "'type:GcpSecret;version_name:projects/P/secrets/S/versions/latest'",
        )
        parser.add_argument("--dead_letters", default=None, help="directory for dead-letters-*.jsonl")
        parser.add_argument(
            "--batching",
            choices=("auto", "bounded", "unbounded"),
            default="auto",
            help="WriteToVectorDB batching",
        )


def connector_options(ingest: IngestOptions) -> dict[str, Any]:
    """``--option`` pairs as a dict, plus ``--api_key_secret`` and the policy of ``--dead_letters``."""
    options: dict[str, Any] = {}
    for pair in ingest.option:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--option {pair!r}: expected KEY=VALUE")
        options[key.strip()] = value
    if ingest.api_key_secret:
        try:
            options["api_key"] = Secret.parse_secret_option(ingest.api_key_secret)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"--api_key_secret: {exc}") from None
    if ingest.dead_letters:
        options.setdefault("on_error", "dead_letter")
        options.setdefault("dead_letter_path", ingest.dead_letters)
    return options


def input_format(ingest: IngestOptions) -> str:
    if ingest.input_format != "auto":
        return str(ingest.input_format)
    return "parquet" if ingest.input.rstrip("*").endswith((".parquet", ".parq", ".pq")) else "jsonl"


def build(pipeline: beam.Pipeline, ingest: IngestOptions) -> Any:
    """Read, write; returns ``WriteToVectorDB``'s result (``written``, ``failed``)."""
    sink = WriteToVectorDB(ingest.uri, batching=ingest.batching, **connector_options(ingest))
    if input_format(ingest) == "parquet":
        records = pipeline | "Read Parquet" >> beam.io.ReadFromParquetBatched(ingest.input)  # Arrow tables
    else:
        records = (
            pipeline
            | "Read JSON Lines" >> beam.io.ReadFromText(ingest.input)
            | "Parse" >> beam.Map(orjson.loads)
        )
    return records | "Write" >> sink


def log_counters(result: PipelineResult) -> dict[str, int]:
    found = result.metrics().query(MetricsFilter().with_namespace("vectordb"))["counters"]
    totals: dict[str, int] = {}
    for counter in found:
        name = counter.key.metric.name
        totals[name] = totals.get(name, 0) + (counter.committed or counter.attempted or 0)
    _LOGGER.info(
        "vectordb: %s", ", ".join(f"{k} {v:,}" for k, v in sorted(totals.items())) or "nothing written"
    )
    return totals


def main(argv: Sequence[str] | None = None) -> PipelineResult:
    options = PipelineOptions(argv)
    ingest = options.view_as(IngestOptions)
    missing = [f"--{name}" for name in ("input", "uri") if not getattr(ingest, name)]
    if missing:
        raise ConfigError(f"jobs.beam_ingest needs {' and '.join(missing)}")
    standard = options.view_as(StandardOptions)
    if not standard.runner:
        standard.runner = "DirectRunner"
    pipeline = beam.Pipeline(options=options)
    build(pipeline, ingest)
    result = pipeline.run()
    result.wait_until_finish()
    log_counters(result)
    return result


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    main()
