"""The backend contract: a backend knows its wire format and limits; it holds no connection.

``request_for`` encodes a batch; ``outcome_of`` reads the reply into per-row results (a
reply that succeeded can still reject some rows); ``open_transport`` returns the process-
shared transport for its target. Whole-batch rejections are bisected by the engine when
``bisect_rejections`` is true, so only the rows the server really refuses fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

from ..report import BatchFailure

if TYPE_CHECKING:
    from ..options import BackendOptions
    from ..rows import RowBatch, RowRules
    from ..transports.base import Transport, WireReply, WireRequest

__all__ = ["Backend", "BatchOutcome", "RequestLimits"]


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """Rows and bytes per request: the database's hard limits and the connector's defaults."""

    max_rows: int
    max_bytes: int
    default_rows: int
    default_bytes: int
    overhead_bytes: int = 1024  # request envelope besides the rows


@dataclass(slots=True)
class BatchOutcome:
    """What one successful reply says: rows written, and rows the server refused inside it."""

    written: int
    failures: list[BatchFailure] = field(default_factory=list)


class Backend(Protocol):
    name: ClassVar[str]
    options_type: ClassVar[type[BackendOptions]]
    bisect_rejections: ClassVar[bool]

    options: BackendOptions
    limits: RequestLimits
    rules: RowRules

    def open_transport(self) -> Transport: ...

    def row_bytes(self, batch: RowBatch) -> np.ndarray: ...

    def request_for(self, batch: RowBatch) -> WireRequest: ...

    def outcome_of(self, batch: RowBatch, reply: WireReply) -> BatchOutcome: ...

    # Optional: ``refuse(batch) -> (RowBatch | None, list[BatchFailure])`` splits off the rows this
    # database cannot store, by rules beyond ``RowRules``; the client calls it before sizing requests.

    # Optional: ``clear_target(transport, namespace) -> str`` deletes every row the target holds in
    # ``namespace`` (``None``: every row of the collection or index, whatever its namespace), keeps
    # the collection itself (schema, indexes) and returns what it cleared, for the log. It backs
    # ``Client.clear`` and Spark's ``mode("overwrite")``; a backend without it cannot clear.

    def check_target(self, transport: Transport, dimension: int | None) -> None:
        """Check (and with ``create=true`` create) the collection before the first request.

        Called once per client with the write's dimension (``None`` if unknown yet), and by the
        Spark driver before any task starts. Raises ``ConfigError`` (e.g. dimension mismatch) or a
        fatal ``ServerError``. Backends without a control plane do nothing.
        """
        ...

    def describe(self) -> str:
        """The target for logs and display data: no credentials."""
        ...
