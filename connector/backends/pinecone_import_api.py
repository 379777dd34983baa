"""Pinecone's bulk-import API on the index host, over REST: start, describe and cancel an import, and the
index's namespaces (an import goes only into namespaces that do not exist yet).

Pinecone serves these calls on the index host also for ``pinecone+grpc://`` URIs (same host and
port). The calls are control-plane calls of the backend (``Backend.control``: its retries), and every
word of a status Pinecone sends back is blanked of the credentials in use before it is logged or
reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import orjson

if TYPE_CHECKING:
    from ..redaction import Secrets
    from ..transports.base import Transport, WireReply, WireRequest

__all__ = ["ImportHost", "ImportStatus", "PineconeImports"]


class ImportHostOptions(Protocol):
    @property
    def api_version(self) -> str: ...

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

    def _call(self, method: str, body: Any = None) -> bytes:
        from ..transports.base import WireRequest

        payload = b"" if body is None else orjson.dumps(body)
        return self.backend.control(self.transport, WireRequest(method, payload)).body

    def namespaces(self) -> dict[str, int]:
        """Vectors per namespace (``""``: the default one), from ``describe_index_stats``."""
        stats = orjson.loads(self._call("POST /describe_index_stats", {}) or b"{}")
        return {
            ns: int((v or {}).get("vectorCount") or 0) for ns, v in (stats.get("namespaces") or {}).items()
        }

    def start(self, uri: str, error_mode: str, integration_id: str | None) -> str:
        body: dict[str, Any] = {"uri": uri, "errorMode": {"onError": error_mode}}
        if integration_id:
            body["integrationId"] = integration_id
        return msgspec.json.decode(self._call("POST /bulk/imports", body), type=_Started).id

    def describe(self, import_id: str) -> ImportStatus:
        """The import's status; its words (logged, and quoted in the report) with the key blanked out."""
        status = msgspec.json.decode(self._call(f"GET /bulk/imports/{import_id}"), type=ImportStatus)
        blank = self.backend.secrets.blank
        return msgspec.structs.replace(
            status, status=blank(status.status), error=None if status.error is None else blank(status.error)
        )

    def cancel(self, import_id: str) -> None:
        self._call(f"DELETE /bulk/imports/{import_id}")
