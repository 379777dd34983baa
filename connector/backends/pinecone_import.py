"""Pinecone bulk import (``write_mode=import``): rows staged as Parquet in object storage, then one import.

For the largest loads Pinecone reads Parquet files from object storage itself (``start_import``)
instead of taking millions of upsert requests. The write happens in three steps, each where it
belongs:

1. On the driver, before any task (``check_import``): the write can be an import (a batch write,
   not streaming, not ``overwrite``), the store can be written (a local folder, such as a mount, or a
   scheme Pinecone does not read, such as ``s3a://`` or ``hdfs://``, only with ``import_source_uri``:
   Pinecone reads ``s3://``, ``gs://`` and Azure's ``https://``), and the target namespace does not exist
   yet: Pinecone imports only into namespaces that do not exist.
2. In each task (``ImportStager``): rows pass the same checks as upserts (ids, dimension, finite
   values, sparse vectors, metadata size); refused rows are failures of the task's report (dead
   letters, as for upserts); the others go into one Parquet file per namespace and task attempt in
   a staging folder.
3. On the driver, once every task succeeded (``finish_import``): under ``on_error=fail`` rows refused
   in step 2 fail the write here, before anything is imported (the namespace stays new, so the fixed
   write can import); the files of the attempts that succeeded move to
   ``<import_uri>/<job>/<namespace>/`` (the rest are deleted, so a retried task adds nothing twice),
   and staged rows whose files the driver cannot find fail the write (``import_uri`` on each node's
   own disk); ``POST /bulk/imports`` starts the import of ``<job>/`` (error mode
   ``abort`` for ``on_error=fail``, ``continue`` otherwise), and ``GET /bulk/imports/<id>`` is polled,
   with progress logged, until it ends. The report counts the records Pinecone imported; staged
   rows it did not import are failures: named by id (read back from the files) when it imported none,
   only counted after a partial import (Pinecone does not say which rows it imported). A poll that
   fails is an outage of the poll, not the import failing: polling goes on until ``import_timeout_s``;
   giving up names the import (it may still be running) and carries the report so far. The step may run
   again for the same job (a runner retrying it): it then follows the import an earlier run started
   (listed by its folder), or imports the files an earlier run published, and deletes only files it
   published itself.

The layout Pinecone reads: one folder per namespace (``__default__`` for the default namespace),
Parquet files with ``id`` (string), ``values`` (list<float32>), ``sparse_values``
(struct<indices: list<uint32>, values: list<float32>>) and ``metadata`` (a JSON object as a string).

Store credentials are never options: each process finds them as pyarrow does (``AWS_*`` variables,
an instance role, Google or Azure default credentials). An ``s3://`` URI may name an S3-compatible
endpoint in its query (``?endpoint_override=host:port&scheme=http&region=...``); the query is never
sent to Pinecone and never logged. The import calls go to the index host over REST, as Pinecone
serves them (also for ``pinecone+grpc://`` URIs, on the same host and port).

Here: the options, the task's stager and the driver's steps. The folder and its commit protocol are
``staging.Folder``'s (Spark's dead letters use the same); the import API is ``pinecone_import_api``'s.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import msgspec

from ..bulk import refused_while_staging
from ..errors import ConfigError, ConnectorError, DeadlineExceeded, ServerError
from ..options import BackendOptions, is_loopback_host
from ..policy import NOT_IMPORTED
from ..report import BatchFailure, WriteReport
from ..rows.ops import DELETE
from ..staging import STAGING, Folder, Published, StagingFailed, refuse_credentials, staged_name, staging_dir
from .pinecone_import_api import ImportHost, ImportStatus, PineconeImports

if TYPE_CHECKING:
    import pyarrow as pa

    from ..client import Client
    from ..rows import ColumnSpec, RowBatch

__all__ = [
    "DEFAULT_NAMESPACE_DIR",
    "STAGED_FOR",
    "ImportOptions",
    "ImportStager",
    "PineconeBulk",
    "abort_import",
    "check_import",
    "finish_import",
    "import_data",
    "import_folder",
    "namespace_dir",
    "publish_staged",
    "source_uri",
]

logger = logging.getLogger("vectordb.connector.pinecone_import")

DEFAULT_NAMESPACE_DIR = "__default__"  # Pinecone's folder name for the default namespace
TERMINAL = frozenset({"Completed", "Failed", "Cancelled"})
ROW_GROUP_ROWS = 65_536  # rows of a staged file's row group
NAME_MAX_BYTES = 255  # of a file or folder name on a local filesystem (ext4, XFS) and the usual mounts
# the bytes of rows a task holds before writing them, across its namespaces (one row group each): without a cap
# a task held up to ROW_GROUP_ROWS rows per namespace, ~400 MB of 1536-d vectors each
PENDING_BYTES = 64 * 2**20
STAGED_FOR = (
    "import"  # the purpose of the staging folder: never a dead-letter job's, in a folder given for both
)
IMPORT_CANNOT_DELETE = "a bulk import adds rows and cannot delete them: write deletes with write_mode=upsert"


IMPORT_POLL_S = 15.0  # import_poll_s's default
PINECONE_READS = ("s3", "gs", "https")  # the schemes of the folders Pinecone imports from (https: Azure's)
# options that only a bulk import reads: given with write_mode=upsert they are a mistake, not a no-op
_IMPORT_ONLY = ("import_uri", "import_source_uri", "import_integration_id", "import_timeout_s")


class ImportOptions(BackendOptions, kw_only=True, forbid_unknown_fields=True):
    """Pinecone's bulk-import options; ``PineconeOptions`` extends this."""

    write_mode: Literal["upsert", "import"] = "upsert"
    import_uri: str | None = (
        None  # where tasks write the Parquet files: s3://, gs://, az://, file:// or a path
    )
    import_source_uri: str | None = None  # the same folder as Pinecone names it, if not import_uri itself
    import_integration_id: str | None = None  # Pinecone's storage integration for a private bucket
    import_poll_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = IMPORT_POLL_S
    import_timeout_s: Annotated[float, msgspec.Meta(gt=0)] | None = None  # None: wait until the import ends

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.write_mode != "import":  # never read by an upsert: say so rather than upsert quietly
            given = [name for name in _IMPORT_ONLY if getattr(self, name) is not None]
            given += ["import_poll_s"] if self.import_poll_s != IMPORT_POLL_S else []
            if given:
                raise ConfigError(
                    f"option {given[0]}: is read only by a bulk import and write_mode is {self.write_mode!r}, so "
                    f"the rows would be upserted; set write_mode=import to import them, or leave {given[0]} out"
                )
        if self.write_mode == "import" and self.op_column:
            raise ConfigError(
                "option op_column: write_mode=import adds rows to new namespaces and cannot delete; "
                "use write_mode=upsert for a write with deletes"
            )
        if self.write_mode == "import" and not self.import_uri:
            raise ConfigError(
                "option import_uri: write_mode=import stages Parquet files there for Pinecone to import, "
                "e.g. import_uri=s3://my-bucket/pinecone-imports"
            )
        for option, uri in (("import_uri", self.import_uri), ("import_source_uri", self.import_source_uri)):
            if uri:
                refuse_credentials(uri, option)


