"""Pinecone's bulk-import API on the index host, over REST: start, describe and cancel an import, and the
index's namespaces (an import goes only into namespaces that do not exist yet).

Pinecone serves these calls on the index host also for ``pinecone+grpc://`` URIs (same host and
port). The calls are control-plane calls of the backend (``Backend.control``: its retries), but for
the start: a second start of the same files is a second import, which fails (its namespaces are the
first's) while the first lands the rows. So a start is sent again only when Pinecone surely did not
act on it (no connection, throttled); after an unclear failure (a 5xx, a lost reply) the imports are
listed and the one reading this job's folder is adopted, or the write fails saying one may be running.
Every word of a status Pinecone sends back is blanked of the credentials in use before it is logged or
reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec
import orjson

from ..errors import ConnectError, ConnectorError, Throttled, Unavailable

if TYPE_CHECKING:
    from ..errors import MalformedReply
    from ..redaction import Secrets
    from ..transports.base import Host, Transport, WireReply, WireRequest

T = TypeVar("T")
R = TypeVar("R", bound=msgspec.Struct)

__all__ = ["ImportHost", "ImportStatus", "PineconeImports"]


class ImportHostOptions(Protocol):
    @property
    def api_version(self) -> str: ...

    @property
    def timeout_s(self) -> float: ...

    def credential(self) -> str | None: ...


class ImportHost(Protocol):
    """What the import calls need of the Pinecone backend: its index host, key and control calls."""

    host: str
    port: int
    tls: bool
    secrets: Secrets

    @property
    def options(self) -> ImportHostOptions: ...

    def control(
        self, transport: Transport, request: WireRequest, *, timeout_s: float | None = None
    ) -> WireReply: ...

    def retried(self, call: Callable[[], T], host: Host) -> T: ...

    def not_its_reply(self, reply: WireReply, request: str) -> MalformedReply: ...


class ImportStatus(msgspec.Struct, kw_only=True, rename="camel"):
    """``describe_import``'s answer."""

    id: str
    uri: str = ""
    status: str = "Pending"
    created_at: str | None = None
    finished_at: str | None = None
    percent_complete: float | None = None
    records_imported: int | None = None
    error: str | None = None


class _Started(msgspec.Struct):
    id: str


class _Listed(msgspec.Struct):
    """A page of ``list_imports``: ``{"data": [ImportModel], "pagination": {"next"}?}``."""

    data: list[ImportStatus] = []
    pagination: dict[str, Any] | None = None


class _Summary(msgspec.Struct, rename="camel"):
    vector_count: int = 0


class _Stats(msgspec.Struct):
    """``describe_index_stats``' answer, as far as the import reads it."""

    namespaces: dict[str, _Summary] = {}


class _MaybeStarted(Exception):
    """A start that failed after it may have reached Pinecone: not retried; ``start`` looks for it."""

    def __init__(self, cause: ConnectorError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class PineconeImports:
    """``start_import``, ``describe_import``, ``cancel_import`` and the index's namespaces, on the index host."""

    def __init__(self, backend: ImportHost) -> None:
        from ..transports.http import HttpTransport

        self.backend = backend
        key = backend.options.credential() or ""
        scheme = "https" if backend.tls else "http"
        self.label = f"pinecone import {backend.host}:{backend.port}"
        self.transport: Transport = HttpTransport(
            f"{scheme}://{backend.host}:{backend.port}",
            secrets=backend.secrets,
            headers=(
                ("Api-Key", key),
                ("X-Pinecone-API-Version", backend.options.api_version),
                ("Content-Type", "application/json"),
            ),
            label=self.label,
        )

    def _call(self, method: str, body: Any, answer: type[R]) -> R:
        """One control call and its reply as ``answer``; a 2xx reply that is not Pinecone's JSON (a proxy's
        page) is ``MalformedReply`` naming the host and the call."""
        from ..transports.base import WireRequest

        payload = b"" if body is None else orjson.dumps(body)
        return self._decoded(
            self.backend.control(self.transport, WireRequest(method, payload)), method, answer
        )

    def _decoded(self, reply: WireReply, method: str, answer: type[R]) -> R:
        try:
            return msgspec.json.decode(reply.body or b"{}", type=answer)
        except msgspec.DecodeError:  # not JSON, or not the shape Pinecone answers (ValidationError too)
            raise self.backend.not_its_reply(reply, method) from None

    def namespaces(self) -> dict[str, int]:
        """Vectors per namespace (``""``: the default one), from ``describe_index_stats``."""
        stats = self._call("POST /describe_index_stats", {}, _Stats)
        return {ns: summary.vector_count for ns, summary in stats.namespaces.items()}

    def start(self, uri: str, error_mode: str, integration_id: str | None) -> str:
        """Start the import of ``uri``; its id. Sent again only while Pinecone surely did not start it
        (no connection, throttled). After an unclear failure (a 5xx, no reply) the import reading ``uri``
        is adopted; with none listed the start fails, saying one may still be running."""
        from ..transports.base import WireRequest

        body: dict[str, Any] = {"uri": uri, "errorMode": {"onError": error_mode}}
        if integration_id:
            body["integrationId"] = integration_id
        request = WireRequest("POST /bulk/imports", orjson.dumps(body))
        try:
            reply = self.backend.retried(lambda: self._start_once(request), self.transport.host)
        except _MaybeStarted as unclear:
            found = self.find(uri)
            if found is not None:
                return found
            raise Unavailable(
                f"{self.label}: the start of the import of {uri} failed without a clear answer "
                f"({unclear.cause}), and Pinecone lists no import of it; an import of it may still be "
                "running: check list_imports before writing these rows again",
                status=getattr(unclear.cause, "status", None),
            ) from unclear.cause
        return self._decoded(reply, "POST /bulk/imports", _Started).id

    def _start_once(self, request: WireRequest) -> WireReply:
        try:
            return self.transport.send(request, timeout_s=self.backend.options.timeout_s)
        except (ConnectError, Throttled):
            raise  # Pinecone did not start it: retried
        except ConnectorError as exc:
            if exc.retryable:  # a 5xx, no reply: it may have started
                raise _MaybeStarted(exc) from exc
            raise  # refused (400, 401, ...): nothing started

    def find(self, uri: str) -> str | None:
        """The id of an import of ``uri`` (each job's folder is its own), from ``list_imports``."""
        from urllib.parse import quote

        token = ""
        while True:
            # quoted: Pinecone's tokens are base64, whose '+' a query would read as a space, '/' and '=' too
            path = "GET /bulk/imports?limit=100" + (
                f"&paginationToken={quote(token, safe='')}" if token else ""
            )
            page = self._call(path, None, _Listed)
            for status in page.data:
                if status.uri.rstrip("/") == uri.rstrip("/"):
                    return status.id
            token = str((page.pagination or {}).get("next") or "")
            if not token:
                return None

    def describe(self, import_id: str) -> ImportStatus:
        """The import's status; its words (logged, and quoted in the report) with the key blanked out."""
        status = self._call(f"GET /bulk/imports/{import_id}", None, ImportStatus)
        blank = self.backend.secrets.blank
        return msgspec.structs.replace(
            status, status=blank(status.status), error=None if status.error is None else blank(status.error)
        )

    def cancel(self, import_id: str) -> None:
        from ..transports.base import WireRequest

        self.backend.control(self.transport, WireRequest(f"DELETE /bulk/imports/{import_id}", b""))
