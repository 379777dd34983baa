"""``df.write.format("vectordb")``: the PySpark (≥ 4.0) Python data source, batch and streaming.

Spark runs ``writer()``/``streamWriter()`` in a Python process on the driver before any task
(every check happens there: plan.py), pickles the writer into each task, whose ``write()``
gets the partition as Arrow batches (task.py), and calls ``commit()``/``abort()`` on the driver
with the tasks' reports (commit.py). This module only wires those to Spark's classes.

With ``spark.speculation`` on, every task refuses before it reads a row (``plan.check_speculation``):
``writer()`` is not given the conf, the tasks are.

A ``ConnectorError`` raised there (a misspelled option, an unknown scheme, ``on_error=fail`` at commit)
reaches the user as the first line of Spark's ``PYTHON_DATA_SOURCE_ERROR``, without our frames
(``_reason_first``); one raised in a task (a key revoked after the driver's check, a host gone) as the
line after Spark's "An exception was thrown from the Python worker:", likewise.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

from vectordb.connector.errors import ConnectorError

from .commit import abort_job, commit_job
from .plan import SPECULATION_CONF, check_speculation, plan_write
from .task import TaskReport, write_task

try:  # Spark ≥ 4.1
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase

    STREAM_ARROW = True
except ImportError:  # Spark 4.0: rows, turned back into Arrow batches below
    from pyspark.sql.datasource import DataSourceStreamWriter as _StreamWriterBase  # type: ignore[assignment]

    STREAM_ARROW = False

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

    from .plan import WritePlan

__all__ = ["STREAM_ARROW", "VectorDataSource", "VectorStreamWriter", "VectorWriter"]

BATCH_ID_PROPERTY = "streaming.sql.batchId"  # set by Spark on every task of a micro-batch
QUERY_ID_PROPERTY = "sql.streaming.queryId"  # the query's id, kept across restarts from its checkpoint
ROWS_PER_ARROW_BATCH = 10_000


class VectorDataSource(DataSource):
    """Write a DataFrame into a vector database: ``df.write.format("vectordb").option(...).mode("append").save()``.

    Options (strings; Spark lower-cases the keys). Connector options, the same for every database:

    - ``uri``: ``SCHEME://host[:port][/collection]``, or a file path for the embedded Milvus Lite
      (``save(uri)`` works too). Default: none, required. Example: ``pinecone+grpc://my-index-abc.svc.pinecone.io``.
    - ``collection``: collection/table when the URI has none (Pinecone: not taken, the index is its host). Default: from ``uri``. Example: ``docs``.
    - ``api_key``: the credential, never logged. Default: none. Example: ``dbutils.secrets.get("vdb", "key")``.
    - ``api_key_env``: an environment variable holding the credential, read once on the driver. Default: none.
      Example: ``PINECONE_API_KEY``.
    - ``namespace``: namespace/partition/tenant of every row. Default: none. Example: ``docs``.
    - ``namespace_column``: a string column giving each row's namespace. Default: none. Example: ``tenant``.
    - ``op_column``: a string column saying what each row is for: ``upsert`` (also ``insert``, ``update``,
      ``update_postimage``; null) or ``delete`` (its id is deleted; vector and metadata are not read), in
      any case; another value fails its row. Default: none (every row upserts). Example: ``op``.
    - ``id_column``: the id column (string or integer, or binary 16-byte UUIDs). Default: ``id``. Example: ``doc_id``.
    - ``id_from``: columns to derive a deterministic UUIDv5 id from. Default: none. Example: ``url,chunk``.
    - ``vector_column``: ``array<float>``, ``array<double>`` or an ML ``VectorUDT``. Default: ``values``.
      Example: ``embedding``.
    - ``sparse_column``: ``struct<indices: array<int>, values: array<float>>``. Default: none. Example: ``sparse``.
    - ``vector_columns``: several named dense vectors a row, ``name:column`` (comma-separated); every vector
      is then named (no ``vector_column`` or ``dimension``). Default: none. Example: ``title:title_vec,body:body_vec``.
    - ``multi_vector_columns``: multi-vectors, ``name:column`` of ``array<array<float>>`` columns. Default: none.
      Example: ``colbert:tokens``.
    - ``vector_dimensions``: each name's dimension (a multi-vector's: its vectors' length). Default: the
      target's. Example: ``title:768,colbert:128``.
    - ``metadata_columns``: columns sent as metadata; ``*`` = every other column; a column named
      ``metadata`` (struct, map or JSON string) is merged. Default: every other column. Example: ``title,url``.
    - ``dimension``: the vector dimension, checked against the target before any task starts.
      Default: the target's, else the most common length among a task's first rows. Example: ``1536``.
    - ``batch_size``: rows per request. Default: per database (the database table). Example: ``200``.
    - ``max_batch_bytes``: bytes per request. Default: per database (the database table). Example: ``1000000``.
    - ``max_concurrency``: requests in flight per task, adapted (AIMD) below it. Default: ``4``. Example: ``8``.
    - ``max_retries``: retries per request. Default: ``5``. Example: ``10``.
    - ``timeout_s``: seconds per request. Default: ``30``. Example: ``60``.
    - ``max_rows_per_second``: rows per second for the whole job, divided among ``budget_tasks``.
      Default: unlimited. Example: ``5000``.
    - ``max_bytes_per_second``: bytes per second for the whole job, likewise. Default: unlimited.
      Example: ``50000000``.
    - ``isolation_budget``: requests per row sent that splitting refused batches down to the refused
      rows may spend (1,000 in reserve); ``0`` fails a refused batch whole. Default: ``1``.
      Example: ``4``.
    - ``on_error``: ``fail`` (any failed row fails the job), ``report`` (the job succeeds, failures
      are counted and logged) or ``dead_letter`` (failed rows go to ``dead_letter_path``). Default:
      ``fail``. Example: ``dead_letter``.
    - ``dead_letter_path``: a directory (shared by the cluster: ``/Volumes/...``, ``s3://...``) for
      Parquet files of failed rows: ``id``, ``error``, ``retryable``, ``attempts``, then the row's own
      columns. Default: none. Example: ``/Volumes/main/default/dead_letters``.
    - ``create``: create the collection if missing, with the dimension and ``metric``. Default:
      ``false``. Example: ``true``.
    - ``metric``: ``cosine``, ``euclidean`` or ``dotproduct``, for ``create``. Default: ``cosine``.
      Example: ``dotproduct``.
    - ``tls``: TLS on or off. Default: on, except for loopback hosts. Example: ``false``.
    - ``text_column``: a string column; rows with text and no vector are embedded (with ``embed_url``).
      Default: none. Example: ``text``.
    - ``embed_url``: an OpenAI-compatible embeddings endpoint (``/v1/embeddings`` is appended), probed
      once on the driver. Default: none. Example: ``https://api.openai.com``.
    - ``embed_model``: the embedding model. Default: none. Example: ``text-embedding-3-small``.
    - ``embed_api_key``: the embedding endpoint's key, never logged. Default: none. Example: ``sk-...``.
    - ``embed_api_key_env``: an environment variable holding that key. Default: none. Example:
      ``OPENAI_API_KEY``.
    - ``embed_batch_size``: texts per embedding request. Default: ``64``. Example: ``128``.
    - ``embed_max_batch_chars``: characters of text per embedding request. Default: ``200000``.
      Example: ``50000``.
    - ``embed_max_concurrency``: embedding requests in flight per task (AIMD below it). Default:
      ``32``. Example: ``64``.
    - ``embed_dimensions``: ask the model for shorter vectors; the write's dimension. Default: the
      model's. Example: ``256``.
    - ``embed_model_answered``: set by the driver's probe, not by users: the model its reply named,
      which every task's replies must name. Default: none. Example: ``text-embedding-3-small``.

    Spark options:

    - ``allow_overwrite``: let ``mode("overwrite")`` replace the target's contents where the
      database can. Default: ``false``. Example: ``true``.
    - ``budget_tasks``: how many tasks write at once, to divide ``max_rows_per_second`` and
      ``max_bytes_per_second`` among; required with them. Default: none. Example: ``8``.
    - ``report_path``: a directory where each job (``job-<id>.json``) or micro-batch
      (``batch-<n>-<query>.json``; in ``foreachBatch``, ``batch-<n>-<query>-<target>.json``, replaced when
      the micro-batch runs again) leaves its report as JSON. Default: none. Example: ``/Volumes/main/default/reports``.

    Database options: each database's own, and its request sizes, are listed by
    ``python -m vectordb.connector.backends.registry`` (the README's database table); what they do,
    in each backend's module docstring.

    Save modes: Spark accepts only ``append`` and ``overwrite`` for Python data sources (its
    default, ``errorifexists``, is refused before the data source is asked), so write
    ``.mode("append")``: upserts add new ids and replace existing ones. ``.mode("overwrite")``
    with ``allow_overwrite=true`` first deletes the rows of the option ``namespace`` (no
    namespace, or ``namespace_column``: the whole collection), once, on the driver; it is not
    atomic with the write that follows.
    """

    @classmethod
    def name(cls) -> str:
        return "vectordb"

    def writer(self, schema: StructType, overwrite: bool) -> VectorWriter:
        with _reason_first():
            return VectorWriter(plan_write(self.options, schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> VectorStreamWriter:
        with _reason_first():
            return VectorStreamWriter(plan_write(self.options, schema, overwrite, streaming=True), schema)


@dataclass
class JobTaskReport(WriterCommitMessage):
    """A batch write's task message: the task's report, and the job it wrote under."""

    task: TaskReport
    job: str


class VectorWriter(DataSourceArrowWriter):
    """Batch writes: one ``WritePlan`` for every task; the job is named after its token.

    Inside ``foreachBatch`` the job is named after the micro-batch instead, as the tasks see it (Spark
    sets the batch and query ids on the jobs the function runs; ``writer()`` runs in another process,
    which does not see them): ``batch-<n>-<query>-<target>``, and its dead letters and report replace
    those of the same micro-batch run before a restart. ``<query>`` keeps two queries sharing a path
    apart, ``<target>`` two writes of one micro-batch to different databases; two writes of one
    micro-batch to one target need their own ``report_path`` and ``dead_letter_path``.
    """

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan
        self.job = f"job-{plan.token}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> JobTaskReport:
        with _reason_first():
            _refuse_speculation()
            job = _foreach_batch_job(self.plan) or self.job
            return JobTaskReport(write_task(self.plan, iterator, job), job)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        job, reports = _job_of(messages, self.job)
        with _reason_first():
            commit_job(self.plan, reports, job, again=job != self.job)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        job, reports = _job_of(messages, self.job)
        abort_job(self.plan, reports, job)


class VectorStreamWriter(_StreamWriterBase):
    """Streaming writes: each micro-batch is a job named ``batch-<id>-<query>``.

    A micro-batch replayed after a failure writes the same rows again: upserts by id make that
    idempotent, and its dead-letter files and report take the same names (a query keeps its id across
    restarts from its checkpoint), so they are replaced. ``<query>`` keeps apart the files of a query
    started again without its checkpoint (a reload from the start, whose micro-batches are cut
    differently) and of two queries sharing a path. Spark makes a new writer for each commit, so nothing
    here may depend on the writer instance: the tasks, which see the query id, return the job's name.
    """

    def __init__(self, plan: WritePlan, schema: StructType) -> None:
        self.plan = plan
        self.schema = schema

    def write(self, iterator: Iterator[Any]) -> JobTaskReport:
        with _reason_first():
            _refuse_speculation()
            job = _stream_job()
            batches = iterator if STREAM_ARROW else _rows_to_arrow(iterator, self.schema)
            return JobTaskReport(write_task(self.plan, batches, job), job)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        job, reports = _job_of(messages, _micro_batch_job(batchId))
        with _reason_first():
            commit_job(self.plan, reports, job, again=True)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        job, reports = _job_of(messages, _micro_batch_job(batchId))
        abort_job(self.plan, reports, job)


def _job_of(
    messages: Sequence[WriterCommitMessage | None], default: str
) -> tuple[str, list[WriterCommitMessage | None]]:
    """The job the tasks wrote under (``default``, where no task returned), and their reports."""
    jobs = {m.job for m in messages if isinstance(m, JobTaskReport)}
    if len(jobs) > 1:  # every task of one job sees the same properties
        raise RuntimeError(f"the tasks of one write named different jobs: {sorted(jobs)}")
    reports = [m.task if isinstance(m, JobTaskReport) else m for m in messages]
    return (jobs.pop() if jobs else default), reports


# the Python workers in which Spark's driver calls writer()/streamWriter() and commit(), and the one in which an
# executor runs a task's write() (under pyspark.daemon, which imports it, or as the main module)
_WORKERS = frozenset(
    {
        "pyspark.sql.worker.write_into_data_source",
        "pyspark.sql.worker.commit_data_source_write",
        "pyspark.sql.worker.python_streaming_sink_runner",
        "pyspark.worker",
    }
)


@contextmanager
def _reason_first() -> Iterator[None]:
    """Let a ``ConnectorError`` leave Spark's Python worker as one line: ``…ConfigError: option uri is required``.

    Spark puts the worker's formatted exception into its error (``PYTHON_DATA_SOURCE_ERROR`` on the
    driver, ``PythonException`` from a task): a traceback of our frames first (14-19 lines on the
    driver, about 55 in a task) and the reason last. The worker formats the exception alone,
    without frames, when ``SPARK_HIDE_TRACEBACK`` is set (what the session conf
    ``spark.sql.execution.pyspark.udf.hideTraceback.enabled`` sets), and it reads the variable when
    it handles the exception, after this. Such a worker exits after an exception (Spark 4.0 to
    4.3; a task's is not reused), so setting it there changes nothing else. Another exception is a
    bug and keeps its traceback; in any other process (a direct call, a test) nothing is set.
    """
    try:
        yield
    except ConnectorError:
        main = getattr(sys.modules.get("__main__"), "__spec__", None)
        if getattr(main, "name", None) in _WORKERS or not _WORKERS.isdisjoint(sys.modules):
            os.environ["SPARK_HIDE_TRACEBACK"] = "1"
        raise


def _refuse_speculation() -> None:
    """``ConfigError`` before the task reads a row when the session runs speculative task copies.

    ``writer()`` cannot see the session's conf; a task can: Spark passes the session's confs (``spark.*``, the
    application's included) to the tasks of every SQL execution as local properties, on Spark Connect too.
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    check_speculation(context.getLocalProperty(SPECULATION_CONF) if context else None)


def _micro_batch_job(batch_id: int) -> str:
    return f"batch-{batch_id:06d}"


def _micro_batch_ids() -> tuple[str, str] | None:
    """The batch id and the query id Spark set on this task's job; ``None`` outside a micro-batch."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return None
    batch_id = context.getLocalProperty(BATCH_ID_PROPERTY)
    query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
    if batch_id is None or query_id is None:
        return None
    return batch_id, query_id


def _stream_job() -> str:
    """In a task of ``writeStream.format("vectordb")``: the job named after the micro-batch and the query,
    ``batch-<n>-<query>``; the query's id stays with its checkpoint, so a micro-batch run again after a
    restart takes the same name, and a reload without the checkpoint another."""
    ids = _micro_batch_ids()
    if ids is None:  # Spark sets both on every micro-batch's tasks; a task without them is no stream's
        return _micro_batch_job(-1)
    batch_id, query_id = ids
    return f"{_micro_batch_job(int(batch_id))}-{query_id[:8]}"


def _foreach_batch_job(plan: WritePlan) -> str | None:
    """In a task of a write inside ``foreachBatch``: the job named after the micro-batch, the query and the
    write's target and options (the same in a run of the micro-batch again after a restart); ``None`` outside a micro-batch."""
    ids = _micro_batch_ids()
    if ids is None:
        return None
    batch_id, query_id = ids
    # the target and every option set (their repr shows no credential): two writes of one micro-batch into one
    # report_path differing in any option (a namespace, an op column, the columns read) keep their own files;
    # the options as given, not as the target completed them, which a replay against a target that learnt
    # from the first run's rows (its dimension) would name apart, leaving the first run's files beside
    write = hashlib.sha256(f"{plan.target}\n{plan.given_options!r}".encode()).hexdigest()[:8]
    return f"{_micro_batch_job(int(batch_id))}-{query_id[:8]}-{write}"


def _rows_to_arrow(rows: Iterator[Any], schema: StructType) -> Iterator[pa.RecordBatch]:
    """Spark 4.0's stream writer gets ``Row``s: regroup them into Arrow batches of the same schema."""
    import itertools

    import pyarrow as pa

    from .plan import arrow_schema

    target = arrow_schema(schema)
    ml = [f.name for f in schema.fields if type(f.dataType).__name__ == "VectorUDT"]
    while chunk := list(itertools.islice(rows, ROWS_PER_ARROW_BATCH)):
        records = [row.asDict(recursive=True) for row in chunk]
        for record in records if ml else ():  # an ML vector as the struct Arrow carries it in
            for name in ml:
                record[name] = _ml_struct(record[name])
        yield pa.RecordBatch.from_pylist(records, schema=target)


def _ml_struct(vector: Any) -> dict[str, Any] | None:
    """A Spark ML ``DenseVector``/``SparseVector`` as ``VectorUDT``'s struct (type 1 dense, 0 sparse)."""
    if vector is None:
        return None
    if hasattr(vector, "indices"):  # SparseVector
        return {
            "type": 0,
            "size": int(vector.size),
            "indices": vector.indices.tolist(),
            "values": vector.values.tolist(),
        }
    return {"type": 1, "size": None, "indices": None, "values": vector.toArray().tolist()}
