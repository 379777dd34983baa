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
failed rows are picked by id right after, so memory stays one batch whatever the partition size;
they go to this attempt's staged Parquet file (see files.py). The other policies need only ids
and reasons, so the whole iterator goes to one ``Client.write`` and the pipeline never drains.
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import WriterCommitMessage

from vectordb.connector.report import BatchFailure, WriteReport

from .files import staging_name
from .ml_vectors import dense_ml_vectors

if TYPE_CHECKING:
    import pyarrow as pa

    from vectordb.connector.client import Client
    from vectordb.connector.rows import ColumnSpec

    from .files import Location
    from .plan import WritePlan

__all__ = ["DeadLetterFile", "TaskReport", "match_failures", "write_task"]

MAX_CLIENTS = 2  # per process: this write's client and the previous one, whose tasks may still be ending
MAX_IDS_PER_TASK = 10_000  # failed ids a commit message carries; counts stay exact beyond it
DEAD_LETTER_COLUMNS = ("id", "error", "retryable", "attempts")


@dataclass
class TaskReport(WriterCommitMessage):
    """One task's commit message: its ``WriteReport`` and where it ran."""

    report: WriteReport
    partition: int = 0
    attempt: int = 0
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
    vectors = dense_ml_vectors(batches, plan.options.vector_column)
    staged, staged_rows = None, 0
    # write_mode=import: rows go to this attempt's staged Parquet files instead of upserts
    stager = _import_stager(plan, cached.client, job, partition, attempt)
    writer: Any = stager or cached.client
    if plan.dead_letters is None:
        report = writer.write(vectors)
    else:
        name = f"{staging_name(job)}/part-{partition:05d}-attempt-{attempt_id}.parquet"
        with DeadLetterFile(plan.dead_letters, name, cached.client.spec) as dead:
            report = _write_each(writer, vectors, dead)
        staged, staged_rows = dead.staged, dead.rows
    if stager is not None:
        stager.close()  # the files are complete only once closed: before the commit message goes
    report.elapsed_s = time.monotonic() - started
    return TaskReport(
        report=report,
        partition=partition,
        attempt=attempt,
        pid=os.getpid(),
        client_tasks=cached.tasks,
        dead_letters=staged,
        dead_letter_rows=staged_rows,
        ids_dropped=_trim_ids(report),
    )


def _import_stager(plan: WritePlan, client: Client, job: str, partition: int, attempt: int) -> Any:
    if getattr(plan.options, "write_mode", "upsert") != "import":
        return None
    from vectordb.connector.backends.pinecone_import import ImportStager, ImportStore

    return ImportStager(client, ImportStore.of(plan.options), job, partition, attempt)


def _write_each(client: Client, batches: Iterator[pa.RecordBatch], dead: DeadLetterFile) -> WriteReport:
    reports = []
    for batch in batches:
        report = client.write(batch)
        if report.failures:
            dead.add(batch, report.failures)
        reports.append(report)
    return functools.reduce(WriteReport.merge, reports, WriteReport())


def _trim_ids(report: WriteReport) -> int:
    """Keep at most ``MAX_IDS_PER_TASK`` failed ids in the report; return how many were dropped."""
    kept, dropped, out = 0, 0, []
    for failure in report.failures:
        room = MAX_IDS_PER_TASK - kept
        if len(failure.ids) > room:
            dropped += len(failure.ids) - room
            if room == 0:
                continue
            failure = BatchFailure(
                ids=failure.ids[:room],
                error=failure.error,
                error_type=failure.error_type,
                retryable=failure.retryable,
                attempts=failure.attempts,
            )
        kept += len(failure.ids)
        out.append(failure)
    report.failures = out
    return dropped


# --------------------------------------------------------------------------------------------------
# dead letters


