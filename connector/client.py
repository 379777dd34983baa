"""``connect(uri, **options) -> Client``: the one-process client every Spark task and Beam DoFn runs.

``Client.write`` sends everything and returns the ``WriteReport`` (per-row failures are
data); ``Client.upsert`` is ``write`` plus the ``on_error`` policy (``"fail"``, the
default, raises ``WriteFailed`` carrying the report); ``Client.dead_letters`` gives the
failed rows of a write back, whole, with their reasons. Options are validated when the
client is made; the transport (a process-shared gRPC channel or HTTP pool) opens on the
first write.

Deletes take the same path: with option ``op_column`` a write's rows say which are upserts and which
deletes (``rows.ops``), and ``Client.delete(ids)`` writes delete rows made from ids. They are prepared,
batched (one op per batch), sent by the engine, retried, isolated and reported as upserts are.

``on_error="dead_letter"``: ``upsert`` and ``delete`` write the failed rows' letters (``dead_letters``, one
``json_line`` a line) to a file of their own in ``dead_letter_path``, ``dead-letters-<UTC time>-<random>.jsonl``
(the name Beam's sink gives a run's, so no write overwrites or joins another's), before they return, and
return a ``LetteredReport`` naming it; a write whose rows all landed writes none. The folder is made and
probed when the client is made by ``connect`` (else at its first ``upsert`` or ``delete``), before any row is
sent: one that cannot be written is a ``ConfigError`` naming the option. ``write`` applies no policy and
writes no letters: Spark's tasks and Beam's sink call it and keep their letters their own way.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from .backends.base import Backend, check_vector_support
from .backends.registry import backend_class, canonical_uri
from .batching import split_rows
from .errors import ConfigError, ConnectorError, DimensionMismatch
from .forks import ForkCheck
from .options import BackendOptions, check_text, parse_options, uri_database
from .policy import enforce
from .redaction import caught, returned
from .report import BatchFailure, WriteReport
from .rows import (
    DELETE,
    Columns,
    ColumnSpec,
    DimensionState,
    Prepared,
    RowBatch,
    input_chunks,
    prepare_arrow,
    prepare_columns,
)
from .rows.dicts import check_input_columns, read_dicts
from .rows.ops import CODES

if TYPE_CHECKING:
    import pyarrow as pa

    from .bulk import BulkPath
    from .embedding.stage import EmbeddingStage
    from .engine import Engine
    from .staging import Folder

__all__ = [
    "Client",
    "LetteredReport",
    "TargetPrepared",
    "column_spec",
    "connect",
    "load_backend",
    "resolve_options",
]

DELETE_ROWS = 1000  # ids per delete request by default (a database that takes fewer: its limit)
# Client.delete prepares its ids in chunks of this many requests' worth: a chunk's checks (each id's
# type and length, one set of them for repeats) stay in the processor's cache, where one set of 200,000
# ids costs four times as much an id, and the first requests go out while later chunks are prepared. The
# engine keeps an id repeated across chunks in input order, as it does across any two batches.
DELETE_CHUNK_REQUESTS = 16


def resolve_options(raw: Mapping[str, Any]) -> BackendOptions:
    """Parse raw options (strings or values) into the backend's options Struct; ``ConfigError`` if bad,
    raised from a frame that no longer holds ``raw`` (its keys, in clear: ``options.parse_options``)."""
    outcome = caught(_resolve, raw)
    del raw
    try:
        return returned(outcome)
    finally:
        del outcome  # an error held by a frame it passed is a cycle (``redaction.returned``)


def _resolve(raw: Mapping[str, Any]) -> BackendOptions:
    uri = raw.get("uri")
    if not isinstance(uri, str) or not uri:
        raise ConfigError("option uri is required, e.g. uri='pinecone+grpc://my-index-abc.svc.pinecone.io'")
    if canonical_uri(uri) != uri:  # a file path: the embedded default, as an absolute path
        uri = canonical_uri(uri)
        raw = {**raw, "uri": uri}
    cls = backend_class(uri_database(uri))
    return parse_options(raw, cls.options_type)


def load_backend(options: BackendOptions) -> Backend[Any]:
    """The backend for parsed options; its constructor checks what only it knows (hosts, keys, limits)."""
    backend: Backend[Any] = backend_class(uri_database(options.uri))(options)
    return backend


def connect(uri: str, **options: Any) -> Client:
    """A client for ``uri``, with the options of ``BackendOptions`` and the backend's own (the README's
    options table). Use it as a context manager.

    Unlike ``Client(options)``, which reads ``api_key_env`` only when it connects (on a worker),
    this reads it now, so a variable that is not set fails here rather than at the first write.
    """
    outcome = caught(_connect, {"uri": uri, **options})
    # a bad option is raised from this frame, which must not hold the options (their keys in clear):
    # tools print a traceback's locals (``redaction``); the frames it came through are dropped
    del uri, options
    try:
        return returned(outcome)
    finally:
        del outcome  # an error held by a frame it passed is a cycle (``redaction.returned``)


def _connect(raw: dict[str, Any]) -> Client:
    parsed = resolve_options(raw)
    parsed.credential()
    client = Client(parsed)
    if client.embedding is not None:
        client.embedding.options.credential()  # embed_api_key_env, read now like api_key_env
    client.letter_folder()  # dead_letter_path made and probed now, as api_key_env is read now
    return client


class LetteredReport(WriteReport, kw_only=True):
    """A ``WriteReport`` of a plain-client ``upsert`` or ``delete`` with ``on_error="dead_letter"`` whose failed
    rows' letters were written: ``dead_letter_file`` is that file; the summary (and so the repr) names it."""

    dead_letter_file: str
    dead_letters: int  # letters in the file: the failed rows, but for rows a failure only counts

    def summary(self) -> str:
        return f"{super().summary()}; {self.dead_letters} dead letters in {self.dead_letter_file}"


