"""The executor side of a write: one task's Arrow batches through the connector's client, into a report.

Spark's Arrow writer hands each task an iterator of ``pyarrow.RecordBatch`` (about 10,000 rows
each, ``spark.sql.execution.arrow.maxRecordsPerBatch``). They go to ``Client.write`` as they are:
an ``array<float>`` column arrives as ``list<float>`` and the core views its values buffer as the
(n, dim) matrix; ``array<double>`` is converted once per batch by the core. Spark ML vectors
(``VectorUDT``, a struct) are made dense here, once per batch, when a batch holds sparse ones.

One client per Python worker process and write, kept across the tasks that process runs
(``spark.python.worker.reuse``, on by default), so the AIMD limit and the retry budget carry
over; the transport under it (gRPC channel, HTTP pool) is shared per process by the core anyway.

With ``on_error="dead_letter"`` each batch is written by its own ``Client.write`` call and its
failed rows are taken from it right after (the core's ``dead_letters``: by input position, so
whatever the ids), so memory stays one batch whatever the partition size; they go to this
attempt's staged Parquet file (see files.py). The other policies need only ids and reasons, so the
whole iterator goes to one ``Client.write`` and the pipeline never drains.
"""

from __future__ import annotations

import functools
import os
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import msgspec
from pyspark.sql.datasource import WriterCommitMessage

from vectordb.connector.dead_letters import dead_letters
from vectordb.connector.report import BatchFailure, WriteReport
from vectordb.connector.staging import staged_name

from .ml_vectors import ml_columns

if TYPE_CHECKING:
    import pyarrow as pa

    from vectordb.connector.client import Client
    from vectordb.connector.rows import ColumnSpec
    from vectordb.connector.staging import Folder

    from .plan import WritePlan

__all__ = ["DeadLetterFile", "TaskReport", "write_task"]

MAX_CLIENTS = 2  # per process: this write's client and the previous one, whose tasks may still be ending
MAX_IDS_PER_TASK = 10_000  # failed ids a commit message carries; counts stay exact beyond it


@dataclass
class TaskReport(WriterCommitMessage):
    """One task's commit message: its ``WriteReport`` and where it ran."""

    report: WriteReport
    partition: int = 0
    attempt: int = 0
    attempt_id: int = 0  # Spark's task attempt id, unique in the application: names the staged files
    pid: int = 0
    client_tasks: int = 1  # tasks this process's client has served, this one included
    dead_letters: str | None = None  # the staged file, relative to the dead-letter location
    dead_letter_rows: int = 0
    ids_dropped: int = 0  # failed ids left out of ``report.failures`` to keep the message small


@dataclass
class _Cached:
    client: Client
    tasks: int = 0


_CLIENTS: OrderedDict[str, _Cached] = OrderedDict()


def _client_for(plan: WritePlan) -> _Cached:
    """This process's client for the write ``plan.token``; made on first use, closed when pushed out."""
    from vectordb.connector.client import Client

    cached = _CLIENTS.get(plan.token)
    if cached is None:
        cached = _CLIENTS[plan.token] = _Cached(Client(plan.options))
        while len(_CLIENTS) > MAX_CLIENTS:
            _, old = _CLIENTS.popitem(last=False)
            old.client.close()
    _CLIENTS.move_to_end(plan.token)
    cached.tasks += 1
    return cached


def write_task(plan: WritePlan, batches: Iterable[pa.RecordBatch], job: str) -> TaskReport:
    """Write one task's batches; per-row failures are in the report, fatal errors raise."""
    from pyspark import TaskContext

    context = TaskContext.get()
    partition = context.partitionId() if context else 0
    attempt = context.attemptNumber() if context else 0
    attempt_id = context.taskAttemptId() if context else 0
    cached = _client_for(plan)
    started = time.monotonic()
    vectors = ml_columns(batches, plan.options)
    staged, staged_rows = None, 0
    # a bulk path: rows go to this attempt's staged files instead of upserts
    bulk = cached.client.bulk
    stager = None if bulk is None else bulk.stager(cached.client, job, partition, attempt_id)
    writer: Any = stager or cached.client
    spec = cached.client.spec
    if plan.dead_letters is None:
        refused: list[WriteReport] = []
        report = writer.write(_sent(vectors, spec, refused))
        # positions are of what the write read, which the refused rows were not in: they are named by id
        failures = [msgspec.structs.replace(f, positions=()) for r in refused for f in r.failures]
        report = report.merge(WriteReport(failed=sum(r.failed for r in refused), failures=failures))
    else:
        name = staged_name(job, partition, attempt_id)
        with DeadLetterFile(plan.dead_letters, name, spec) as dead:
            report = _write_each(writer, vectors, dead, spec)
        staged, staged_rows = dead.staged, dead.rows
    if stager is not None:
        stager.close()  # the files are complete only once closed: before the commit message goes
    report.elapsed_s = time.monotonic() - started
    return TaskReport(
        report=report,
        partition=partition,
        attempt=attempt,
        attempt_id=attempt_id,
        pid=os.getpid(),
        client_tasks=cached.tasks,
        dead_letters=staged,
        dead_letter_rows=staged_rows,
        ids_dropped=_trim_ids(report),
    )


def _write_each(
    client: Client,
    batches: Iterator[tuple[pa.RecordBatch, dict[int, str]]],
    dead: DeadLetterFile,
    spec: ColumnSpec,
) -> WriteReport:
    reports = []
    for batch, refused in batches:
        kept, failed = _without(batch, refused, spec)
        if failed.failures:
            dead.add(batch, failed)
            reports.append(failed)
        report = client.write(kept)
        if report.failures:
            dead.add(kept, report)
        reports.append(report)
    return functools.reduce(WriteReport.merge, reports, WriteReport())