def match_failures(row_ids: list[str | None], failures: list[BatchFailure]) -> list[tuple[int, int]]:
    """(row, failure) pairs: each failed id matched to one row of the batch, in input order.

    A failed id with no row left (which the core never reports) is matched to row ``-1``. An id
    repeated in a batch is matched to its rows in order, whichever occurrence failed.
    """
    wanted = {i for f in failures for i in f.ids}
    rows_of: dict[str | None, list[int]] = {}
    for row, rid in enumerate(row_ids):
        if rid in wanted:
            rows_of.setdefault(rid, []).append(row)
    pairs = []
    for k, failure in enumerate(failures):
        for rid in failure.ids:
            rows = rows_of.get(rid)
            pairs.append((rows.pop(0) if rows else -1, k))
    return pairs


def row_ids(batch: pa.RecordBatch, spec: ColumnSpec) -> list[str | None]:
    """Each row's id as the core reports it in ``BatchFailure.ids`` (``None`` where it had none)."""
    import pyarrow as pa

    from vectordb.connector.rows import derive_id

    if spec.id_from:
        columns = [batch.column(c).to_pylist() for c in spec.id_from]
        return [derive_id(values) for values in zip(*columns, strict=True)]
    column = batch.column(spec.id_column)
    if pa.types.is_fixed_size_binary(column.type) and column.type.byte_width == 16:
        return [None if b is None else str(uuid.UUID(bytes=b)) for b in column.to_pylist()]
    return column.cast(pa.string()).to_pylist()


@dataclass
class DeadLetterFile:
    """Failed rows of one task attempt, appended to one staged Parquet file opened on the first failure.

    Columns: ``id``, ``error`` ("Rejected: reason"), ``retryable``, ``attempts``, then the row's own
    columns; the id column itself is left out when its name is ``id`` (its value is ``id``), and
    other own columns whose names clash get a ``row_`` prefix.
    """

    location: Location
    name: str
    spec: ColumnSpec
    rows: int = 0
    _writer: Any = None
    _stream: Any = None
    _schema: Any = None
    _own: list[tuple[str, str]] = field(default_factory=list)  # (input column, dead-letter column)

    def __enter__(self) -> DeadLetterFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def staged(self) -> str | None:
        return self.name if self.rows else None

    def add(self, batch: pa.RecordBatch, failures: list[BatchFailure]) -> None:
        pairs = match_failures(row_ids(batch, self.spec), failures)
        if not pairs:
            return
        table = self._rows(batch, pairs, failures)
        if self._writer is None:
            self._open(table.schema)
        self._writer.write_table(table.cast(self._schema))
        self.rows += table.num_rows

    def _rows(self, batch: pa.RecordBatch, pairs: list[tuple[int, int]], failures: list[BatchFailure]) -> Any:
        import pyarrow as pa

        if not self._own:
            self._own = self._own_columns(batch.schema)
        rows = pa.array([r if r >= 0 else None for r, _ in pairs], type=pa.int64())
        chosen = [failures[k] for _, k in pairs]
        ids = [rid for f in failures for rid in f.ids]
        columns = {
            "id": pa.array(ids, type=pa.string()),
            "error": pa.array([f"{f.error_type}: {f.error}" for f in chosen], type=pa.string()),
            "retryable": pa.array([f.retryable for f in chosen], type=pa.bool_()),
            "attempts": pa.array([f.attempts for f in chosen], type=pa.int32()),
        }
        for source, target in self._own:
            columns[target] = batch.column(source).take(rows)  # a null index (unmatched id) → null
        return pa.table(columns)

    def _own_columns(self, schema: pa.Schema) -> list[tuple[str, str]]:
        own = []
        for name in schema.names:
            if name in DEAD_LETTER_COLUMNS:
                if name == "id" and not self.spec.id_from and self.spec.id_column == "id":
                    continue
                own.append((name, f"row_{name}"))
            else:
                own.append((name, name))
        return own

    def _open(self, schema: pa.Schema) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        # every column nullable: an unmatched id has no row, and Spark marks many columns not-null
        self._schema = pa.schema([f.with_nullable(True) for f in schema])
        self._stream = self.location.open_output(self.name)
        self._writer = pq.ParquetWriter(self._stream, self._schema)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._stream is not None:
            self._stream.close()
            self._stream = None
