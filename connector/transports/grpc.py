"""gRPC transport over grpcio: raw request bytes in, raw reply bytes out.

One channel per (target, TLS) per process, shared by every client and thread; HTTP/2
multiplexes the concurrent calls. Channel-level retries are off because the engine
retries (retrying in two layers multiplies attempts and hides throttling). Credentials
travel as call metadata and never appear in errors or reprs: a server's status details are quoted
with the credentials in use blanked out (``redaction``), since servers echo keys.
"""

from __future__ import annotations

from typing import Any

from ..errors import (
    AuthError,
    ConnectError,
    DeadlineExceeded,
    MissingExtra,
    NotFound,
    Rejected,
    ServerError,
    Throttled,
    TransportError,
    Unavailable,
)
from ..redaction import Secrets
from .base import WireReply, WireRequest, host_of, shared

__all__ = ["GrpcTransport", "error_for_status"]

MAX_MESSAGE_BYTES = 128 * 1024 * 1024

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


def _import_grpc() -> Any:
    try:
        import grpc
    except ImportError:
        raise MissingExtra("gRPC URIs need grpcio: pip install 'vectordb-connector[grpc]'") from None
    return grpc


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
        self.target = target
        self.label = label or target
        self.host = host_of(target)
        self._metadata = metadata
        self._secrets = secrets
        self._channel = shared(("grpc", target, tls), lambda: _open_channel(target, tls))
        self._rpc_error: type[Exception] = _import_grpc().RpcError  # looked up once, not per call
        self._methods: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"GrpcTransport({self.label})"

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        call = self._methods.get(request.method)
        if call is None:
            # no serializers: grpcio sends our bytes as they are and hands back the reply's bytes
            call = self._methods[request.method] = self._channel.unary_unary(request.method)
        try:
            body, info = call.with_call(
                request.body,
                timeout=timeout_s,
                metadata=self._metadata + request.headers,
                wait_for_ready=False,
            )
        except self._rpc_error as exc:
            error = error_of(exc, f"{self.label} {request.method}", self._secrets)
        else:
            self.host.answered = True
            return WireReply(body=body, status="OK", headers=dict(info.trailing_metadata() or ()))
        if isinstance(error, ServerError) and not isinstance(error, Unavailable):
            self.host.answered = True  # a status the server sent (UNAVAILABLE may be the channel's own)
        if isinstance(error, ServerError) and error.status in request.answers:  # the backend reads it
            return WireReply(
                body=str(error).encode(), status=error.status
            )  # the message, credentials blanked
        # raised outside the handler: the RpcError, whose repr quotes the details whole, is not kept
        # as the error's __context__. The local is dropped as it goes: a raised error held by the frame
        # it leaves is a cycle (error -> traceback -> frame -> error) that keeps every caller's frame,
        # their batches with them, until a full garbage collection
        try:
            raise error
        finally:
            del error

    def close(self) -> None:
        """The channel is shared by the process; it closes with ``forget_shared`` or at exit."""


def _open_channel(target: str, tls: bool) -> Any:
    grpc = _import_grpc()
    options = [
        ("grpc.enable_retries", 0),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.http2.max_pings_without_data", 0),
        # after a server restart, reconnect within a retry's wait (grpc's own: 1 s, growing to 120 s)
        ("grpc.initial_reconnect_backoff_ms", 200),
        ("grpc.min_reconnect_backoff_ms", 200),
        ("grpc.max_reconnect_backoff_ms", 2_000),
    ]
    if tls:
        return grpc.secure_channel(target, grpc.ssl_channel_credentials(), options=options)
    return grpc.insecure_channel(target, options=options)


def error_for_status(
    code_name: str, details: str, where: str, trailing: dict[str, str], *, secrets: Secrets
) -> Exception:
    """The connector error for a gRPC status, with the server's pushback hint; the message quotes the
    status details with ``secrets`` blanked out."""
    details = secrets.blank(details)
    pushback = trailing.get("grpc-retry-pushback-ms")
    retry_after_s = None
    if pushback is not None:
        try:
            retry_after_s = max(0.0, int(pushback) / 1000)
        except ValueError:
            retry_after_s = None
    elif trailing.get("retry-after") is not None:  # seconds, as Qdrant sends it with RESOURCE_EXHAUSTED
        try:
            retry_after_s = max(0.0, float(trailing["retry-after"]))
        except ValueError:
            retry_after_s = None
    kind = ERROR_BY_STATUS.get(code_name, ServerError)
    message = f"{where}: {code_name}: {details}"
    if kind is Unavailable and code_name == "UNAVAILABLE" and _is_connect_failure(details):
        return ConnectError(f"{where}: cannot connect: {details}")
    if issubclass(kind, ServerError):
        return kind(message, status=code_name, retry_after_s=retry_after_s)
    return kind(message)


def _is_connect_failure(details: str) -> bool:
    text = details.lower()
    return "failed to connect" in text or "connection refused" in text or "dns resolution failed" in text


def error_of(exc: Any, where: str, secrets: Secrets) -> Exception:
    """The connector error for a ``grpc.RpcError``: the one place they are translated."""
    code = exc.code() if hasattr(exc, "code") else None
    details = (exc.details() if hasattr(exc, "details") else None) or ""
    trailing = dict(exc.trailing_metadata() or ()) if hasattr(exc, "trailing_metadata") else {}
    name = code.name if code is not None else "UNKNOWN"
    return error_for_status(name, details, where, trailing, secrets=secrets)
