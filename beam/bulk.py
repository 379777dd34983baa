"""A database's bulk path from Beam (``vectordb.connector.bulk``), driven without naming the database.

The same three steps as the Spark writer, in Beam's terms, naming no database:

1. ``check`` runs while the pipeline is built (the path's own checks; an unbounded PCollection is a
   stream), so the database must be reachable from where the pipeline is built;
2. ``_StageFn`` replaces the upsert DoFn: each bundle's rows are prepared as for upserts (refused
   rows go to ``failed``, as dead letters) and staged in the bundle's own files, named after a random
   bundle number; at the end of the bundle it emits that number. A refused row does not fail its bundle,
   even under ``on_error=fail``: as Spark's tasks, bundles only stage and report;
3. ``FinishImport`` waits for every bundle (a global side input), and the path publishes the staged
   files of the bundles that succeeded (a retried bundle's abandoned files are deleted with the
   staging folder), imports them, waits, and emits the write's one ``WriteReport``, applying
   ``on_error``. Under ``on_error=fail`` rows refused while staging fail the write there, before any
   import, with every row counted, and the job's staged files are deleted (Spark's ``abort``): a bundle
   could do neither, as it sees only its own rows and other bundles may still be staging theirs. A runner retries the step when it fails (an import that outlasts ``import_timeout_s``,
   a lost connection): the path's ``finish`` may run again, so a second run follows the import the first
   started (found by its folder) and neither publishes nor starts again, nor deletes what it reads.

The Metrics counters are the sink's (``written``, ``failed``, …), each added once its bundle has
finished (the sink's ``BundleCounts``), so they end as the import's report says: staging counts the
rows it refused as ``failed`` and the rows it staged as ``staged``; the import step counts ``written``
(rows the import wrote) and, as ``failed``, the staged rows it did not import.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
from apache_beam.pvalue import PCollection, TaggedOutput
from apache_beam.transforms.window import GlobalWindow, GlobalWindows
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from vectordb.connector.bulk import BulkPath, Stager, bulk_path
from vectordb.connector.client import Client
from vectordb.connector.errors import WriteFailed
from vectordb.connector.options import BackendOptions
from vectordb.connector.policy import enforce
from vectordb.connector.report import WriteReport

from .batch import VectorBatch
from .coders import EXACT
from .sink import COUNTERS, BundleCounts

__all__ = ["FinishImport", "check", "stage_fn"]

logger = logging.getLogger("vectordb.beam")
# the counters staging adds from its reports, whose ``written`` is rows staged (counted as ``staged``)
STAGED_COUNTERS = tuple(name for name in COUNTERS if name != "written")


def check(options: BackendOptions, bounded: bool) -> None:
    """What the pipeline's builder can check before anything runs."""
    with Client(options) as client:
        assert client.bulk is not None
        client.bulk.check(client, streaming=not bounded)


def stage_fn(options: BackendOptions, target: str, job: str) -> beam.PTransform:
    """The ``Write`` step of an import: reports on the main output, ``failed`` and ``staged`` tagged."""
    return (
        beam.ParDo(_StageFn(options, target, job))
        .with_output_types(WriteReport, failed=EXACT, staged=int)
        .with_outputs("failed", "staged", main="written")
    )


class _StageFn(beam.DoFn):
    """Stages each bundle's rows as Parquet; emits the bundle's number once its files are complete."""

    def __init__(self, options: BackendOptions, target: str, job: str) -> None:
        self._options, self._target, self._job = options, target, job
        self._counts = BundleCounts(("staged", *STAGED_COUNTERS))

    def setup(self) -> None:
        self._client = Client(self._options)
        self._bulk: BulkPath | None = self._client.bulk
        self._stager: Stager | None = None

    def start_bundle(self) -> None:
        self._stager = None  # a failed bundle's files stay staged, unpublished
        self._counts.discard()  # and its counts uncounted

    def process(
        self,
        batch: VectorBatch,
        window: Any = beam.DoFn.WindowParam,
        timestamp: Any = beam.DoFn.TimestampParam,
    ) -> Iterator[Any]:
        if self._stager is None:
            bundle = random.SystemRandom().randrange(1, 10**12)
            assert self._bulk is not None
            self._stager = self._bulk.stager(self._client, self._job, partition=bundle)
        report = self._stager.write(batch.for_client(), batch.namespace)
        self._counts.add("staged", report.written)
        for name in STAGED_COUNTERS:
            self._counts.add(name, getattr(report, name))
        where = WindowedValue(None, timestamp, (window,))
        yield where.with_value(report)
        for letter in batch.dead_letters(report, self._client.spec):
            yield TaggedOutput("failed", where.with_value(letter))

    def finish_bundle(self) -> Iterator[Any]:
        stager, self._stager = self._stager, None
        if stager is not None:
            stager.close()
            yield TaggedOutput("staged", WindowedValue(stager.partition, MIN_TIMESTAMP, (GlobalWindow(),)))
        self._counts.add_up()

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
                _import,
                beam.pvalue.AsSingleton(merged),
                beam.pvalue.AsSingleton(bundles),
                self._options,
                self._job,
            ).with_output_types(tuple[WriteReport, WriteReport])
            # counted in a step of its own: the BundleBasedDirectRunner drops the counters of a step that
            # waited for its side inputs
            | "Count import"
            >> beam.ParDo(_CountImportFn(self._options, self._target, self._job)).with_output_types(
                WriteReport
            )
        )


def _merge(reports: Any) -> WriteReport:
    total = WriteReport()
    for report in reports:
        total = total.merge(report)
    return total


def _import(
    _: None, staged: WriteReport, bundles: list[int], options: BackendOptions, job: str
) -> tuple[WriteReport, WriteReport]:
    """The staging's merged report and the import's; safe for the runner to run again (see above)."""
    bulk = bulk_path(options)
    assert bulk is not None
    try:
        return staged, bulk.finish(staged, [(b, 0) for b in bundles], job, logger.info)
    except WriteFailed:  # rows refused while staging (on_error=fail): nothing was published or imported
        bulk.abort(job)  # the same answer whenever the runner retries this step: drop the staged files
        raise


class _CountImportFn(beam.DoFn):
    """Counts what staging could not (rows written, staged rows not imported), then applies ``on_error``."""

    def __init__(self, options: BackendOptions, target: str, job: str) -> None:
        self._options, self._target, self._job = options, target, job
        self._counts = BundleCounts(COUNTERS)

    def start_bundle(self) -> None:
        self._counts.discard()  # a failed attempt's

    def process(self, reports: tuple[WriteReport, WriteReport]) -> Iterator[WriteReport]:
        staged, report = reports
        # staging counted its part as each bundle finished: the rest, so the counters say what the report says
        self._counts.add("written", report.written)
        for name in STAGED_COUNTERS:
            self._counts.add(name, getattr(report, name) - getattr(staged, name))
        logger.log(
            logging.INFO if report.ok else logging.WARNING,
            "%s into %s: %s%s",
            self._job,
            self._target,
            report.summary(),
            "".join(f"; {rows} x {reason}" for reason, rows in report.reasons()),
        )
        yield enforce(report, self._options.on_error, self._target)

    def finish_bundle(self) -> None:
        self._counts.add_up()
