"""The connector's exception tree.

::

    ConnectorError
    ├── ConfigError(ValueError)              bad options, URI or schema; raised before anything is sent
    │   └── DimensionMismatch                the target's dimension differs: .target_dimension
    ├── MissingExtra(ImportError)            a backend's optional dependency is not installed
    ├── TransportError                       no usable answer from the server
    │   ├── ConnectError                     could not connect (refused, DNS, TLS handshake)
    │   │   └── ConnectTimeout               the connection (or its handshake) timed out: no answer at all
    │   └── DeadlineExceeded(TimeoutError)   no answer within ``timeout_s``
    │       ├── ServerTimedOut               the server stopped the request at its time limit: none applied
    │       └── StoppedAnswering             fatal: requests timed out one after another, none answered
    ├── ServerError                          the server said no: .status .retryable .retry_after_s
    │   ├── Throttled                        retryable; halves the in-flight limit
    │   ├── Unavailable                      retryable (5xx, UNAVAILABLE)
    │   ├── Rejected                         not retryable: the request (or some of its rows) is invalid
    │   │   └── SystemicRejection            fatal: the first rows sent one by one were all refused alike
    │   ├── AuthError                        fatal: credentials or permissions (401/403)
    │   ├── NotFound                         fatal: no such index/collection/endpoint (404)
    │   └── MalformedReply                   fatal: a 2xx reply that is not the protocol's (embeddings:
    │                                        only before any reply was; after, its inputs fail)
    ├── EmbeddingFailed                      ``embed()``: some inputs were not embedded: .failures
    └── WriteFailed                          raised by ``on_error="fail"``; carries ``.report``

Rule: raise for misuse and for "nothing can work" (bad options, bad credentials, missing
extra); failures of some rows are data and go into a ``WriteReport``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from .embedding.result import InputFailure
    from .report import WriteReport

__all__ = [
    "AuthError",
    "ConfigError",
    "ConnectError",
    "ConnectTimeout",
    "ConnectorError",
    "DeadlineExceeded",
    "DimensionMismatch",
    "MissingExtra",
    "NotFound",
    "Rejected",
    "ServerError",
    "ServerTimedOut",
    "StoppedAnswering",
    "SystemicRejection",
    "Throttled",
    "TransportError",
    "Unavailable",
    "WriteFailed",
]


class ConnectorError(Exception):
    """Base of every error the connector raises on purpose."""

    retryable: bool = False
    fatal: bool = False  # True: no later request can succeed either, so the write stops at once
    # set on an error that stopped a write part way (``Client.write``): its WriteReport so far, so the
    # rows it wrote (stored) and the rows that failed before it are not lost with it
    report: WriteReport | None = None


class ConfigError(ConnectorError, ValueError):
    """Bad options, URI or input schema. The message names the option or column at fault."""


class DimensionMismatch(ConfigError):
    """The target holds vectors of another dimension than the one asked for.

    A dimension the user gave (option ``dimension``) is an error; one only learnt from the rows
    gives way to the target's (``target_dimension``), and rows of another length fail one by one.
    """

    def __init__(self, message: str, *, target_dimension: int | None = None) -> None:
        super().__init__(message)
        self.target_dimension = target_dimension


class MissingExtra(ConnectorError, ImportError):
    """A backend's optional dependency is missing; the message says what to install."""


class TransportError(ConnectorError):
    """The request got no usable answer. Retryable: the server may not have seen it."""

    retryable = True


class ConnectError(TransportError):
    """Could not reach the server at all."""


class ConnectTimeout(ConnectError):
    """The connection, or its TLS or protocol handshake, got no answer within the timeout: a server frozen
    with its port open looks like this, which a refused connection (a server restarting) does not."""


class DeadlineExceeded(TransportError, TimeoutError):
    """No answer within the per-request timeout."""


class ServerTimedOut(DeadlineExceeded):
    """The server stopped the request at its own time limit and said so (PostgreSQL's
    ``statement_timeout``, SQLSTATE 57014, which the connector sets from ``timeout_s``): the statement
    was rolled back, so none of its rows is stored, unlike a reply that never came."""


class StoppedAnswering(DeadlineExceeded):
    """Requests in a row got no reply at all within ``timeout_s``, the last ``max_retries + 1`` of them sent
    alone (the timeouts had lowered the in-flight limit to 1), so the server is taken to have stopped
    answering: the write stops instead of every batch left
    waiting out its timeout and retries (10,000 batches took about 20 hours to fail at the defaults).
    Retryable: a write again, once the server answers (or with a larger ``timeout_s``), may pass."""

    fatal = True


class ServerError(ConnectorError):
    """The server answered with an error status.

    Attributes:
        status: the HTTP status or gRPC status name, e.g. ``429`` or ``"RESOURCE_EXHAUSTED"``.
        retry_after_s: the server's hint (``Retry-After``, ``grpc-retry-pushback-ms``), if any.
    """

    retryable = False

    def __init__(self, message: str, *, status: Any = None, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = _hint(retry_after_s)


MAX_HINT_S = 300.0  # a server's hint is honoured up to five minutes (``Backoff`` waits no longer either)


def _hint(seconds: float | None) -> float | None:
    """A server's retry hint as a wait: NaN none, negative 0, infinity (or more than five minutes) five
    minutes, so no hint a server sends can hold a write for good."""
    if seconds is None or seconds != seconds:
        return None
    return min(max(0.0, seconds), MAX_HINT_S)


class Throttled(ServerError):
    """429 / RESOURCE_EXHAUSTED: retried after backoff, and halves the in-flight limit."""

    retryable = True


class Unavailable(ServerError):
    """5xx / UNAVAILABLE / ABORTED: retried after backoff."""

    retryable = True


class Rejected(ServerError):
    """400 / INVALID_ARGUMENT and kin: the request is invalid; a whole-batch rejection is bisected."""


class SystemicRejection(Rejected):
    """The first rows sent one by one were all refused for one reason and no row was accepted: the
    cause is the whole write (the target's schema or limits), so the write stops instead of isolating
    every row at about two requests a row."""

    fatal = True


class AuthError(ServerError):
    """401 / 403: nothing can work with these credentials; the write stops at once."""

    fatal = True


class NotFound(ServerError):
    """404 / NOT_FOUND: the index, collection or endpoint does not exist; the write stops at once."""

    fatal = True


class MalformedReply(ServerError):
    """A 2xx reply that is not what the protocol says (an embeddings list for the inputs sent); fatal. The
    embedding client sends the request again once, and after well-formed replies fails its inputs
    alone (an instance with ``fatal`` false)."""

    fatal = True


class EmbeddingFailed(ConnectorError):
    """Some inputs could not be embedded; ``.failures`` says which (by index) and why.

    ``.vectors`` holds what was embedded, ``nan`` in the rows of failed inputs.
    """

    def __init__(self, failures: Sequence[InputFailure], total: int, vectors: np.ndarray) -> None:
        from .embedding.result import describe_failures

        self.failures = tuple(failures)
        self.total = total
        self.vectors = vectors
        super().__init__(describe_failures(self.failures, total))

    @property
    def failed_indices(self) -> list[int]:
        return [failure.index for failure in self.failures]


class WriteFailed(ConnectorError):
    """Raised by the ``on_error="fail"`` policy when any row failed; ``.report`` has the details."""

    def __init__(self, message: str, report: WriteReport) -> None:
        super().__init__(message)
        self.report = report
