"""Milvus's ``common.Status`` → the connector's errors: the one place a status code gets a meaning.

A status carries a code in one of two fields. Milvus ≥ 2.3 sets ``code`` (its ``merr`` codes, with
bit 20 set on retriable ones) and ``retriable``; older servers set only the legacy ``error_code``
enum. The two number differently (4 is "request limit exceeded" in the first, "collection does not
exist" in the second), so each has its own table. Throttling and unavailability retry; a missing
collection is ``NotFound`` and bad credentials an ``AuthError`` (both stop the write); every other
code is a rejection, which the engine isolates. Every legacy code is classed here on purpose (a test
checks that none is left out).
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import protowire as pw
from ...errors import AuthError, NotFound, Rejected, ServerError, Throttled, Unavailable
from ...redaction import Secrets

__all__ = ["CODE_KIND", "LEGACY_KIND", "Status", "error_for", "status_of"]

RETRIABLE_FLAG = 1 << 20
ROOT_CODE_MASK = (1 << 16) - 1

# Status.code: Milvus's merr codes (pkg/util/merr/errors.go); any other is a rejection
CODE_KIND: dict[int, type[ServerError]] = {
    # 1 (service not ready) is absent: a real Milvus sends it retriable (bit 20, field 4), which makes it
    # Unavailable; Milvus Lite answers every unexpected exception, a bad row's too, with a bare code 1
    2: Unavailable,  # service unavailable
    3: Unavailable,  # memory limit exceeded (a quota: it frees up)
    4: Throttled,  # request limit exceeded
    7: Unavailable,  # disk limit exceeded
    8: Throttled,  # rate limit exceeded
    9: Unavailable,  # force deny: writes denied for now
    100: NotFound,  # collection not found
    200: NotFound,  # partition not found
    1400: AuthError,  # not authenticated
    1401: AuthError,  # privilege not permitted
    1800: AuthError,  # user hasn't authenticated
}

# Status.error_code: the legacy ErrorCode enum (common.proto), every value classed
_LEGACY_UNAVAILABLE = frozenset({2, 15, 16, 24, 45, 46, 48, 52, 53, 54, 55, 56, 57, 100, 1000})
_LEGACY_REJECTED = frozenset(
    {1, 5, 7, 8, 9, 10, 11, 12, 13, 14, 17, 18, 19, 20, 21, 22, 23, 25, 26, 27, 29, 30, 31, 32, 33, 34, 35}
    | {36, 37, 38, 39, 40, 41, 42, 43, 44, 47, 50, 51, 58, 59, 60, 61, 62}
)
LEGACY_KIND: dict[int, type[ServerError]] = {
    **dict.fromkeys(_LEGACY_UNAVAILABLE, Unavailable),  # connect failed, meta/cache failed, out of
    # memory, not shard leader, no replica, force deny, quotas, time tick delay, not ready, races
    **dict.fromkeys(_LEGACY_REJECTED, Rejected),  # illegal arguments, dimension, rows, ids, schema
    3: AuthError,  # PermissionDenied (a bad token is a gRPC UNAUTHENTICATED, mapped by the transport)
    4: NotFound,  # CollectionNotExists
    28: NotFound,  # CollectionNameNotFound
    49: Throttled,  # RateLimit
}


@dataclass(frozen=True, slots=True)
class Status:
    """A ``common.Status``: ``code`` is 0 on success; ``legacy`` says which table it is read with."""

    code: int
    reason: str = ""
    retriable: bool = False
    legacy: bool = False

    @property
    def not_found(self) -> bool:
        return bool(self.code) and self.kind is NotFound

    @property
    def kind(self) -> type[ServerError]:
        table = LEGACY_KIND if self.legacy else CODE_KIND
        kind = table.get(self.code, Rejected)
        if kind is Rejected and self.retriable:
            return Unavailable
        return kind


def status_of(status: pw.FieldReader | None, secrets: Secrets) -> Status:
    """Read ``common.Status{error_code 1, reason 2, code 3, retriable 4}``; ``secrets`` are blanked out
    of the reason, which every error and failure of the status quotes."""
    if status is None:
        return Status(0)
    code, legacy = status.int(3), False
    if code >= 1 << 31:
        code -= 1 << 64  # a negative int32 arrives as a ten-byte varint
    retriable = bool(status.int(4))
    if code > 0:
        retriable = retriable or bool(code & RETRIABLE_FLAG)
        code &= ROOT_CODE_MASK
    elif not code:
        code, legacy = status.int(1), True
    return Status(code, secrets.blank(status.str(2)), retriable, legacy)


def error_for(status: Status, where: str) -> ServerError:
    """The connector error for a failed status, saying where it happened and the server's reason."""
    message = f"{where}: {status.reason or 'no reason given'} (code {status.code})"
    return status.kind(message, status=status.code)
