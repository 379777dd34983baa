"""POSTs to one embeddings endpoint over the keep-alive connections of ``transports/http1.py``, the
connections every REST database's requests go through (through httpx where the environment names a
proxy, as theirs: ``transports/http.ServerPool``).

Its own connections, not the process's shared ones for the URL: a client's connections close with the
client (its sender threads go with it). With 32 threads sending 128-input requests, httpx spent about twice the
CPU per embedding (22 µs against 10 µs, reply decoding included), most of it in its pool and h11 parsing
under the GIL. Statuses map to the connector's errors exactly as every HTTP transport maps them
(``error_for_status``); the key travels only in the ``Authorization`` header, and the credentials in use
(``secrets``) are blanked out of any message the server sends back. No frame an error is raised through
holds the key or the raw reply (``redaction``: tools print a traceback's locals): the error is made in
a frame that returns it and raised from one that holds neither, as the database transports do.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ..errors import AuthError, ConfigError, ConnectorError, NotFound
from ..redaction import Secrets, blank_logs, detached, key_refused, returned
from ..transports.base import host_of
from ..transports.http import TRACE_LOGGERS, ServerPool, error_for_status
from ..transports.http1 import request_head

__all__ = ["EmbeddingTransport"]


class EmbeddingTransport:
    """``post(body, timeout_s) -> reply body`` or a connector error; thread-safe."""

    def __init__(
        self,
        endpoint: str,
        api_key: str | None,
        *,
        secrets: Secrets,
        user_agent: str = "vectordb-connector",
        max_connections: int = 32,
        key_option: str = "api_key",
    ) -> None:
        parts = urlsplit(endpoint)
        https = parts.scheme == "https"
        host, port = parts.hostname or "", parts.port or (443 if https else 80)
        self.host = host_of(f"{host}:{port}")
        netloc = parts.netloc.rpartition("@")[2]
        self.where = f"POST {parts.scheme}://{netloc}{parts.path}"
        self.secrets = secrets
        blank_logs(secrets, *TRACE_LOGGERS)  # through a proxy, httpx and httpcore log what it sends and hears
        self.key_option = key_option  # the option an AuthError names: the key is what is wrong
        headers = {
            "Host": netloc,
            "User-Agent": user_agent,
            "Accept": "application/json",
            "Content-Type": "application/json",
        }
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._url = f"{parts.scheme}://{netloc}{path}"
        request = _request(path, headers, api_key, key_option, secrets)
        del api_key  # this frame raises the error of a key HTTP cannot carry: it must not hold the key
        if isinstance(request, ConfigError):
            try:
                raise request
            finally:
                del request  # held by this frame, the raised error would be a cycle through it
        self._head, self._client_headers = request
        self._pool = ServerPool(f"{parts.scheme}://{netloc}", max_connections)  # one a sender thread

    def __repr__(self) -> str:
        return f"EmbeddingTransport({self.where})"

    def post(self, body: bytes, timeout_s: float) -> bytes:
        # an error is raised from no frame that holds the reply's body and headers (a server echoes the
        # key) or the request's head
        return returned(self._exchange(body, timeout_s))

    def _exchange(self, body: bytes, timeout_s: float) -> bytes | ConnectorError:
        """The reply's body, or the error ``post`` raises: made here and returned, never raised through this frame."""
        try:
            status, data, headers = self._pool.send(
                "POST",
                self._url,
                self._head,
                self._client_headers,
                body,
                where=self.where,
                timeout_s=timeout_s,
                secrets=self.secrets,
            )
        except ConnectorError as exc:  # raised through frames holding the request's head and headers
            return detached(exc)
        self.host.answered = True  # a status came back: a server is there, if not well
        if status >= 300:
            error = error_for_status(status, data, self.where, headers, secrets=self.secrets)
            if isinstance(error, AuthError):  # a wrong key, or its account out of quota
                return AuthError(f"option {self.key_option}: {error}", status=status)
            if isinstance(error, NotFound):  # no such model, or no endpoint at this path
                return NotFound(f"option embed_model (or embed_url): {error}", status=status)
            return error
        return data

    def close(self) -> None:
        """Close every connection (each sender thread's)."""
        self._pool.close()


def _request(
    path: str, headers: dict[str, str], api_key: str | None, key_option: str, secrets: Secrets
) -> tuple[bytes, dict[str, str]] | ConfigError:
    """The request's head and its headers for httpx (no ``Host``), the key among them; or the error of a
    key HTTP cannot carry (naming ``key_option``, or ``embed_url`` for its path), returned without the frames
    that held the key."""
    if api_key:
        headers = headers | {"Authorization": f"Bearer {api_key}"}
    try:
        head = request_head("POST", path, headers)
    except ConfigError as exc:  # raised where the request's lines, the key in them, are locals
        return detached(
            key_refused(exc, headers.items(), secrets, key_option) or ConfigError(f"option embed_url: {exc}")
        )
    return head, {name: value for name, value in headers.items() if name != "Host"}
