"""The backend contract: a backend knows its wire format, limits and control plane; it holds no connection.

Required of every backend: ``open_transport`` (the process-shared channel or pool for its
target), ``row_bytes`` (encoded size per row, for sizing requests), ``request_for`` (encode a
batch; whatever the encoding decided goes into ``WireRequest.context``), ``outcome_of`` (read a
reply into per-row results: a reply that succeeded can still refuse some rows) and
``describe``. Each handles both kinds of batch (``RowBatch.op``): upserts, and deletes, whose rows
are ids alone; a delete of an id that is not there succeeds (``written``: the id is not there after),
so retried deletes are safe. ``limits.max_delete_rows`` bounds the ids of one delete request. The
other hooks have defaults here, so the client and the Spark and Beam adapters call them without
asking whether they exist. Control-plane calls go through ``control``: one
retried path, under the data plane's rules (``max_retries``, backoff, ``Retry-After``).

``secrets`` are the credentials the backend's requests carry: ``open_transport`` gives them to the
transports it builds, and any text a backend reads out of a reply (a status's reason, per-row
errors) is blanked with them (``redaction``), since servers echo keys.

A backend is ``Backend[ItsOptions]`` and receives its own parsed options Struct.

Several vectors a row (options ``vector_columns``, ``multi_vector_columns``) are a declared capability:
``named_vectors`` and ``multi_vectors`` say whether the database stores them (``"yes"``), could but
this backend does not write them yet (``"not yet"``), or cannot (``"no"``, the default; where the
reason is not one vector a record, ``vectors_refused`` gives it). ``check_vector_support`` refuses a
write that asks for more, naming the option and the database, where options meet the backend
(``Client``), so Spark's driver and Beam's construction refuse it too. A backend that declares
``"yes"`` implements ``check_named_target`` (see there) and encodes ``RowBatch.named_vectors`` and
``RowBatch.multi_vectors``.
"""

from __future__ import annotations

import functools
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

import numpy as np

from ..errors import ConfigError, MalformedReply, ServerError, TransportError
from ..limits import Backoff
from ..options import BackendOptions
from ..redaction import Secrets
from ..report import BatchFailure

if TYPE_CHECKING:
    from ..bulk import BulkPath
    from ..rows import RowBatch, RowRules
    from ..transports.base import Host, Transport, WireReply, WireRequest

__all__ = [
    "Backend",
    "BatchOutcome",
    "RequestLimits",
    "Support",
    "check_vector_support",
    "left_out_problem",
]

OptionsT = TypeVar("OptionsT", bound=BackendOptions)
T = TypeVar("T")

Support = Literal["yes", "not yet", "no"]


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """Rows and bytes per request: the database's hard limits and the connector's defaults."""

    max_rows: int
    max_bytes: int
    default_rows: int
    default_bytes: int
    overhead_bytes: int = 1024  # request envelope besides the rows
    max_delete_rows: int = 1_000_000_000  # ids per delete request, where the database counts fewer


@dataclass(slots=True)
class BatchOutcome:
    """What one successful reply says: rows written, and rows the server refused inside it."""

    written: int
    failures: list[BatchFailure] = field(default_factory=list)