def namespace_dir(namespace: str | None) -> str:
    """The folder Pinecone imports into ``namespace`` from."""
    return namespace or DEFAULT_NAMESPACE_DIR


def _namespace_name(directory: str) -> str:
    return "" if directory == DEFAULT_NAMESPACE_DIR else directory


def _namespace_problem(namespace: str | None, folder: Folder) -> str | None:
    """Why ``namespace`` cannot be a folder of an import in ``folder``, or ``None``."""
    if namespace and ("/" in namespace or namespace in (".", "..") or namespace.startswith(STAGING)):
        return (
            f"namespace {namespace!r} cannot be a folder of an import (no '/', '.', '..', '{STAGING}*'); "
            "use write_mode=upsert for such namespaces"
        )
    size = len(namespace.encode()) if namespace else 0
    if folder.scheme == "file" and size > NAME_MAX_BYTES:  # Pinecone takes up to 512: an upsert writes it
        shown = namespace[:32] + "..." if namespace and len(namespace) > 32 else namespace
        return (
            f"namespace {shown!r} ({size} bytes) cannot be a folder of an import in a local folder, whose names "
            f"hold at most {NAME_MAX_BYTES} bytes; use write_mode=upsert for such namespaces"
        )
    return None


# --------------------------------------------------------------------------------------------------
# the store: a staging.Folder


def import_folder(options: BackendOptions) -> Folder:
    """The import folder (``import_uri``) with the connector's retry count and timeout for S3."""
    uri = getattr(options, "import_uri", None) or ""
    if not uri.strip():
        raise ConfigError("option import_uri is required with write_mode=import")
    return Folder.parse(uri, "import_uri", max_retries=options.max_retries, timeout_s=options.timeout_s)


