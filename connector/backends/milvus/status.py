"""Milvus's ``common.Status`` → the connector's errors: the one place a status code gets a meaning.

Throttling and unavailability retry; a missing collection is ``NotFound``; the rest is a
rejection the engine isolates. Codes are the new ``code`` field or the legacy ``error_code`` enum.
"""

from __future__ import annotations

from ... import protowire as pw
from ...errors import AuthError, NotFound, Rejected, ServerError, Throttled, Unavailable

__all__ = ["NOT_FOUND_CODES", "error_for", "status_of"]

THROTTLE_CODES = frozenset({8, 49})  # RateLimit
UNAVAILABLE_CODES = frozenset({9, 48, 53, 54, 56, 57})  # ForceDeny, quota exhausted, not ready
NOT_FOUND_CODES = frozenset({4, 28, 100})  # CollectionNotExists, CollectionNameNotFound, COLLECTION_NOT_FOUND
AUTH_CODES = frozenset(
    {3}
)  # PermissionDenied (a bad token is a gRPC UNAUTHENTICATED, mapped by the transport)


def status_of(status: pw.FieldReader | None) -> tuple[int, str, bool]:
    """``(code, reason, retriable)`` of a ``common.Status``; code 0 is success (new ``code`` or legacy ``error_code``)."""
    if status is None:
        return 0, "", False
    code = status.int(3) or status.int(1)
    if code >= 1 << 31:
        code -= 1 << 64  # a negative int32 arrives as a ten-byte varint
    return code, status.str(2), bool(status.int(4))


def error_for(code: int, reason: str, retriable: bool, where: str) -> ServerError:
    """The connector error for a Milvus status: throttling and unavailability retry, the rest does not."""
    message = f"{where}: {reason or 'no reason given'} (code {code})"
    kind: type[ServerError]
    if code in THROTTLE_CODES:
        kind = Throttled
    elif code in UNAVAILABLE_CODES or retriable:
        kind = Unavailable
    elif code in NOT_FOUND_CODES:
        kind = NotFound
    elif code in AUTH_CODES:
        kind = AuthError
    else:
        kind = Rejected
    return kind(message, status=code)