def column_spec(options: BackendOptions) -> ColumnSpec:
    """Which input columns hold what, from the options and the backend's input columns (Chroma's
    document_column): the client's readers and the Beam sink's read rows by this one spec, so neither
    drops a column the other reads. Asks the backend's class, not a backend: the Beam sink builds its
    reader where a key may not be at hand yet (a Beam ``Secret`` is fetched on the workers)."""
    backend = backend_class(uri_database(options.uri))
    return ColumnSpec(
        id_column=options.id_column,
        id_from=tuple(options.id_from or ()),
        vector_column=options.vector_column,
        sparse_column=options.sparse_column,
        metadata_columns=None if options.metadata_columns is None else tuple(options.metadata_columns),
        input_columns=tuple(backend.input_columns(options)),
        namespace_column=options.namespace_column,
        op_column=options.op_column,
        vector_columns=tuple((options.vector_columns or {}).items()),
        multi_vector_columns=tuple((options.multi_vector_columns or {}).items()),
    )


@dataclass(frozen=True, slots=True)
class TargetPrepared:
    """What ``Client.prepare_target`` did: options for the workers, and what it cleared (for the log)."""

    resolved: dict[str, Any]
    cleared: str | None


class Client:
    """Batched, concurrent, retrying upserts (and deletes) to one target. Writes from several threads
    run one after another, each with its own report: the engine keeps one write's account at a time
    (its concurrency is inside a write)."""

    def __init__(self, options: BackendOptions) -> None:
        self.options = options
        self.backend: Backend[Any] = load_backend(options)
        # several vectors a row on a database that stores one: refused before anything is read or sent
        check_vector_support(self.backend, options)
        self.spec = column_spec(options)
        self._inputs_seen = False  # a row held every backend input column (``check_input_columns``)
        limits = self.backend.limits
        self.max_rows = min(options.batch_size or limits.default_rows, limits.max_rows)
        self.max_bytes = min(options.max_batch_bytes or limits.default_bytes, limits.max_bytes)
        # what sets it, for a row too large to send: the option, its default here, or the database's limit
        if options.max_batch_bytes is not None and options.max_batch_bytes < limits.max_bytes:
            self._bytes_limit = "option max_batch_bytes"
        elif self.max_bytes < limits.max_bytes:
            self._bytes_limit = (
                f"option max_batch_bytes's default; {self.backend.name} takes {limits.max_bytes}"
            )
        else:
            self._bytes_limit = f"{self.backend.name}'s request limit"
        # a delete row is its id: requests of DELETE_ROWS ids (or batch_size's), as many as the database takes
        self.max_delete_rows = min(
            options.batch_size or max(limits.default_rows, DELETE_ROWS), limits.max_delete_rows
        )
        if options.batch_size and options.batch_size > limits.max_rows:
            raise ConfigError(
                f"option batch_size: {self.backend.name} takes at most {limits.max_rows} rows per request"
            )
        if options.max_batch_bytes and options.max_batch_bytes > limits.max_bytes:
            raise ConfigError(
                f"option max_batch_bytes: {self.backend.name} takes at most {limits.max_bytes} bytes "
                "per request"
            )
        self.dimension = DimensionState(
            options.dimension,
            resolve=self._agree_dimension,
            named=self._stated_dimensions(),
            resolve_named=self._agree_named_dimensions,
        )
        self._target_checked = False
        self._letters: Folder | None = None  # dead_letter_path once probed (``letter_folder``)
        self._engine: Engine | None = None
        self._writing = threading.Lock()
        self._writer: int | None = None  # the thread whose write is under way
        self._fork = ForkCheck()
        self.embedding: EmbeddingStage | None = None  # rows with text and no vector get the model's
        if options.embed_url is not None:
            from .embedding.stage import stage_for

            self.embedding = stage_for(options, self.spec, upsert_rows=self.max_rows)

    def __repr__(self) -> str:
        return f"Client({self.backend.describe()})"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's senders and connections, once the write under way (another thread's) has
        ended: closed under it, the write would stop half sent with no account of what landed. A later
        write opens them again (a cached client reused after a close works), to be closed again after."""
        self._outside_a_write("close")
        with self._writing:
            if self._engine is not None:
                self._engine.close()
                self._engine = None
            if self.embedding is not None:
                self.embedding.close()

    @property
    def bulk(self) -> BulkPath | None:
        """The database's bulk path for these options (``write_mode=import``…), or ``None``: rows are
        upserted. Spark and Beam drive it without naming a database (``bulk.BulkPath``)."""
        return self.backend.bulk()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from .engine import Engine

            self._engine = Engine(self.backend, self.backend.open_transport(), self.options)
        return self._engine

    def clear(self, namespace: str | None = None) -> str:
        """Delete every row in ``namespace`` of the target (``None``: the whole collection or index,
        every namespace); the collection stays. Returns what was cleared. Not atomic with a later
        write: a reader in between sees the target empty."""
        if not self.backend.supports_clear:
            raise ConfigError(f"{self.backend.name} cannot delete a target's rows")
        if namespace is not None:
            check_text("namespace", namespace)
        transport = self.engine.transport
        if self.spec.named:  # the target as the write's names have it (each name checked)
            self.backend.check_named_target(transport, self._stated_dimensions())
        else:
            self.backend.check_target(transport, self.options.dimension)
        return self.backend.clear_target(transport, namespace)

    def check_columns(self, empty: pa.RecordBatch) -> None:
        """A job's driver side, before any row is read: the input's columns (an empty batch of its schema)
        checked as every worker's reader will check them, the embedding stage's text column first (the
        vector column it adds passes). A missing column or one of a type no reader takes is a
        ``ConfigError`` naming the option, here rather than in each worker.

        Raises:
            ConfigError: naming the option or column at fault.
        """
        if self.embedding is not None:
            empty = self.embedding.check_schema(empty)
        prepare_arrow(empty, self.spec, self.backend.rules, DimensionState(self.options.dimension))

    def prepare_target(
        self, *, clear: bool = False, dense: bool = True, own_namespaces: bool = True
    ) -> TargetPrepared:
        """A job's driver side, before any worker writes: check (with ``create=true`` make) the target,
        clear it when asked (option ``namespace``, or the whole target when rows carry their own), and
        return the options the workers should add, so each skips what was learnt here: the target's
        dimension among them, so every worker refuses rows of another length alike.

        A job's workers each see only their own rows, so none may decide the dimension of a collection
        the job creates (one partition holding one short row would make it for all): ``create=true``
        with ``dense`` rows and no ``dimension``, on a target that fixes none yet, is a ``ConfigError``
        here, before any row is read. ``own_namespaces``: whether rows may name their own namespace (dict
        rows, Beam elements); Spark's cannot, so a target that needs one for every row
        (``Backend.needs_namespace``) with neither option ``namespace`` nor ``namespace_column`` is a
        ``ConfigError`` before anything is cleared."""
        transport = self.backend.open_transport()
        if self.spec.named:
            return self._prepare_named_target(transport, clear, own_namespaces)
        self.backend.check_target(transport, self.options.dimension)
        fixed = self.backend.fixed_dimension()
        if self.options.create and dense and self.options.dimension is None and fixed is None:
            raise ConfigError(
                f"option dimension: {self.backend.describe()} has no dimension yet and create=true would let "
                "the rows of whichever task writes first decide it for the whole job (one short vector "
                "could); state the vectors' length with option dimension"
            )
        cleared = self._cleared(transport, clear, own_namespaces)
        resolved = self.backend.resolved_options()
        if fixed is not None and self.options.dimension is None:
            resolved["dimension"] = fixed
        return TargetPrepared(resolved=resolved, cleared=cleared)

    def _prepare_named_target(self, transport: Any, clear: bool, own_namespaces: bool) -> TargetPrepared:
        """``prepare_target`` for named vectors: the same rule per name (no task's rows decide a name's
        dimension of a target the job creates), and every name's dimension the target fixes for the workers."""
        dimensions = {
            **self._stated_dimensions(),
            **self.backend.check_named_target(transport, self._stated_dimensions()),
        }
        unknown = [name for name, value in dimensions.items() if value is None]
        if self.options.create and unknown:
            raise ConfigError(
                f"option vector_dimensions: {self.backend.describe()} fixes no dimension for "
                f"{', '.join(map(repr, unknown))} and create=true would let the rows of whichever task writes "
                "first decide it for the whole job; state each name's, e.g. vector_dimensions='title:768'"
            )
        cleared = self._cleared(transport, clear, own_namespaces)
        resolved = self.backend.resolved_options()
        known = {name: value for name, value in dimensions.items() if value is not None}
        if known:
            resolved["vector_dimensions"] = known
        return TargetPrepared(resolved=resolved, cleared=cleared)

    def _cleared(self, transport: Any, clear: bool, own_namespaces: bool) -> str | None:
        """After the target check: refuse a write whose rows cannot name the namespace the target needs for
        each, then clear when asked (what was cleared, for the log)."""
        options = self.options
        needed = None if own_namespaces else self.backend.needs_namespace()
        if needed is not None and options.namespace is None and options.namespace_column is None:
            raise ConfigError(f"option namespace: {needed}; give option namespace or namespace_column")
        if not clear:  # a backend that cannot clear raises its ConfigError there (Backend.clear_target)
            return None
        namespace = None if options.namespace_column else options.namespace
        return self.backend.clear_target(transport, namespace)

    def letter_folder(self) -> Folder | None:
        """Option ``dead_letter_path`` with ``on_error="dead_letter"``, made and probed once (``None`` with
        the other policies): a folder that cannot be written is a ``ConfigError`` naming the option."""
        if self.options.on_error != "dead_letter":
            return None
        if self._letters is None:
            from .staging import Folder

            given = Folder.parse(
                str(self.options.dead_letter_path),
                "dead_letter_path",
                max_retries=self.options.max_retries,
                timeout_s=self.options.timeout_s,
            )
            self._letters = given.check_writable()
        return self._letters

    def upsert(self, data: Any, namespace: str | None = None) -> WriteReport:
        """Write ``data`` and apply ``on_error``: with ``"fail"`` any failed row raises ``WriteFailed``;
        with ``"dead_letter"`` the failed rows' letters are written to ``dead_letter_path`` first (a
        ``LetteredReport`` names the file; see the module docstring). ``data`` that can be read again (a
        Table, a list, a DataFrame) gives letters holding their rows; a one-pass iterator's hold the reason
        and id alone.

        Args:
            data: a ``pyarrow.Table`` or ``RecordBatch``, an iterable of them, or an iterable of dicts
                ``{"id", "values", "sparse_values"?, "metadata"?, "namespace"?}`` / ``VectorRecord``s,
                or ``rows.Columns`` (read as they are: the column options do not apply).
            namespace: overrides option ``namespace`` for this call.
        """
        return self._applied(data, namespace)

    def delete(self, ids: Iterable[Any], namespace: str | None = None) -> WriteReport:
        """Delete ``ids`` from the target and apply ``on_error``, as ``upsert`` does; an id that is not
        there is deleted all the same (nothing to do), so a retried delete is safe.

        Args:
            ids: the ids as the database knows them: strings or integers (UUIDs as text or ``uuid.UUID``);
                ids that Qdrant or Weaviate store as UUIDs are mapped as upserts map them. With ``id_from``,
                the derived ids.
            namespace: overrides option ``namespace`` for this call.

        Returns:
            The ``WriteReport``: ``deleted`` rows, and failures (``op="delete"``) naming the ids. With
            ``on_error="dead_letter"`` each failed id's letter (``"op": "delete"`` where the ids came as a
            list of at most ``max_delete_rows * DELETE_CHUNK_REQUESTS``; more, or an iterator, are read once
            and their letters hold the reason and id alone) goes to ``dead_letter_path``, as ``upsert``'s do.
        """
        if isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
            raise ConfigError("delete() takes an iterable of ids, not a single id: wrap it in a list")
        if hasattr(ids, "to_pylist"):  # a pyarrow Array or ChunkedArray: its values, not Arrow scalars
            ids = ids.to_pylist()
        elif hasattr(ids, "tolist"):  # a numpy array or a pandas Series: Python ints, not numpy's
            ids = ids.tolist()
        step = self.max_delete_rows * DELETE_CHUNK_REQUESTS
        rows: Columns | Iterator[Columns]
        if isinstance(ids, list) and len(ids) <= step:
            rows = delete_rows(ids)
        else:  # read as sent: a generator of many ids is never held whole
            source = iter(ids)
            rows = (delete_rows(chunk) for chunk in iter(lambda: list(itertools.islice(source, step)), []))
        return self._applied(rows, namespace)

    def _applied(self, data: Any, namespace: str | None) -> WriteReport:
        """``write(data, namespace)`` under ``on_error``, for ``upsert`` and ``delete``: with ``"dead_letter"`` the folder is
        probed before any row is sent, and the failed rows' letters are written before this returns, or
        raises (a write stopped part way: the failures before the stop, the error's note naming the file)."""
        folder = self.letter_folder()
        try:
            report = self.write(data, namespace)
        except ConnectorError as exc:
            if folder is not None and exc.report is not None and exc.report.failures:
                exc.report = self._posted(folder, data, exc.report, namespace)
                exc.add_note(f"vectordb: the rows that failed before the stop: {exc.report.summary()}")
            raise
        if folder is not None and report.failures:
            report = self._posted(folder, data, report, namespace)
        return enforce(report, self.options.on_error, self.backend.describe())

    def _posted(
        self, folder: Folder, data: Any, report: WriteReport, namespace: str | None
    ) -> LetteredReport:
        """``report``'s failed rows' letters as JSON Lines in a new file of ``folder``; the report naming it.
        A file that cannot be written raises ``StagingFailed`` (naming the option), carrying ``report``:
        the rows that landed are stored."""
        from .dead_letters import json_line, letter_files_of_a_run
        from .rows.text import readable_pylist
        from .staging import StagingFailed

        letters = self.dead_letters(data, report, namespace)
        if not isinstance(letters, list):  # a pyarrow.Table: text that is not UTF-8 as its bytes
            letters = readable_pylist(letters)
        name = f"{letter_files_of_a_run()}.jsonl"
        try:
            folder.write_bytes(name, "".join(f"{json_line(letter)}\n" for letter in letters).encode())
        except StagingFailed as exc:
            exc.report = report
            raise
        fields = msgspec.structs.asdict(report)  # the file as given: a URI keeps its scheme
        return LetteredReport(**fields, dead_letter_file=f"{folder.shown}/{name}", dead_letters=len(letters))

    def write(self, data: Any, namespace: str | None = None) -> WriteReport:
        """Write ``data`` (as for ``upsert``) and return the report; failed rows do not raise, and no policy
        applies: with ``on_error="dead_letter"`` no letters are written (``upsert`` writes them;
        ``dead_letters(data, report)`` gives them). A write started while another runs on this client waits
        for it; one started from inside another (its input calling ``write``) would wait forever, and is
        an error."""
        self._outside_a_write("write")
        with self._writing:
            self._writer = threading.get_ident()
            try:
                return self._write(data, namespace)
            finally:
                self._writer = None

    def _outside_a_write(self, call: str) -> None:
        """Before taking the write lock: this process's own lock, and not already held by this thread
        (a write's input or callback calling ``call``), which would wait for itself for good."""
        self._fork.once_per_process(self._forget_parent)
        if self._writer == threading.get_ident():
            raise RuntimeError(
                f"{self!r}: {call} called from inside a write of the same client (its input, or a callback); "
                "use a second Client"
            )

    def _forget_parent(self) -> None:
        """In a forked child (``os.fork``, multiprocessing's default on Linux): a new engine and write lock.
        The parent's sender threads are not in this process, so its pools would take requests that no
        thread ever sends, and a write under way in the parent at the fork would hold the lock for good.
        The parent's are left alone, not closed (the transports forget its connections themselves; the
        embedding client makes its own senders)."""
        self._writing, self._writer, self._engine = threading.Lock(), None, None

    def _write(self, data: Any, namespace: str | None) -> WriteReport:
        report = WriteReport()
        refused: list[BatchFailure] = []
        ns = namespace if namespace is not None else self.options.namespace
        embedded_before = None if self.embedding is None else self.embedding.counts()
        deletes = _Deletes()
        prepared = self.batches(data, ns, refused)
        batches = deletes.watch(prepared)
        stopped: BaseException | None = None
        try:
            self.engine.run(batches, report)
        except ConnectorError as exc:
            exc.report = report  # the account up to the stop (completed below): written rows are stored
            report.stopped = True  # its summary says so (STOPPED), whichever stage's error it was
            raise
        except BaseException as exc:  # the input's own error, or an interrupt: rows before it were sent
            stopped = exc
            raise
        finally:
            # the input's generators stop now, an embedding stream's feeder and senders among them: left
            # to the collector, a raised error's traceback would keep them running (and the next write's
            # stream waiting on them) for as long as the caller holds the error
            batches.close()
            prepared.close()
            deletes.account(report)  # before the refused rows join: they never reached the engine
            for failure in refused:
                report.failed += failure.rows
                report.failures.append(failure)
            if self.embedding is not None and embedded_before is not None:  # the stage counts over its life
                self.embedding.account(report, embedded_before)
            if stopped is not None:
                _account_on(stopped, report, self.engine.dispatch.in_flight)
        return report

    def dead_letters(
        self, data: Any, report: WriteReport | Iterable[BatchFailure], namespace: str | None = None
    ) -> Any:
        """The rows of ``data`` that ``report`` says failed, each whole and with its reason.

        ``report`` is what ``write`` returned for ``data`` (or a ``ConnectorError``'s ``.report``,
        when the write stopped part way); failures name their rows by position in ``data``, so a
        repeated or missing id, or a UUID given as 16 bytes, still finds its own row::

            report = client.write(table)
            client.dead_letters(table, report)  # a pyarrow.Table: id, error, error_type, retryable, attempts, ...

        Args:
            data: what was written, readable again as it was (a Table, a list; not a spent generator).
            report: the write's report, or its failures.
            namespace: as given to ``write``.

        Returns:
            For Arrow (or pandas) input, a ``pyarrow.Table`` (a pandas frame Arrow cannot type: a list of
            dicts); for dicts and records, a list of dicts.
            Either holds ``id`` (the row's own, of its type, where the id column is named ``id``; else
            as the report names it), ``error``, ``error_type``, ``retryable`` and ``attempts``, then every
            column of the row (another column named like one of these gets a ``row_`` prefix).
            ``rows_from_letters`` turns fixed letters back into rows to write again.
        """
        from .dead_letters import dead_letters

        ns = namespace if namespace is not None else self.options.namespace
        return dead_letters(data, report, self.spec, ns)

    # -- input → sized batches ------------------------------------------------------------------

    def stated_mismatch(self, exc: DimensionMismatch) -> DimensionMismatch:
        """``exc`` naming the option that stated the write's dimension (the backend's words say "data has
        8", which a user who stated 8 and sent no row yet cannot place)."""
        if self.options.dimension is not None:
            stated = f"option dimension ({self.options.dimension})"
        else:
            stated = f"option vector_dimensions ({self.options.vector_dimensions})"
        return DimensionMismatch(f"{stated}: {exc}", target_dimension=exc.target_dimension)

    def _check_target(self, dimension: int | None) -> None:
        if self.spec.named:  # the target's dimensions per name become the write's
            self.dimension.named.update(self._agree_named_dimensions(dict(self.dimension.named)))
        else:
            self.backend.check_target(self.engine.transport, dimension)
        capped = self.backend.request_rows()  # a server that takes fewer rows a request than the default
        if capped is not None:
            self.max_rows = min(self.max_rows, capped)
        self._target_checked = True

    def _stated_dimensions(self) -> dict[str, int | None]:
        """Every name of a write with named vectors, with its dimension where option vector_dimensions states it."""
        stated = self.options.vector_dimensions or {}
        names = [*(self.options.vector_columns or {}), *(self.options.multi_vector_columns or {})]
        return {name: stated.get(name) for name in names}

    def _agree_named_dimensions(self, dimensions: dict[str, int | None]) -> dict[str, int]:
        """Per name, what ``_agree_dimension`` is for the single vector: the backend checks (with
        ``create=true`` makes) the target for every name, and the dimensions it fixes are the write's.
        ``dimensions`` learnt from the rows make a missing target; where the target has others, its own are
        the write's (``_check_named_target``)."""
        fixed = self._check_named_target(self.engine.transport, dimensions)
        self._target_checked = True
        return fixed

    def _check_named_target(self, transport: Any, dimensions: Mapping[str, int | None]) -> dict[str, int]:
        """``Backend.check_named_target``; a ``DimensionMismatch`` with dimensions learnt from the rows
        among ``dimensions`` is checked again with the stated ones alone (option ``vector_dimensions``):
        a learnt dimension is no statement and yields to the target's, as the single vector's does (rows of
        another length fail alone); a stated one the target contradicts is raised."""
        stated = self._stated_dimensions()
        try:
            return self.backend.check_named_target(transport, dimensions)
        except DimensionMismatch:
            if dict(dimensions) == stated:
                raise
        return self.backend.check_named_target(transport, stated)

    def _agree_dimension(self, from_rows: int) -> int:
        """The dimension a write learnt from its rows, unless the target has another: then the target's
        (rows of another length fail one by one). Checks, and with ``create=true`` makes, the target."""
        try:
            self._check_target(from_rows)
        except DimensionMismatch as exc:
            if exc.target_dimension is None:
                raise
            if self.embedding is not None and self.embedding.counts().embedded:  # the model's: all would fail
                raise self.embedding.mismatch(exc, from_rows) from None
            self._check_target(exc.target_dimension)
            return exc.target_dimension
        return from_rows

    def batches(
        self, data: Any, namespace: str | None, refused: list[BatchFailure]
    ) -> Generator[RowBatch, None, None]:
        """``data`` read, prepared (checks, ids, embeddings, the database's own rules) and sized into
        requests: the one way rows go from a caller's input to a sink, the engine's requests or a bulk
        path's staged files. Rows refused on the way are appended to ``refused``."""
        if not self._target_checked and (
            self.options.dimension is not None or self.options.vector_dimensions
        ):
            try:  # a stated dimension the target lacks: before any row
                self._check_target(self.options.dimension)
            except DimensionMismatch as exc:
                if self.embedding is not None:
                    raise self.embedding.mismatch(exc, self.options.dimension, stated=True) from None
                raise self.stated_mismatch(exc) from None
        for prepared in self._prepare(data, namespace):
            refused.extend(prepared.failures)
            for batch in prepared.batches:
                if not self._target_checked:  # a given dimension, or rows with no dense vector
                    self._check_target(self.dimension.value)
                if batch.op == DELETE:  # stores nothing: only the rules on what a request may name apply
                    kept, failures = self.backend.refuse_deletes(batch)
                else:
                    kept, failures = self.backend.refuse(batch)  # the backend's own rules (Chroma's metadata)
                refused.extend(failures)
                if kept is not None:
                    yield from self._split(kept, refused)

    def _prepare(self, data: Any, namespace: str | None) -> Iterator[Prepared]:
        chunks = input_chunks(data)  # each row keeps its position in data, for the report and dead letters
        for chunk in chunks if self.embedding is None else self.embedding.fill(chunks):
            # read each chunk: a backend's rules may follow what its target check learnt (PostgreSQL's id
            # column type says which spellings are one id), after the first chunk is prepared
            rules = self.backend.rules
            if isinstance(chunk, Prepared):  # rows the embedding stage failed
                yield chunk
                continue
            rows, positions = chunk.rows, chunk.positions
            # rows with no schema: the first with upserts show whether a backend input column's name is one
            # they hold (``check_input_columns``); once one did, the name is right for every later write
            check = not self._inputs_seen
            if isinstance(rows, list):
                cols, refused = read_dicts(rows, self.spec, namespace)
                if check:  # until a chunk had enough upsert rows to tell (a first write may be a few)
                    self._inputs_seen = check_input_columns(cols, self.spec, refused)
                yield prepare_columns(cols, rules, self.dimension, namespace, refused, positions)
            elif isinstance(rows, Columns):
                if check:
                    self._inputs_seen = check_input_columns(rows, self.spec)
                yield prepare_columns(rows, rules, self.dimension, namespace, positions=positions)
            else:
                yield prepare_arrow(rows, self.spec, rules, self.dimension, namespace, positions)

    def _split(self, batch: RowBatch, refused: list[BatchFailure]) -> Iterator[RowBatch]:
        from .engine import oversize_row  # loaded with the engine, which every write has by now

        sizes = self.backend.row_bytes(batch)
        limits = self.backend.limits
        max_rows = self.max_rows if batch.op != DELETE else self.max_delete_rows
        for piece in split_rows(sizes, max_rows, self.max_bytes, limits.overhead_bytes):
            if isinstance(piece, int):
                # the estimate errs large: a row over it is refused only if its request alone is too
                row = batch.slice(piece, piece + 1)
                encoded = len(self.backend.request_for(row).body)
                if encoded <= self.max_bytes:
                    yield row
                    continue
                refused.append(
                    batch.failure(
                        [piece],
                        oversize_row(encoded, self.max_bytes, self._bytes_limit),
                        error_type="Invalid",
                    )
                )
            else:
                yield batch.slice(*piece)