def source_uri(folder: Folder, options: BackendOptions, job: str) -> str:
    """The folder of one job's import, as Pinecone names it (``s3://``, ``gs://`` or Azure's ``https://``)."""
    given = getattr(options, "import_source_uri", None)
    if given:
        return f"{given.rstrip('/')}/{job}/"
    if folder.scheme in ("az", "abfs", "abfss", "wasb", "wasbs"):
        raise ConfigError(
            "option import_source_uri: Pinecone names an Azure folder by its https:// URL; give it, e.g. "
            "import_source_uri=https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX"
        )
    if folder.scheme == "file":  # check_import refuses it unless the index host is loopback (the tests')
        return f"file://{folder.uri}/{job}/"
    if folder.scheme not in PINECONE_READS:  # staged, then refused at the start: refuse on the driver
        raise ConfigError(
            f"option import_source_uri: Pinecone reads only s3://, gs:// and Azure's https:// folders, and "
            f"import_uri {folder.shown!r} is {folder.scheme}://; give the same folder as Pinecone names it, e.g. "
            "import_source_uri=s3://my-bucket/pinecone-imports (for s3a://my-bucket/pinecone-imports), or set "
            "import_uri to an s3:// or gs:// folder"
        )
    return f"{folder.shown}/{job}/"


def _parquet_schema() -> pa.Schema:
    import pyarrow as pa

    sparse = pa.struct([("indices", pa.list_(pa.uint32())), ("values", pa.list_(pa.float32()))])
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("values", pa.list_(pa.float32())),
            pa.field("sparse_values", sparse),
            pa.field("metadata", pa.string()),
        ]
    )


def metadata_text(metadata: dict[str, Any]) -> bytes:
    """A row's metadata as JSON, as the upsert's REST body holds it (``metadata_json``: every database's)."""
    from ..rows.checks import metadata_json  # numpy: only once rows are written

    return metadata_json(metadata)


def rows_table(batch: RowBatch) -> pa.Table:
    """One ``RowBatch`` in Pinecone's import columns; vectors go from the matrix buffer, not through lists."""
    import numpy as np
    import pyarrow as pa

    schema = _parquet_schema()
    n = len(batch)
    ids = pa.array([str(i) for i in batch.ids], type=pa.string())
    if batch.vectors is not None:
        dim = batch.vectors.shape[1]
        flat = pa.array(np.ascontiguousarray(batch.vectors, dtype=np.float32).reshape(-1), type=pa.float32())
        values = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * dim), flat)
    else:
        values = pa.nulls(n, type=schema.field("values").type)
    if batch.sparse is not None and any(s is not None for s in batch.sparse):
        sparse = pa.array(
            [None if s is None else {"indices": s[0], "values": s[1]} for s in batch.sparse],
            type=schema.field("sparse_values").type,
        )
    else:
        sparse = pa.nulls(n, type=schema.field("sparse_values").type)
    if batch.metadata is not None:
        metadata = pa.array(
            [metadata_text(m).decode() if m else None for m in batch.metadata], type=pa.string()
        )
    else:
        metadata = pa.nulls(n, type=pa.string())
    return pa.Table.from_arrays([ids, values, sparse, metadata], schema=schema)


