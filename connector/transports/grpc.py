"""gRPC transport: raw request bytes in, raw reply bytes out, over our own HTTP/2 connections.

One pool of connections per (target, TLS) per process (``http2.Http2Pool``), shared by every client and
thread; a call takes a connection of its own, so concurrent calls never queue behind each other's
frames. Nothing here retries: the engine does (retrying in two layers multiplies attempts and hides
throttling). Credentials travel as call metadata and never appear in errors or reprs: a server's status
details are quoted with the credentials in use blanked out (``redaction``), since servers echo keys.
The statuses are read as grpc clients read them (``error_for_status``), but for one INTERNAL: a reply
the server could not encode ("error while marshaling") is a rejection, so the batch is split.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from ..errors import (
    AuthError,
    ConfigError,
    ConnectError,
    ConnectTimeout,
    DeadlineExceeded,
    MissingExtra,
    NotFound,
    Rejected,
    ServerError,
    Throttled,
    TransportError,
    Unavailable,
)
from ..redaction import Secrets, detached, key_refused, returned
from .base import WireReply, WireRequest, host_of, shared
from .http import parse_retry_after
from .http2 import MAX_SEND_BYTES, Http2Pool, StreamRefused, grpc_timeout, header_block

__all__ = ["GrpcTransport", "error_for_status"]

USER_AGENT = "vectordb-connector"
UNSENDABLE_REPLY = "error while marshaling"  # grpc-go's INTERNAL details when it cannot encode its reply
_NUMBER = re.compile(r"-?[0-9]{1,20}")  # a pushback worth quoting: a (negative) number of milliseconds

# StatusCode name → error class; a test checks every grpc.StatusCode is here.
ERROR_BY_STATUS: dict[str, type[ServerError] | type[TransportError]] = {
    "OK": ServerError,
    "CANCELLED": Unavailable,
    "UNKNOWN": Unavailable,
    "INVALID_ARGUMENT": Rejected,
    "DEADLINE_EXCEEDED": DeadlineExceeded,
    "NOT_FOUND": NotFound,
    "ALREADY_EXISTS": Rejected,
    "PERMISSION_DENIED": AuthError,
    "RESOURCE_EXHAUSTED": Throttled,
    "FAILED_PRECONDITION": Rejected,
    "ABORTED": Unavailable,
    "OUT_OF_RANGE": Rejected,
    "UNIMPLEMENTED": NotFound,
    "INTERNAL": Unavailable,
    "UNAVAILABLE": Unavailable,
    "DATA_LOSS": Unavailable,
    "UNAUTHENTICATED": AuthError,
}


def _check_hpack() -> None:
    try:
        import hpack  # noqa: F401  (the header decoding of replies)
    except ImportError:
        raise MissingExtra("gRPC URIs need hpack: pip install 'vectordb-connector[grpc]'") from None


class GrpcTransport:
    """Unary calls on a shared channel; ``metadata`` (e.g. the api key) is added to every call, and
    ``secrets`` (the credentials in it) are blanked out of every error it raises."""

    def __init__(
        self,
        target: str,
        *,
        tls: bool,
        secrets: Secrets,
        metadata: tuple[tuple[str, str], ...] = (),
        label: str = "",
    ) -> None:
        _check_hpack()
        self.target = target
        self.label = label or target
        self.host = host_of(target)
        self._secrets = secrets
        address, _, port = target.rpartition(":")
        self._pool = shared(("grpc", target, tls), lambda: Http2Pool(address.strip("[]"), int(port), tls=tls))
        # every call's fields but its path, timeout and extras (checked now: a bad key fails here, named)
        self._scheme = header_block([(":method", "POST"), (":scheme", "https" if tls else "http")])
        fixed = [(":authority", target), ("content-type", "application/grpc"), ("te", "trailers")]
        fixed.append(("user-agent", USER_AGENT))
        keyed = _metadata_block(metadata, secrets)
        del metadata  # this frame raises the error of a key gRPC cannot carry: it must not hold the key
        if isinstance(keyed, ConfigError):
            try:
                raise keyed
            finally:
                del keyed  # held by this frame, the raised error would be a cycle through it
        self._fixed = header_block(fixed) + keyed
        self._paths: dict[str, bytes] = {}  # each method's :path field
        self._timeouts: dict[float, bytes] = {}  # each timeout's grpc-timeout field

    def __repr__(self) -> str:
        return f"GrpcTransport({self.label})"

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        # an error is raised from no frame that holds the header block (the key in it) or the raw reply
        return returned(self._exchange(request, timeout_s))

    def _exchange(self, request: WireRequest, timeout_s: float) -> WireReply | Exception:
        """The reply, or the error ``send`` raises: made here and returned, never raised through this frame."""
        where = f"{self.label} {request.method}"
        if len(request.body) > MAX_SEND_BYTES:  # never so from the engine, whose requests are far smaller
            return Rejected(
                f"{where}: a request of {len(request.body)} bytes, beyond the {MAX_SEND_BYTES} sent here"
            )
        try:
            reply = self._pool.call(
                self._block(request, timeout_s), request.body, where=where, timeout_s=timeout_s
            )
        except StreamRefused as exc:  # not processed: the engine sends it again
            return Unavailable(self._secrets.blank(str(exc)), status="UNAVAILABLE")
        except TransportError as exc:  # connect failures, timeouts, connections lost: messages of our own
            return type(exc)(self._secrets.blank(str(exc)))
        except ConfigError as exc:  # a request's own metadata that gRPC cannot carry
            return detached(exc)
        self.host.answered = True
        if reply.status == "OK":
            return WireReply(body=reply.body, status="OK", headers=reply.trailers)
        # grpc-message is percent-encoded: blanked as it came and again once decoded, so a key is
        # blanked whichever way a server quoted it
        details = unquote(self._secrets.blank(reply.details), errors="replace")
        error = error_for_status(reply.status, details, where, reply.trailers, secrets=self._secrets)
        if isinstance(error, ServerError) and error.status in request.answers:  # the backend reads it
            # the server's own details only (blanked): the error's text starts with our label, the host,
            # and a backend matching words in the body would read an index named "namespace-..." as them
            return WireReply(body=self._secrets.blank(details).encode(), status=error.status)
        return error

    def _block(self, request: WireRequest, timeout_s: float) -> bytes:
        """The call's header block: the fixed fields (the key among them), its path, timeout and extras."""
        path = self._paths.get(request.method)
        if path is None:
            path = self._paths[request.method] = header_block([(":path", request.method)])
        timeout = self._timeouts.get(timeout_s)
        if timeout is None:
            if len(self._timeouts) > 64:  # a caller whose timeouts vary keeps no more than a few
                self._timeouts.clear()
            timeout = self._timeouts[timeout_s] = header_block([("grpc-timeout", grpc_timeout(timeout_s))])
        block = self._scheme + path + self._fixed + timeout
        return block + header_block(list(request.headers)) if request.headers else block

    def close(self) -> None:
        """The pool is shared by the process; it closes with ``forget_shared`` or at exit."""