def _account_on(error: BaseException, report: WriteReport, in_flight: int) -> None:
    """Gives an error that is not the connector's (the input's own, an interrupt) the write's account, as
    a ``ConnectorError`` carries it: the rows sent before it are stored, and the caller that resumes must
    know which. ``.report`` unless the error has an attribute of that name already; a note either way.
    An interrupt does not wait for the requests on the wire: they end on their own threads and are
    counted in this same report as they do."""
    if not hasattr(error, "report"):
        with contextlib.suppress(AttributeError, TypeError):
            error.report = report  # type: ignore[attr-defined]
    note = f"vectordb: the write stopped on this error; before it: {report.summary()}"
    if in_flight:
        note += f"; {in_flight} requests still in flight: .report counts their rows as they end"
    error.add_note(note)


def delete_rows(ids: list[Any]) -> Columns:
    """Rows that delete ``ids``, as ``Columns`` that say their op themselves (no metadata to read it from)."""
    n = len(ids)
    return Columns(
        n=n,
        ids=ids,
        flat=np.zeros(0, dtype=np.float32),
        offsets=np.zeros(n + 1, dtype=np.int64),
        null_vector=np.ones(n, dtype=bool),
        sparse=None,
        metadata=None,
        namespaces=None,
        ops=np.full(n, CODES[DELETE], dtype=np.int8),
    )