@dataclass
class ImportStager:
    """One task attempt's rows, checked as for upserts and written to one staged file per namespace.

    Has the two things a Spark task needs of a client (``write`` and ``spec``); ``close`` finishes
    the files, which must happen before the task returns its report.
    """

    client: Client
    folder: Folder
    job: str
    partition: int = 0
    attempt: int = 0
    files: dict[str, str] = field(default_factory=dict)  # namespace folder -> staged path
    _writers: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    _pending: dict[str, list[pa.Table]] = field(default_factory=dict)  # request-sized pieces, one row group
    _pending_bytes: int = 0  # of every namespace's pieces

    @property
    def spec(self) -> ColumnSpec:
        return self.client.spec

    def __enter__(self) -> ImportStager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, data: Any, namespace: str | None = None) -> WriteReport:
        """Stage ``data`` (what ``Client.write`` takes), read and prepared as an upsert's rows are (the
        client's ``batches``: any accepted input, checks, ids, embeddings); refused rows are the report's
        failures."""
        started = time.monotonic()
        report = WriteReport()
        refused: list[BatchFailure] = []
        ns = namespace if namespace is not None else self.client.options.namespace
        embedding = self.client.embedding
        embedded_before = None if embedding is None else embedding.counts()
        try:
            for batch in self.client.batches(data, ns, refused):
                if batch.op == DELETE:  # a Beam element's "op", or Client.delete's rows
                    refused.append(
                        batch.failure(range(len(batch)), IMPORT_CANNOT_DELETE, error_type="Invalid")
                    )
                    continue
                problem = _namespace_problem(batch.namespace, self.folder)
                if problem is not None:
                    refused.append(batch.failure(range(len(batch)), problem, error_type="Invalid"))
                    continue
                table = rows_table(batch)
                self._stage(namespace_dir(batch.namespace), table)
                report.written += len(batch)
                report.bytes_sent += table.nbytes
        finally:
            for failure in refused:
                report.failed += failure.rows
                report.failures.append(failure)
            if embedding is not None and embedded_before is not None:  # the stage counts over its life
                embedding.account(report, embedded_before)
            report.elapsed_s = time.monotonic() - started
        return report

    def _stage(self, directory: str, table: pa.Table) -> None:
        """Rows come sized for requests; gather them into row groups of ``ROW_GROUP_ROWS``, holding at most
        ``PENDING_BYTES`` in all: past it the namespace with the most bytes pending is written first."""
        pending = self._pending.setdefault(directory, [])
        pending.append(table)
        self._pending_bytes += table.nbytes
        if sum(t.num_rows for t in pending) >= ROW_GROUP_ROWS:
            self._flush(directory)
        while self._pending_bytes >= PENDING_BYTES:
            self._flush(max(self._pending, key=lambda d: sum(t.nbytes for t in self._pending[d])))

    def _flush(self, directory: str) -> None:
        import pyarrow as pa

        pending = self._pending.pop(directory, [])
        self._pending_bytes -= sum(t.nbytes for t in pending)
        if pending:
            writer = self._writer(directory)
            with self.folder.failing_as("write", self.files[directory]):
                writer.write_table(pa.concat_tables(pending))

    def _writer(self, directory: str) -> Any:
        import pyarrow.parquet as pq

        entry = self._writers.get(directory)
        if entry is None:
            name = staged_name(self.job, self.partition, self.attempt, directory, STAGED_FOR)
            stream = self.folder.open_output(name)
            entry = self._writers[directory] = (stream, pq.ParquetWriter(stream, _parquet_schema()))
            self.files[directory] = name
        return entry[1]

    def close(self) -> None:
        """Finish every staged file (a file is complete only once closed)."""
        for directory in list(self._pending):
            self._flush(directory)
        writers, self._writers = self._writers, {}
        for directory, (stream, writer) in writers.items():
            with self.folder.failing_as("write", self.files[directory]):
                writer.close()
                stream.close()


def _refuse_existing(existing: Mapping[str, int], namespaces: Iterable[str], target: str) -> None:
    taken = sorted(ns for ns in namespaces if ns in existing)
    if taken:
        shown = ", ".join(f"{ns or '(default)'!r} ({existing[ns]} vectors)" for ns in taken)
        raise ConfigError(
            f"write_mode=import: namespace {shown} already exists in {target}; Pinecone imports only into "
            "namespaces that do not exist yet: choose a new namespace, delete this one, or use write_mode=upsert"
        )


# --------------------------------------------------------------------------------------------------
# steps 1 and 3: the driver


def check_import(client: Client, *, streaming: bool = False, overwrite: bool = False) -> None:
    """Everything an import can check before any task: the mode, the store, the namespace."""
    options = client.options
    if streaming:
        raise ConfigError(
            "option write_mode=import is for bounded input: a stream (a streaming query, an unbounded "
            "PCollection) cannot import each micro-batch, and its import would never start (Pinecone "
            "imports only into new namespaces, and an import takes minutes); use write_mode=upsert"
        )
    if overwrite:
        raise ConfigError(
            'option write_mode=import: mode("overwrite") is not supported (Pinecone imports only into '
            'namespaces that do not exist yet); use mode("append") with a new namespace'
        )
    folder = import_folder(options)
    if options.namespace is not None:
        problem = _namespace_problem(options.namespace, folder)
        if problem is not None:
            raise ConfigError(f"option namespace: {problem}")
    _refuse_shared_with_letters(folder, options)
    source_uri(folder, options, "job")  # an Azure folder needs import_source_uri: say so now
    _refuse_unreadable_source(folder, options, cast(ImportHost, client.backend).host)
    folder.check_writable()
    if options.namespace_column is None:
        imports = PineconeImports(cast(ImportHost, client.backend))
        _refuse_existing(imports.namespaces(), [options.namespace or ""], client.backend.describe())


def _refuse_shared_with_letters(folder: Folder, options: BackendOptions) -> None:
    """Dead letters and import files in one folder mix: Pinecone would read the letters' files as rows of
    the import, and a cleanup of either would delete the other's."""
    given = options.dead_letter_path
    if not given:
        return
    letters = Folder.parse(given, "dead_letter_path")
    if folder.overlaps(letters):
        raise ConfigError(
            f"options import_uri and dead_letter_path: {folder.shown!r} and {letters.shown!r} are the same "
            "folder or one holds the other; the dead letters and the files Pinecone imports must not mix: give "
            "each its own folder (e.g. import_uri=s3://bucket/imports, dead_letter_path=s3://bucket/dead-letters)"
        )