class Backend(ABC, Generic[OptionsT]):
    """One database's side of a write; subclass it as ``Backend[ItsOptions]``: the abstract hooks are
    required, the others have defaults."""

    name: ClassVar[str]
    options_type: ClassVar[type[BackendOptions]]
    # A refusal of a whole request may be one row's fault: the engine then isolates the refused
    # rows by splitting. False for a database whose refusals always name their rows.
    isolate_rejections: ClassVar[bool] = True
    # Several vectors a row (module docstring): does the database store named dense vectors (option
    # vector_columns), multi-vectors (option multi_vector_columns)? "yes" only with check_named_target
    # and encoders for RowBatch.named_vectors / multi_vectors; a bulk path that cannot store them makes
    # the backend say "no" for those options (check_vector_support reads these through the instance).
    named_vectors: ClassVar[Support] = "no"
    multi_vectors: ClassVar[Support] = "no"
    # option -> why "no" where the reason is not one vector a record (a type the database lacks, or lacks
    # in the version the connector runs): check_vector_support's ConfigError gives it
    vectors_refused: ClassVar[Mapping[str, str]] = {}
    limits: RequestLimits
    rules: RowRules

    _secrets: Secrets | None = None

    def __init__(self, options: OptionsT) -> None:
        self.options = options

    @property
    def secrets(self) -> Secrets:
        """The credentials in use (read once, where the transport opens): blanked out of replies' texts."""
        if self._secrets is None:
            self._secrets = Secrets.of(self.options)
        return self._secrets

    def not_its_reply(self, reply: WireReply, request: str) -> MalformedReply:
        """A 2xx reply that is not the database's (a proxy's page, a truncated body): the error that fails
        the request's rows, naming the server and quoting the body (credentials blanked, then cut)."""
        text = self.secrets.blank(reply.body.decode("utf-8", "replace"))[:200]
        return MalformedReply(
            f"{self.describe()}: the reply ({reply.status}) to {request} is not {self.name}'s: {text!r}",
            status=reply.status,
        )

    # -- required ---------------------------------------------------------------------------------

    @abstractmethod
    def open_transport(self) -> Transport: ...

    @abstractmethod
    def row_bytes(self, batch: RowBatch) -> np.ndarray:
        """Each row's estimated size in a request, for sizing requests under ``limits``."""

    @abstractmethod
    def request_for(self, batch: RowBatch) -> WireRequest:
        """The request for ``batch``; put what ``outcome_of`` must know (rows left out, say) in ``context``."""

    @abstractmethod
    def outcome_of(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        """Rows written and refused, from the reply to ``request`` (as ``request_for`` built it)."""

    @abstractmethod
    def describe(self) -> str:
        """The target for logs and display data: no credentials."""

    # -- optional, with defaults ------------------------------------------------------------------

    def check_target(self, transport: Transport, dimension: int | None) -> None:
        """Check (and with ``create=true`` create) the target before the first request.

        Called once per client with the write's dimension (``None`` if unknown yet), and by the
        driver of a Spark or Beam job before any task. Raises ``ConfigError`` (a
        ``DimensionMismatch`` carries the target's dimension) or a fatal ``ServerError``.
        Default: nothing to check.
        """

    def check_named_target(
        self, transport: Transport, dimensions: Mapping[str, int | None]
    ) -> dict[str, int]:
        """``check_target`` for a write with named vectors (options ``vector_columns``,
        ``multi_vector_columns``), which the client calls instead of ``check_target``: on a job's
        driver with the dimensions option ``vector_dimensions`` states, and on a worker (or in one
        process) once the first chunk's rows have given the others, always before any row is sent.

        ``dimensions`` holds every name of the write (``None``: not known yet); which names are
        multi-vectors (a multi-vector's dimension is the length of each of its vectors) and which
        columns they come from are in ``self.options.multi_vector_columns`` / ``vector_columns``.
        A backend that stores them must:

        - on an existing target, check every name: present, dense vs multi as asked, and of the
          dimension option ``vector_dimensions`` states, raising ``ConfigError`` naming the name (and
          option ``vector_columns`` or ``multi_vector_columns``) before any row is sent; a dimension in
          ``dimensions`` learnt from the rows is no statement: where the target has another, return
          the target's, or raise ``DimensionMismatch`` and the client checks again with the stated
          dimensions alone;
        - with ``create=true`` and no target, make it with every name (its dimension, option
          ``metric``, multi-vectors compared by late interaction, MaxSim) when every dimension is
          known, and make nothing while one is ``None`` (a database whose schema holds no dimension,
          Weaviate, may make it at once);
        - return the dimensions the target fixes per name (``{}``: none yet), which become the
          write's: rows of another length then fail alone, and a job's driver hands them to its
          workers (option ``vector_dimensions``).

        Its requests then carry, per row, every name of ``RowBatch.named_vectors`` and
        ``RowBatch.multi_vectors`` (encoded from their float32 buffers, never as Python lists), and
        ``row_bytes`` counts them. Default: refuse (the backend declares no such support).
        """
        raise ConfigError(f"{self.name} does not write named vectors or multi-vectors")

    def refuse(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """The rows this database can store (``None``: none) and a failure for each other row, by
        rules beyond ``RowRules``; the client calls it before sizing requests. Default: all rows."""
        return batch, []

    def refuse_deletes(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """``refuse`` for delete rows, which store nothing: the rows whose id or namespace a request may
        carry (Pinecone's identifier limits), and a failure for each other. Default: all rows."""
        return batch, []

    def needs_namespace(self) -> str | None:
        """Why every row must name a namespace (a Weaviate multi-tenant collection: its tenant), known once
        ``check_target`` ran, or ``None``. A planner whose rows cannot carry their own (Spark's, without
        ``namespace_column``) refuses such a write on its driver: each task would fail alike. Default: none."""
        return None

    @property
    def supports_clear(self) -> bool:
        return type(self).clear_target is not Backend.clear_target

    def clear_target(self, transport: Transport, namespace: str | None) -> str:
        """Delete every row in ``namespace`` (``None``: every row of the target, whatever its
        namespace), keep the target itself (schema, indexes), and say what was cleared, for the log.
        Backs ``Client.clear`` and Spark's ``mode("overwrite")``."""
        raise ConfigError(f"{self.name} cannot delete a target's rows")

    def request_rows(self) -> int | None:
        """After ``check_target``: at most this many rows a request, where the server said so and the
        options did not choose a size (a Chroma server's pre-flight max_batch_size). Default: none."""
        return None

    @classmethod
    def input_columns(cls, options: BackendOptions) -> list[tuple[str, str]]:
        """(option, column) pairs a backend with ``options`` reads from a row's metadata (Chroma's
        document_column): a column missing from the input is a ``ConfigError`` naming the option, on the
        driver, and the column is read whatever option ``metadata_columns`` lists. Of the class: a
        reader is built where no backend can be (no key yet). Default: none."""
        return []

    def resolved_options(self) -> dict[str, Any]:
        """After ``check_target``: options for the job's workers, so they skip what the driver
        learnt (a collection's id). The target's dimension is ``fixed_dimension``'s. Default: none."""
        return {}

    def bulk(self) -> BulkPath | None:
        """The database's bulk path (``bulk.BulkPath``) when the options ask for one, else ``None``:
        the write upserts. Default: none."""
        return None

    def fixed_dimension(self) -> int | None:
        """After ``check_target``: the dense dimension the target already fixes (an existing index,
        collection or table, or vectors it stores); ``None`` while nothing does, when a write with
        ``create=true`` would take it from its rows. Default: none known."""
        return None

    # -- the control plane ------------------------------------------------------------------------

    def control(
        self, transport: Transport, request: WireRequest, *, timeout_s: float | None = None
    ) -> WireReply:
        """A control-plane request (describe, create, load, clear), retried as the data plane is."""
        return self.retried(
            functools.partial(transport.send, request, timeout_s=timeout_s or self.options.timeout_s),
            transport.host,
        )

    def retried(self, call: Callable[[], T], host: Host) -> T:
        """``call()`` to ``host``, with retryable failures retried up to ``max_retries`` times under
        backoff and ``Retry-After``: the one retry rule for every control-plane call of every backend.
        A host that has answered before (``Host``, shared with the rows' requests) and now cannot be
        reached is given time to restart."""
        backoff = Backoff()
        attempt = 0
        while True:
            attempt += 1
            try:
                result = call()
            except (ServerError, TransportError) as exc:
                if not exc.retryable or exc.fatal or attempt > self.options.max_retries:
                    raise
                # one call: nothing of it was accepted since a throttle began (Backoff.delay_after)
                time.sleep(backoff.delay_after(attempt, exc, answered=host.answered, accepting=False))
                continue
            return result


_OPTION_OF = {"named_vectors": "vector_columns", "multi_vectors": "multi_vector_columns"}
_WHAT = {"named_vectors": "named dense vectors", "multi_vectors": "multi-vectors"}
_STORED_BY = {"named_vectors": "qdrant, weaviate, milvus, postgresql", "multi_vectors": "qdrant, weaviate"}


def check_vector_support(backend: Backend[Any], options: BackendOptions) -> None:
    """``ConfigError`` naming the option and the database when ``options`` ask for several vectors a row
    (options ``vector_columns``, ``multi_vector_columns``) and ``backend`` does not store them: before
    any row is read or any connection opens."""
    for capability, option in _OPTION_OF.items():
        if getattr(options, option) is None:
            continue
        support: Support = getattr(backend, capability)
        if support == "yes":
            continue
        what = _WHAT[capability]
        if support == "no":
            reason = backend.vectors_refused.get(option)
            if reason:
                raise ConfigError(f"option {option}: {backend.name} does not store {what}: {reason}")
            raise ConfigError(
                f"option {option}: {backend.name} stores one dense vector a record and no {what}; "
                f"write them to a database that stores them ({_STORED_BY[capability]})"
            )
        raise ConfigError(f"option {option}: writing {what} to {backend.name} is not supported yet")


def left_out_problem(
    stored: Mapping[str, str],
    written: Iterable[str],
    *,
    collection: str,
    database: str,
    item: str,
    columns: str,
    option: str | None = None,
) -> str | None:
    """The ``ConfigError`` text for upserts that leave out some of a collection's vectors, or ``None``.

    ``database`` replaces an ``item`` (point, object) whole on upsert, so it would silently erase, from every
    one written, each vector the write does not fill. ``stored``: the collection's vector names, each with
    the option that writes it; ``written``: the names the write fills; ``columns``: the options that give
    vectors a column, as the message names them; ``option``: the one to blame (``None``: that of the first left out). Backends call it
    from ``check_target`` (on a job's driver, before any task) and, for writes that also delete (option
    ``op_column``), on each upsert batch.
    """
    left_out = {name: stored[name] for name in sorted(set(stored) - set(written))}
    if not left_out:
        return None
    shown = ", ".join(f"{name!r} ({wants})" for name, wants in left_out.items())
    article = "an" if item[:1] in "aeiou" else "a"
    return (
        f"option {option or next(iter(left_out.values()))}: collection {collection!r} also has the vector(s) "
        f"{shown}, which this write does not name; {database} replaces {article} {item} whole on upsert, "
        f"so every {item} written would lose them: give each of the collection's vectors a column ({columns})"
    )
