"""Pinecone bulk import from Beam: ``WriteToVectorDB(..., write_mode="import", import_uri=...)``.

The same three steps as the Spark writer (``vectordb.connector.backends.pinecone_import``), in
Beam's terms:

1. ``check`` runs while the pipeline is built: bounded input only, the store writable, the target
   namespace new (so Pinecone must be reachable from where the pipeline is built);
2. ``_StageFn`` replaces the upsert DoFn: each bundle checks its batches' rows as for upserts
   (refused rows go to ``failed``, as dead letters) and writes them to its own staged Parquet files,
   named after a random bundle number; at the end of the bundle it emits that number;
3. ``FinishImport`` waits for every bundle (a global side input), publishes the staged files of
   the bundles that succeeded (a retried bundle's abandoned files are deleted with the staging
   folder), starts the import, waits for it and emits the write's one ``WriteReport`` (rows
   imported, rows failed), applying ``on_error``.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.pvalue import PCollection, TaggedOutput
from apache_beam.transforms.window import GlobalWindow, GlobalWindows
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from vectordb.connector.backends.pinecone_import import (
    ImportStager,
    ImportStore,
    check_import,
    finish_job_import,
)
from vectordb.connector.client import Client
from vectordb.connector.errors import ConfigError
from vectordb.connector.options import BackendOptions
from vectordb.connector.policy import enforce
from vectordb.connector.report import WriteReport

from .batch import VectorBatch

__all__ = ["FinishImport", "check", "new_job", "stage_fn"]

logger = logging.getLogger("vectordb.beam")


def new_job() -> str:
    return f"job-{uuid.uuid4().hex[:12]}"


def check(options: BackendOptions, bounded: bool) -> None:
    """What the pipeline's builder can check before anything runs."""
    if not bounded:
        raise ConfigError(
            "option write_mode=import is for bounded input: an unbounded PCollection never ends, so its import "
            "would never start; use write_mode=upsert"
        )
    with Client(options) as client:
        check_import(client)


def stage_fn(options: BackendOptions, target: str, job: str) -> beam.PTransform:
    """The ``Write`` step of an import: reports on the main output, ``failed`` and ``staged`` tagged."""
    return (
        beam.ParDo(_StageFn(options, target, job))
        .with_output_types(WriteReport, failed=dict[str, Any], staged=int)
        .with_outputs("failed", "staged", main="written")
    )


class _StageFn(beam.DoFn):
    """Stages each bundle's rows as Parquet; emits the bundle's number once its files are complete."""

    def __init__(self, options: BackendOptions, target: str, job: str) -> None:
        self._options, self._target, self._job = options, target, job
        self._staged = Metrics.counter("vectordb", "staged")
        self._failed = Metrics.counter("vectordb", "failed")

    def setup(self) -> None:
        self._client = Client(self._options)
        self._store = ImportStore.of(self._options)
        self._stager: ImportStager | None = None

    def start_bundle(self) -> None:
        self._stager = None  # a failed bundle's files stay staged, unpublished

    def process(
        self,
        batch: VectorBatch,
        window: Any = beam.DoFn.WindowParam,
        timestamp: Any = beam.DoFn.TimestampParam,
    ) -> Iterator[Any]:
        if self._stager is None:
            bundle = random.SystemRandom().randrange(1, 10**12)
            self._stager = ImportStager(self._client, self._store, self._job, partition=bundle)
        report = self._stager.write(batch.for_client(), batch.namespace)
        self._staged.inc(report.written)
        self._failed.inc(report.failed)
        enforce(report, self._options.on_error, self._target)
        where = WindowedValue(None, timestamp, (window,))
        yield where.with_value(report)
        for letter in batch.dead_letters(report, self._client.spec):
            yield TaggedOutput("failed", where.with_value(letter))

    def finish_bundle(self) -> Iterator[Any]:
        stager, self._stager = self._stager, None
        if stager is not None:
            stager.close()
            yield TaggedOutput("staged", WindowedValue(stager.partition, MIN_TIMESTAMP, (GlobalWindow(),)))

    def teardown(self) -> None:
        self._client.close()


class FinishImport(beam.PTransform):
    """``(reports, staged bundle numbers)`` → the import's one ``WriteReport``, once every bundle is done."""

    def __init__(self, options: BackendOptions, target: str, job: str) -> None:
        super().__init__()
        self._options, self._target, self._job = options, target, job

    def expand(self, inputs: tuple[PCollection, PCollection]) -> PCollection:
        reports, staged = inputs
        merged = (
            reports
            | "Global reports" >> beam.WindowInto(GlobalWindows())
            | "Merge reports" >> beam.CombineGlobally(_merge)
        )
        bundles = (
            staged
            | "Global bundles" >> beam.WindowInto(GlobalWindows())
            | "Bundles" >> beam.combiners.ToList()
        )
        return (
            reports.pipeline
            | "Once" >> beam.Create([None])
            | "Start import"
            >> beam.Map(
                _finish,
                beam.pvalue.AsSingleton(merged),
                beam.pvalue.AsSingleton(bundles),
                self._options,
                self._target,
                self._job,
            ).with_output_types(WriteReport)
        )


def _merge(reports: Any) -> WriteReport:
    total = WriteReport()
    for report in reports:
        total = total.merge(report)
    return total


def _finish(
    _: None, staged: WriteReport, bundles: list[int], options: BackendOptions, target: str, job: str
) -> WriteReport:
    report = finish_job_import(options, staged, [(b, 0) for b in bundles], job, logger.info)
    logger.info("%s into %s: %s", job, target, report.summary())
    return enforce(report, options.on_error, target)