def _refuse_unreadable_source(folder: Folder, options: BackendOptions, host: str) -> None:
    """A local folder (a mount such as ``/dbfs/...``) is where tasks can write, but Pinecone reads only object
    storage: without the bucket behind it (``import_source_uri``) a job would stage every row, then fail to
    start the import. The tests' index host on loopback reads the folder itself."""
    if folder.scheme != "file" or getattr(options, "import_source_uri", None) or is_loopback_host(host):
        return
    raise ConfigError(
        f"option import_source_uri: import_uri {folder.shown!r} is a local folder, and Pinecone imports only from "
        "object storage (S3, GCS, Azure Blob Storage); for a mount such as /dbfs/... or /Volumes/..., give the "
        "bucket folder behind it as import_source_uri (e.g. import_source_uri=s3://my-bucket/pinecone-imports), "
        "or set import_uri to the bucket itself"
    )


def abort_import(options: BackendOptions, job: str) -> None:
    """Delete what the tasks of a failed job staged.

    It runs while another error fails the write, often the store's own outage: a delete that fails then
    leaves files behind, said in a warning, and must not take the place of the error that failed the write."""
    folder = import_folder(options)
    try:
        folder.discard(job, STAGED_FOR)
    except StagingFailed as left:
        logger.warning(
            "%s: the staged files stay in %s/%s/ (delete them): %s",
            job,
            folder.shown,
            staging_dir(job, STAGED_FOR),
            left,
        )


def publish_staged(folder: Folder, job: str, attempts: Iterable[tuple[int, int]]) -> Published:
    """Move the staged files of the attempts that succeeded to ``<job>/<namespace>/part-N.parquet``, delete
    the rest; the published files per namespace folder, and the attempts whose files were not found."""
    return folder.publish(
        job,
        attempts,
        lambda directory, partition: f"{job}/{directory}/part-{partition:05d}.parquet",
        STAGED_FOR,
    )


