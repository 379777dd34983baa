"""``connect(uri, **options) -> Client``: the one-process client every Spark task and Beam DoFn runs.

``Client.write`` sends everything and returns the ``WriteReport`` (per-row failures are
data); ``Client.upsert`` is ``write`` plus the ``on_error`` policy (``"fail"``, the
default, raises ``WriteFailed`` carrying the report); ``Client.dead_letters`` gives the
failed rows of a write back, whole, with their reasons. Options are validated when the
client is made; the transport (a process-shared gRPC channel or HTTP pool) opens on the
first write.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .backends.base import Backend
from .backends.registry import backend_class, canonical_uri
from .batching import split_rows
from .errors import ConfigError, ConnectorError, DimensionMismatch
from .options import BackendOptions, parse_options, uri_database
from .policy import enforce
from .report import BatchFailure, WriteReport
from .rows import (
    Columns,
    ColumnSpec,
    DimensionState,
    Prepared,
    RowBatch,
    input_chunks,
    prepare_arrow,
    prepare_columns,
    prepare_dicts,
)

if TYPE_CHECKING:
    from .bulk import BulkPath
    from .embedding.stage import EmbeddingStage
    from .engine import Engine

__all__ = ["Client", "TargetPrepared", "connect", "load_backend", "resolve_options"]


def resolve_options(raw: Mapping[str, Any]) -> BackendOptions:
    """Parse raw options (strings or values) into the backend's options Struct; ``ConfigError`` if bad."""
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
    parsed = resolve_options({"uri": uri, **options})
    parsed.credential()
    client = Client(parsed)
    if client.embedding is not None:
        client.embedding.options.credential()  # embed_api_key_env, read now like api_key_env
    return client


@dataclass(frozen=True, slots=True)
class TargetPrepared:
    """What ``Client.prepare_target`` did: options for the workers, and what it cleared (for the log)."""

    resolved: dict[str, Any]
    cleared: str | None