def error_for_status(
    code_name: str, details: str, where: str, trailing: dict[str, str], *, secrets: Secrets
) -> Exception:
    """The connector error for a gRPC status, with the server's pushback hint; the message quotes the
    status details with ``secrets`` blanked out."""
    details = secrets.blank(details)
    pushback = trailing.get("grpc-retry-pushback-ms")
    retry_after_s = None
    no_retry = False
    if pushback is not None:
        try:
            retry_after_s = int(pushback) / 1000  # bounded by ServerError
        except ValueError:
            retry_after_s = None
        except OverflowError:  # more digits than a float holds: the longest wait
            retry_after_s = float("inf")
        # gRPC's retry design (A6): a pushback that is negative or does not parse asks for no retry
        no_retry = retry_after_s is None or retry_after_s < 0
    else:  # seconds, as Qdrant sends it with RESOURCE_EXHAUSTED; or a gateway's HTTP Retry-After (a date)
        retry_after_s = parse_retry_after(trailing.get("retry-after"))  # bounded by ServerError
    kind = ERROR_BY_STATUS.get(code_name, ServerError)
    message = f"{where}: {code_name}: {details}"
    if code_name == "INTERNAL" and UNSENDABLE_REPLY in details:
        # the server's reply (a row's refusal quoting text that is no UTF-8) could not be sent: the batch's
        # fate is unknown and a retry meets the same reply; split it (upserts by id are idempotent), so
        # the row at fault fails alone and the others are written
        return Rejected(f"{message} (the server could not send its reply)", status=code_name)
    if kind is Unavailable and code_name == "UNAVAILABLE" and _is_connect_failure(details):
        # a proxy's word for an upstream that never answered the connection
        timed_out = "timed out" in details.lower()
        return (ConnectTimeout if timed_out else ConnectError)(f"{where}: cannot connect: {details}")
    if issubclass(kind, ServerError):
        if no_retry and kind.retryable:
            shown = _shown_pushback(pushback, retry_after_s)
            message += f" (not retried: the server's grpc-retry-pushback-ms is {shown})"
        exc = kind(message, status=code_name, retry_after_s=None if no_retry else retry_after_s)
        if no_retry:
            exc.retryable = False
        return exc
    return kind(message)


def _shown_pushback(pushback: str | None, retry_after_s: float | None) -> str:
    """A pushback that asks for no retry, as a message shows it: the value only when it is a number, since
    any other text may be a key a server echoed into it (and a piece of one, cut to a length, is what no
    blanking matches)."""
    if pushback is not None and _NUMBER.fullmatch(pushback):
        return repr(pushback)
    return "not a number" if retry_after_s is None else "a negative number"


def _is_connect_failure(details: str) -> bool:
    text = details.lower()
    return "failed to connect" in text or "connection refused" in text or "dns resolution failed" in text


def _metadata_block(metadata: tuple[tuple[str, str], ...], secrets: Secrets) -> bytes | ConfigError:
    """The call metadata's header block (never indexed: it holds the key); or the error of a value gRPC
    cannot carry, naming option ``api_key`` when the value holds the key (``gRPC metadata api-key: ...``
    alone named none), returned without the frames that held it."""
    try:
        return header_block(list(metadata), frozenset(n for n, _ in metadata))
    except ConfigError as exc:
        return detached(key_refused(exc, metadata, secrets) or exc)