def finish_import(
    client: Client,
    staged: WriteReport,
    attempts: Sequence[tuple[int, int]],
    job: str,
    progress: Callable[[str], None] | None = None,
) -> WriteReport:
    """Publish the staged files, start the import, wait for its end; the write's report.

    ``staged`` is the merged report of the tasks (``written``: rows staged); ``attempts``: those that
    succeeded (an attempt that staged nothing may be among them). The result's ``written`` is what
    Pinecone imported, and staged rows it did not import are failures (named when it imported none).

    Safe to run again for the same job (a runner retrying Beam's step, a driver run again): an import of
    the job's folder already started is followed, not started again, and files an earlier run published
    are imported, not taken for files the driver cannot see. A run deletes only files it published itself.

    Raises:
        WriteFailed: under ``on_error=fail`` when staging refused rows, before anything is published: the
            write fails anyway, and an import started now would fill the new namespace, which Pinecone
            then refuses to import into again once the rows are fixed.
        StagingFailed: the driver cannot find every staged row's file (``import_uri`` is not storage
            the driver shares with the executors); nothing is imported.
        DeadlineExceeded: the import went on past ``import_timeout_s``, or its status could not be read
            for that long; it may still be running. ``.report`` holds the account so far.
    """
    say = progress or logger.info
    options = client.options
    target = client.backend.describe()
    folder = import_folder(options)
    started = time.monotonic()
    if staged.failed and options.on_error == "fail":
        raise refused_while_staging(staged, target)
    if staged.written == 0:
        publish_staged(folder, job, attempts)  # nothing to move: drops the staging folder
        say(f"{job} into {target}: no rows to import")
        return staged
    imports = PineconeImports(cast(ImportHost, client.backend))
    error_mode = "abort" if options.on_error == "fail" else "continue"
    uri = source_uri(folder, options, job)
    # Looked up before anything moves: a run again for the job (a runner retrying this step, a Spark
    # micro-batch replayed under its job name) must neither move files into the folder an import reads nor
    # start a second import, which fails (its namespaces are the first's) and reports as failed the rows
    # the first one imports.
    import_id = imports.find(uri)
    if import_id is not None:
        say(f"{job} into {target}: import {import_id} of {uri} was started by an earlier run: following it")
        try:
            folder.discard(job, STAGED_FOR)  # this run's own staged files: the import reads the earlier run's
        except StagingFailed as left:
            logger.warning("%s: this run's staged files stay: %s", job, left)
        published = _job_files(folder, job)
    else:
        mine = publish_staged(folder, job, attempts)  # what this run moved: the only files it may delete
        published, asked = mine, False
        try:
            if mine.missing:  # an earlier run may have moved them, and stopped before the start
                published = _job_files(folder, job)
            # an attempt may have staged nothing (a Beam bundle whose rows were all refused): only fewer rows in
            # the files than the tasks staged proves the driver cannot see them (read only when files are missing)
            if (mine.missing or not mine) and _published_rows(folder, published) < staged.written:
                raise folder.not_shared(
                    "files",
                    (partition for partition, _ in mine.missing),
                    f"Nothing was imported and no row counts as written; what the driver did see is deleted, the "
                    f"rest stays where the tasks wrote it ({staging_dir(job, STAGED_FOR)}/ on the executors' own "
                    "disks).",
                )
            _refuse_existing(imports.namespaces(), _namespaces(published), target)  # rows may name their own
            asked = True
            import_id = imports.start(uri, error_mode, getattr(options, "import_integration_id", None))
        except ConnectorError as exc:
            # No import reads the files this run published (it was never asked for, or Pinecone refused it)
            # and a rerun stages anew: delete them. Not after an unclear failure (no answer, a 5xx), nor once
            # the import started: an import may be reading them. Files an earlier run published stay: that
            # run, not this one, knows whether an import reads them.
            if not asked or (isinstance(exc, ServerError) and not exc.retryable):
                try:
                    _delete_files(folder, job, mine)
                except StagingFailed as left:  # the error to raise is the one above: only say what is left
                    logger.warning("%s: the published files stay: %s", job, left)
            raise
        files = sum(len(v) for v in published.values())
        say(
            f"{job} into {target}: import {import_id} started: {staged.written} rows in {files} files, "
            f"{len(published)} namespace(s), from {uri} (error mode {error_mode})"
        )
    try:
        status = _wait(imports, import_id, options, say, job)
    except _LostSight as lost:
        raise _still_running(lost, job, import_id, _namespaces(published), uri, staged) from lost.cause
    report = _imported(staged, status, error_mode, lambda: _published_ids(folder, published))
    report.requests += 1
    report.elapsed_s = staged.elapsed_s + (time.monotonic() - started)
    say(
        f"{job} into {target}: import {import_id} {status.status}: {report.written} of {staged.written} "
        f"staged rows imported in {time.monotonic() - started:.1f} s"
        + (f"; {status.error}" if status.error else "")
    )
    return report


def _namespaces(published: Mapping[str, Sequence[str]]) -> list[str]:
    return [_namespace_name(d) for d in published]


def _job_files(folder: Folder, job: str) -> Published:
    """The files published for ``job`` so far (``<job>/<namespace>/*.parquet``), per namespace folder:
    the folder Pinecone imports, whichever run moved them there."""
    import pyarrow.fs as pafs

    fs, root = folder.filesystem()
    found = Published()
    with folder.failing_as("list", job):
        infos = fs.get_file_info(pafs.FileSelector(f"{root}/{job}", recursive=True, allow_not_found=True))
    for info in sorted(infos, key=lambda i: i.path):
        relative = info.path[len(root) + len(job) + 2 :]
        if info.type == pafs.FileType.File and relative.endswith(".parquet") and relative.count("/") == 1:
            found.setdefault(relative.split("/")[0], []).append(info.path)
    return found


def _delete_files(folder: Folder, job: str, published: Mapping[str, Sequence[str]]) -> None:
    """Delete ``published`` (files this run moved), and ``job``'s folder once nothing else is in it."""
    fs, _ = folder.filesystem()
    with folder.failing_as("delete", job):
        for paths in published.values():
            for path in paths:
                fs.delete_file(path)
    if not _job_files(folder, job):
        folder.delete_dir(job)


class PineconeBulk:
    """Pinecone's bulk path (``bulk.BulkPath``): the backend's ``bulk()`` with ``write_mode=import``."""

    def __init__(self, options: BackendOptions) -> None:
        self.options = options

    def check(self, client: Client, *, streaming: bool = False, overwrite: bool = False) -> None:
        check_import(client, streaming=streaming, overwrite=overwrite)

    def stager(self, client: Client, job: str, partition: int, attempt: int = 0) -> ImportStager:
        return ImportStager(client, import_folder(self.options), job, partition, attempt)

    def finish(
        self,
        staged: WriteReport,
        attempts: Sequence[tuple[int, int]],
        job: str,
        progress: Callable[[str], None] | None = None,
    ) -> WriteReport:
        from ..client import Client

        with Client(self.options) as client:
            return finish_import(client, staged, attempts, job, progress)

    def abort(self, job: str) -> None:
        abort_import(self.options, job)