class _Deletes:
    """The delete rows a write hands the engine, so its report can say which failures were deletes and
    how many deletes landed: the engine accounts for rows, whatever they are for."""

    def __init__(self) -> None:
        self.rows = 0
        self._marks = np.zeros(0, dtype=bool)  # by input position: a delete row

    def watch(self, batches: Iterable[RowBatch]) -> Generator[RowBatch, None, None]:
        for batch in batches:
            if batch.op == DELETE and len(batch):
                self.rows += len(batch)
                top = int(batch.positions.max()) + 1
                if top > len(self._marks):
                    grown = np.zeros(max(top, 2 * len(self._marks)), dtype=bool)
                    grown[: len(self._marks)] = self._marks
                    self._marks = grown
                self._marks[batch.positions] = True
            yield batch

    def account(self, report: WriteReport) -> None:
        """Mark the engine's failures of delete rows as such, and count the deletes that landed."""
        if not self.rows:
            return
        failed = 0
        for k, failure in enumerate(report.failures):
            first = failure.positions[0] if failure.positions else -1
            if failure.op != DELETE and 0 <= first < len(self._marks) and self._marks[first]:
                failure = report.failures[k] = msgspec.structs.replace(failure, op=DELETE)
            if failure.op == DELETE:
                failed += failure.rows
        # a write stopped by a fatal error may not have sent the last batch it took: never more than written
        report.deleted = max(0, min(self.rows - failed, report.written))