class Client:
    """Batched, concurrent, retrying upserts to one target. Thread-compatible: one write at a time."""

    def __init__(self, options: BackendOptions) -> None:
        self.options = options
        self.backend: Backend[Any] = load_backend(options)
        self.spec = ColumnSpec(
            id_column=options.id_column,
            id_from=tuple(options.id_from or ()),
            vector_column=options.vector_column,
            sparse_column=options.sparse_column,
            metadata_columns=None if options.metadata_columns is None else tuple(options.metadata_columns),
            namespace_column=options.namespace_column,
        )
        limits = self.backend.limits
        self.max_rows = min(options.batch_size or limits.default_rows, limits.max_rows)
        self.max_bytes = min(options.max_batch_bytes or limits.default_bytes, limits.max_bytes)
        if options.batch_size and options.batch_size > limits.max_rows:
            raise ConfigError(
                f"option batch_size: {self.backend.name} takes at most {limits.max_rows} rows per request"
            )
        if options.max_batch_bytes and options.max_batch_bytes > limits.max_bytes:
            raise ConfigError(
                f"option max_batch_bytes: {self.backend.name} takes at most {limits.max_bytes} bytes "
                "per request"
            )
        self.dimension = DimensionState(options.dimension, resolve=self._agree_dimension)
        self._target_checked = False
        self._engine: Engine | None = None
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
        self.backend.check_target(self.engine.transport, self.options.dimension)
        return self.backend.clear_target(self.engine.transport, namespace)

    def prepare_target(self, *, clear: bool = False, dense: bool = True) -> TargetPrepared:
        """A job's driver side, before any worker writes: check (with ``create=true`` make) the target,
        clear it when asked (option ``namespace``, or the whole target when rows carry their own), and
        return the options the workers should add, so each skips what was learnt here: the target's
        dimension among them, so every worker refuses rows of another length alike.

        A job's workers each see only their own rows, so none may decide the dimension of a collection
        the job creates (one partition holding one short row would make it for all): ``create=true``
        with ``dense`` rows and no ``dimension``, on a target that fixes none yet, is a ``ConfigError``
        here, before any row is read."""
        transport = self.backend.open_transport()
        self.backend.check_target(transport, self.options.dimension)
        fixed = self.backend.fixed_dimension()
        if self.options.create and dense and self.options.dimension is None and fixed is None:
            raise ConfigError(
                f"option dimension: {self.backend.describe()} has no dimension yet and create=true would let "
                "the rows of whichever task writes first decide it for the whole job (one short vector "
                "could); state the vectors' length with option dimension"
            )
        cleared = None
        if clear:  # a backend that cannot clear raises its ConfigError here (Backend.clear_target)
            namespace = None if self.options.namespace_column else self.options.namespace
            cleared = self.backend.clear_target(transport, namespace)
        resolved = self.backend.resolved_options()
        if fixed is not None and self.options.dimension is None:
            resolved["dimension"] = fixed
        return TargetPrepared(resolved=resolved, cleared=cleared)

    def upsert(self, data: Any, namespace: str | None = None) -> WriteReport:
        """Write ``data`` and apply ``on_error``: with ``"fail"`` any failed row raises ``WriteFailed``.

        Args:
            data: a ``pyarrow.Table`` or ``RecordBatch``, an iterable of them, or an iterable of dicts
                ``{"id", "values", "sparse_values"?, "metadata"?, "namespace"?}`` / ``VectorRecord``s,
                or ``rows.Columns`` (read as they are: the column options do not apply).
            namespace: overrides option ``namespace`` for this call.
        """
        return enforce(self.write(data, namespace), self.options.on_error, self.backend.describe())

    def write(self, data: Any, namespace: str | None = None) -> WriteReport:
        """Write ``data`` (as for ``upsert``) and return the report; failed rows do not raise."""
        report = WriteReport()
        refused: list[BatchFailure] = []
        ns = namespace if namespace is not None else self.options.namespace
        embedded_before = self._embed_counts()
        try:
            self.engine.run(self.batches(data, ns, refused), report)
        except ConnectorError as exc:
            exc.report = report  # the account up to the stop (completed below): written rows are stored
            raise
        finally:
            for failure in refused:
                report.failed += failure.rows
                report.failures.append(failure)
            embedded, requests = self._embed_counts()
            report.embedded = embedded - embedded_before[0]
            report.embed_requests = requests - embedded_before[1]
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
            For Arrow (or pandas) input, a ``pyarrow.Table``; for dicts and records, a list of dicts.
            Either holds ``id`` (as the report names it), ``error``, ``error_type``, ``retryable`` and
            ``attempts``, then every column of the row (the id column named ``id`` is ``id``; another
            column named like one of these gets a ``row_`` prefix).
        """
        from .dead_letters import dead_letters

        ns = namespace if namespace is not None else self.options.namespace
        return dead_letters(data, report, self.spec, ns)

    def _embed_counts(self) -> tuple[int, int]:
        """(rows embedded, embedding requests) so far by this client's stage; zeros without one."""
        return (0, 0) if self.embedding is None else self.embedding.counts()

    # -- input → sized batches ------------------------------------------------------------------

    def _check_target(self, dimension: int | None) -> None:
        self.backend.check_target(self.engine.transport, dimension)
        self._target_checked = True

    def _agree_dimension(self, from_rows: int) -> int:
        """The dimension a write learnt from its rows, unless the target has another: then the target's
        (rows of another length fail one by one). Checks, and with ``create=true`` makes, the target."""
        try:
            self._check_target(from_rows)
        except DimensionMismatch as exc:
            if exc.target_dimension is None:
                raise
            if self.embedding is not None and self.embedding.counts()[0]:  # the model's: all would fail
                raise self.embedding.mismatch(exc, from_rows) from None
            self._check_target(exc.target_dimension)
            return exc.target_dimension
        return from_rows

    def batches(self, data: Any, namespace: str | None, refused: list[BatchFailure]) -> Iterator[RowBatch]:
        """``data`` read, prepared (checks, ids, embeddings, the database's own rules) and sized into
        requests: the one way rows go from a caller's input to a sink, the engine's requests or a bulk
        path's staged files. Rows refused on the way are appended to ``refused``."""
        if not self._target_checked and self.options.dimension is not None:
            self._check_target(self.options.dimension)  # a stated dimension the target lacks: before any row
        for prepared in self._prepare(data, namespace):
            refused.extend(prepared.failures)
            for batch in prepared.batches:
                if not self._target_checked:  # a given dimension, or rows with no dense vector
                    self._check_target(self.dimension.value)
                kept, failures = self.backend.refuse(batch)  # the backend's own rules (Chroma's metadata)
                refused.extend(failures)
                if kept is not None:
                    yield from self._split(kept, refused)

    def _prepare(self, data: Any, namespace: str | None) -> Iterator[Prepared]:
        rules = self.backend.rules
        chunks = input_chunks(data)  # each row keeps its position in data, for the report and dead letters
        for chunk in chunks if self.embedding is None else self.embedding.fill(chunks):
            if isinstance(chunk, Prepared):  # rows the embedding stage failed
                yield chunk
                continue
            rows, positions = chunk.rows, chunk.positions
            if isinstance(rows, list):
                yield prepare_dicts(rows, self.spec, rules, self.dimension, namespace, positions)
            elif isinstance(rows, Columns):
                yield prepare_columns(rows, rules, self.dimension, namespace, positions=positions)
            else:
                yield prepare_arrow(rows, self.spec, rules, self.dimension, namespace, positions)

    def _split(self, batch: RowBatch, refused: list[BatchFailure]) -> Iterator[RowBatch]:
        sizes = self.backend.row_bytes(batch)
        for piece in split_rows(sizes, self.max_rows, self.max_bytes, self.backend.limits.overhead_bytes):
            if isinstance(piece, int):
                refused.append(
                    batch.failure(
                        [piece],
                        f"row is about {int(sizes[piece])} bytes encoded; a request takes at most {self.max_bytes}",
                        error_type="Invalid",
                    )
                )
            else:
                yield batch.slice(*piece)