POLL_OUTAGE_S = 900.0  # without import_timeout_s: how long the import's status may go unread
POLL_BACKOFF_CAP_S = 60.0


class _LostSight(Exception):
    """``_wait`` stopped following an import before its end: its time ran out, or its status could not be
    read (``cause``); ``last``: the status last read."""

    def __init__(self, why: str, last: ImportStatus | None, cause: ConnectorError | None = None) -> None:
        super().__init__(why)
        self.why, self.last, self.cause = why, last, cause


def _wait(
    imports: PineconeImports, import_id: str, options: BackendOptions, say: Callable[[str], None], job: str
) -> ImportStatus:
    """Poll the import until it ends. A poll that fails is an outage of the poll, not the import failing:
    polling goes on, backing off, until ``import_timeout_s`` (``POLL_OUTAGE_S`` of outage without it).
    A refusal no wait mends (a revoked key, an unknown import) stops at once."""
    poll_s = float(getattr(options, "import_poll_s", IMPORT_POLL_S))
    timeout_s = getattr(options, "import_timeout_s", None)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    shown: tuple[str, float | None] | None = None
    last: ImportStatus | None = None
    outage_since: float | None = None
    failures = 0
    while True:
        now = time.monotonic()
        try:
            status = imports.describe(import_id)
        except ConnectorError as exc:
            failures += 1
            outage_since = now if outage_since is None else outage_since
            if failures == 1:
                say(f"{job}: import {import_id}: its status cannot be read ({exc}); polling on")
            gave_up = deadline if deadline is not None else outage_since + POLL_OUTAGE_S
            if not (exc.retryable and not exc.fatal):
                raise _LostSight(f"its status could not be read ({exc})", last, exc) from exc
            if time.monotonic() >= gave_up:
                outage = time.monotonic() - outage_since
                raise _LostSight(
                    f"its status could not be read for {outage:.1f} s ({exc})", last, exc
                ) from exc
            delay = _poll_delay_s(poll_s, failures)
            time.sleep(max(0.0, min(delay, gave_up - time.monotonic())))
            continue
        if failures:
            say(f"{job}: import {import_id}: its status reads again after {failures} failed polls")
        failures, outage_since, last = 0, None, status
        if status.status in TERMINAL:
            return status
        if (status.status, status.percent_complete) != shown:
            shown = (status.status, status.percent_complete)
            done = "" if status.percent_complete is None else f" {status.percent_complete:.0f}%"
            rows = "" if status.records_imported is None else f", {status.records_imported} records"
            say(f"{job}: import {import_id} {status.status}{done}{rows}")
        if deadline is not None and time.monotonic() >= deadline:
            raise _LostSight(f"still {status.status} after {timeout_s} s (import_timeout_s)", status)
        time.sleep(poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic())))


def _poll_delay_s(poll_s: float, failures: int) -> float:
    """The wait after ``failures`` failed polls in a row: doubling from ``import_poll_s``, capped."""
    return min(poll_s * 2 ** min(failures - 1, 20), max(poll_s, POLL_BACKOFF_CAP_S))


def _still_running(
    lost: _LostSight, job: str, import_id: str, namespaces: Sequence[str], uri: str, staged: WriteReport
) -> ConnectorError:
    """The error for an import the driver stopped following: it names the import and its namespaces, says
    how to follow it, and carries the account so far (rows Pinecone had imported when last read; the other
    staged rows are failures whose end is unknown, as none can be named)."""
    imported = (lost.last.records_imported if lost.last is not None else None) or 0
    imported = min(imported, staged.written)
    unknown = staged.written - imported
    shown = ", ".join(repr(ns) if ns else "'' (default)" for ns in sorted(namespaces))
    goes_on = "it goes on" if lost.cause is None else "it may still be running"
    message = (
        f"{job}: import {import_id} into namespace(s) {shown}: {lost.why}; {goes_on} at Pinecone, reading "
        f"{uri}: follow it with describe_import({import_id!r}), or stop it with "
        f"cancel_import({import_id!r}). Of {staged.written} staged rows {imported} were imported when last read"
    )
    report = msgspec.structs.replace(
        staged, written=imported, failed=staged.failed + unknown, failures=list(staged.failures)
    )
    if unknown:
        report.failures.append(
            BatchFailure(
                ids=(),
                error=f"{unknown} staged rows: import {import_id} may still import them ({lost.why})",
                error_type="DeadlineExceeded",
                unnamed=unknown,
            )
        )
    error: ConnectorError
    if lost.cause is None or lost.cause.retryable:  # the wait ran out
        error = DeadlineExceeded(message)
    elif isinstance(lost.cause, ServerError):  # a refusal: its kind (AuthError, NotFound, ...) kept
        error = type(lost.cause)(message, status=lost.cause.status)
    else:
        error = type(lost.cause)(message)
    error.report = report
    return error