def _sent(
    batches: Iterator[tuple[pa.RecordBatch, dict[int, str]]], spec: ColumnSpec, refused: list[WriteReport]
) -> Iterator[pa.RecordBatch]:
    """The batches without their refused rows, whose failures go to ``refused``."""
    for batch, rows in batches:
        kept, failed = _without(batch, rows, spec)
        if failed.failures:
            refused.append(failed)
        yield kept


def _without(
    batch: pa.RecordBatch, refused: dict[int, str], spec: ColumnSpec
) -> tuple[pa.RecordBatch, WriteReport]:
    """``batch`` without the rows ``refused`` names (row → reason: an ML vector that is none, see
    ml_vectors.py), and their failures, by id and by position in ``batch``: the client never sees them."""
    if not refused:
        return batch, WriteReport()
    import numpy as np
    import pyarrow as pa

    from vectordb.connector.rows import reported_ids

    ids = reported_ids(batch, spec)
    by_reason: dict[str, list[int]] = {}
    for i, reason in sorted(refused.items()):
        by_reason.setdefault(reason, []).append(i)
    failures = [
        BatchFailure(
            ids=tuple(ids[i] for i in rows), positions=tuple(rows), error=reason, error_type="Invalid"
        )
        for reason, rows in by_reason.items()
    ]
    keep = np.ones(batch.num_rows, dtype=bool)
    keep[list(refused)] = False
    return batch.filter(pa.array(keep)), WriteReport(failed=len(refused), failures=failures)


def _trim_ids(report: WriteReport) -> int:
    """Keep at most ``MAX_IDS_PER_TASK`` failed ids in the report; return how many were dropped. The rows
    whose ids are dropped stay counted (``unnamed``) under their reason, so the reasons still add up to
    ``failed``: failures past the limit become one per reason."""
    kept, dropped, out = 0, 0, []
    past: dict[tuple[str, str, str, bool], BatchFailure] = {}  # one per reason, once no id is left
    for failure in report.failures:
        room = MAX_IDS_PER_TASK - kept
        if len(failure.ids) > room:
            cut = len(failure.ids) - room
            dropped += cut
            failure = msgspec.structs.replace(
                failure,
                ids=failure.ids[:room],
                positions=failure.positions[:room],
                unnamed=failure.unnamed + cut,
            )
        if not failure.ids and room == 0:
            reason = (failure.error_type, failure.error, failure.op, failure.retryable)
            same = past.get(reason)
            past[reason] = (
                failure
                if same is None
                else msgspec.structs.replace(same, unnamed=same.unnamed + failure.unnamed)
            )
            continue
        kept += len(failure.ids)
        out.append(failure)
    report.failures = out + list(past.values())
    return dropped


# --------------------------------------------------------------------------------------------------
# dead letters


@dataclass
class DeadLetterFile:
    """Failed rows of one task attempt, appended to one staged Parquet file opened on the first failure.

    The core's dead letters (``vectordb.connector.dead_letters``: the id column named ``id`` is
    ``id``, other clashing names get a ``row_`` prefix) in Spark's columns: ``id``, ``error``
    ("Rejected: reason"), ``retryable``, ``attempts``, then the row's own columns.
    """

    location: Folder
    name: str
    spec: ColumnSpec
    rows: int = 0
    _writer: Any = None
    _stream: Any = None
    _schema: Any = None

    def __enter__(self) -> DeadLetterFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def staged(self) -> str | None:
        return self.name if self.rows else None

    def add(self, batch: pa.RecordBatch, report: WriteReport) -> None:
        """The failed rows of ``report``, the write of ``batch``."""
        import pyarrow.compute as pc

        letters = cast("pa.Table", dead_letters(batch, report, self.spec))  # Arrow in, a Table out
        if not letters.num_rows:
            return
        # Spark's files say "Type: reason" in one column
        error = pc.binary_join_element_wise(letters["error_type"], letters["error"], ": ")
        table = letters.set_column(1, "error", error).drop_columns(["error_type"])
        if self._writer is None:
            self._open(table.schema)
        with self.location.failing_as("write", self.name):
            self._writer.write_table(table.cast(self._schema))
        self.rows += table.num_rows

    def _open(self, schema: pa.Schema) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        # every column nullable: an unmatched id has no row, and Spark marks many columns not-null
        self._schema = pa.schema([_nullable(f) for f in schema])
        self._stream = self.location.open_output(self.name)
        self._writer = pq.ParquetWriter(self._stream, self._schema)

    def close(self) -> None:
        with self.location.failing_as("write", self.name):
            if self._writer is not None:
                writer, self._writer = self._writer, None
                writer.close()
            if self._stream is not None:
                stream, self._stream = self._stream, None
                stream.close()


def _nullable(field: pa.Field) -> pa.Field:
    """``field`` nullable, and every field inside it (a struct's children, a list's values, a map's
    items): a failed row may hold a null struct whose fields Spark declares not-null (``named_struct``),
    and ``cast`` refuses a null under a not-null child. A map's key stays as it is: Arrow's keys are
    never null."""
    import pyarrow as pa

    typ = field.type
    if pa.types.is_struct(typ):
        typ = pa.struct([_nullable(typ.field(i)) for i in range(typ.num_fields)])
    elif pa.types.is_map(typ):
        typ = pa.map_(typ.key_field, _nullable(typ.item_field), keys_sorted=typ.keys_sorted)
    elif pa.types.is_list(typ):
        typ = pa.list_(_nullable(typ.value_field))
    elif pa.types.is_large_list(typ):
        typ = pa.large_list(_nullable(typ.value_field))
    elif pa.types.is_fixed_size_list(typ):
        typ = pa.list_(_nullable(typ.value_field), typ.list_size)
    return field.with_type(typ).with_nullable(True)