def _imported(
    staged: WriteReport, status: ImportStatus, error_mode: str, staged_ids: Callable[[], tuple[str, ...]]
) -> WriteReport:
    """The write's report from the tasks' one and the import's end.

    Pinecone counts the records it imported but never says which. When it imported none, every staged
    row failed, so they are named (``staged_ids`` reads the published files' ids back) and reach the
    report's failed ids and the dead letters; after a partial import they can only be counted."""
    imported = status.records_imported
    if imported is None:
        imported = staged.written if status.status == "Completed" else 0
    imported = min(imported, staged.written)
    missing = staged.written - imported
    # every count of the tasks' report carries over (embedding counts among them); only written changes
    report = msgspec.structs.replace(staged, written=imported, failures=list(staged.failures))
    if not missing:
        return report
    report.failed += missing
    if status.status == "Completed":
        why = f"Pinecone skipped records it could not read (error mode {error_mode})"
    else:
        why = f"import {status.id} {status.status}: {status.error or 'no reason given'}"
    reason = f"{missing} staged rows were not imported: {why}"
    if imported == 0:
        try:
            ids = staged_ids()
        except StagingFailed as exc:  # the import's account still stands: count the rows instead
            reason += f"; their ids could not be read back ({exc})"
        else:
            if len(ids) == missing:
                report.failures.append(BatchFailure(ids=ids, error=reason, error_type=NOT_IMPORTED))
                return report
            reason += f"; the staged files hold {len(ids)} rows, not {missing}, so they are not named"
    else:
        reason += (
            f"; Pinecone imported {imported} of {staged.written} and does not say which, so these are not "
            "named. Writing the same rows again with write_mode=upsert is safe (an upsert by id replaces "
            "a row already imported); another import needs namespaces that do not exist yet"
        )
    report.failures.append(BatchFailure(ids=(), error=reason, error_type=NOT_IMPORTED, unnamed=missing))
    return report


def _published_rows(folder: Folder, published: Mapping[str, Sequence[str]]) -> int:
    """The rows in the published files, from their footers."""
    import pyarrow.parquet as pq

    fs, root = folder.filesystem()
    rows = 0
    for paths in published.values():
        for path in paths:
            with folder.failing_as("read", path[len(root) + 1 :]), fs.open_input_file(path) as file:
                rows += pq.ParquetFile(file).metadata.num_rows
    return rows


def _published_ids(folder: Folder, published: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The ids of every row in the published files (their ``id`` column alone is read)."""
    import pyarrow.parquet as pq

    fs, root = folder.filesystem()
    ids: list[str] = []
    for paths in published.values():
        for path in paths:
            with folder.failing_as("read", path[len(root) + 1 :]):
                ids += pq.read_table(path, columns=["id"], filesystem=fs)["id"].to_pylist()
    return tuple(ids)


def import_data(
    client: Client, data: Any, *, namespace: str | None = None, progress: Callable[[str], None] | None = None
) -> WriteReport:
    """Import ``data`` (what ``Client.upsert`` takes) in one process: check, stage, import, wait, and apply
    ``on_error``. For the plain-Python client; Spark runs the same steps across its tasks."""
    from ..bulk import new_job
    from ..policy import enforce

    if namespace is not None:
        client = _with_namespace(client, namespace)
    check_import(client)
    # as a Spark driver does: the key and the index's dimension, which the rows must then have
    learnt = client.prepare_target().resolved.get("dimension")
    if learnt and client.options.dimension is None:
        client = _with_options(client, dimension=learnt)
    job = new_job()
    try:
        with ImportStager(client, import_folder(client.options), job) as stager:
            staged = stager.write(data)
        report = finish_import(client, staged, [(0, 0)], job, progress)
    except BaseException:
        abort_import(client.options, job)
        raise
    return enforce(report, client.options.on_error, client.backend.describe())


def _with_namespace(client: Client, namespace: str) -> Client:
    return _with_options(client, namespace=namespace, namespace_column=None)


def _with_options(client: Client, **changes: Any) -> Client:
    from ..client import Client

    return Client(msgspec.structs.replace(client.options, **changes))
