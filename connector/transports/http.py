"""HTTP transport over httpx: keep-alive connection pool shared per (base URL) per process.

Statuses map to the connector's errors here and nowhere else: 408/429/5xx are retryable,
401/403 are fatal, 404 means the index or endpoint is wrong (fatal), any other 4xx is a
rejection of the request (the engine bisects it to find the rows at fault). Every message quotes
the server's reason with the credentials in use blanked out (``redaction``): servers echo keys.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

from ..errors import (
    AuthError,
    ConnectError,
    DeadlineExceeded,
    NotFound,
    Rejected,
    ServerError,
    Throttled,
    TransportError,
    Unavailable,
)
from ..redaction import Secrets, blank_logs
from .base import WireReply, WireRequest, host_of, shared

__all__ = ["HttpTransport", "error_for_status", "parse_retry_after", "reason_of"]


POOL_CONNECTIONS = 256
MAX_ROUTES = 64  # parsed URLs kept per transport
# httpcore's debug trace logs each reply's headers whole: a header that echoes the key would show it
TRACE_LOGGERS = ("httpcore.http11", "httpcore.http2")


def error_for_status(
    status: int, body: bytes, where: str, retry_after: str | None, *, secrets: Secrets
) -> ServerError:
    """The connector error for a non-2xx reply; the message quotes the server's reason (``reason_of``
    its body), with ``secrets`` blanked out."""
    text = reason_of(body, secrets)
    message = f"{where}: HTTP {status}: {text}" if text else f"{where}: HTTP {status}"
    hint = parse_retry_after(retry_after)
    kind: type[ServerError]
    if status == 429:
        kind = Throttled
    elif status == 408 or status >= 500:
        kind = Unavailable
    elif status in (401, 403):
        kind = AuthError
    elif status == 404:
        kind = NotFound
    elif 400 <= status < 500:
        kind = Rejected
    else:
        kind = ServerError  # 1xx/3xx: nothing we asked for
    return kind(message, status=status, retry_after_s=hint)


def reason_of(body: bytes, secrets: Secrets) -> str:
    """The server's message, ``secrets`` blanked: the ``message``/``error``/``detail`` field of a JSON body
    (or of its ``status`` object, as Qdrant nests it, of the first of its ``error`` list, as Weaviate
    does, or of its ``error`` object, as OpenAI does), else the body; at most 500 characters."""
    if body[:1] == b"{":
        try:
            import orjson

            parsed = orjson.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            status = parsed.get("status")
            if isinstance(status, dict) and isinstance(status.get("error"), str):  # Qdrant's envelope
                parsed = status
            errors = parsed.get("error")
            if isinstance(errors, list) and errors and isinstance(errors[0], dict):  # Weaviate's
                parsed = errors[0]  # {"error": [{"message": "..."}]}
            elif isinstance(errors, dict):  # OpenAI's {"error": {"message": "...", "type": ...}}
                parsed = errors
            for key in ("message", "error", "detail"):
                if isinstance(parsed.get(key), str) and parsed[key]:
                    return secrets.blank(parsed[key])[:500]  # blanked whole: a cut key would not match
    return secrets.blank(body.decode("utf-8", "replace")).strip()[:500]


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


class HttpTransport:
    """POSTs request bodies to ``base_url`` + path; ``headers`` (e.g. the api key) go on every request,
    and ``secrets`` (the credentials among them) are blanked out of every error it raises.

    A request goes straight to the pool's ``httpx.HTTPTransport`` with the URL and headers made once
    per path: ``httpx.Client.request`` would merge URLs, headers and cookies, run its auth and redirect
    machinery and copy the reply's stream again, about a third of a request's CPU in the client
    (``Client.post`` 490 µs, ``HTTPTransport.handle_request`` 340 µs, a 1,000-id delete on loopback).
    None of that is used here: no auth flow, no redirects followed, no cookies wanted. When the
    environment names a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``) the request goes
    through the client instead, which picks the proxy, as it always has.
    """

    def __init__(
        self,
        base_url: str,
        *,
        secrets: Secrets,
        headers: tuple[tuple[str, str], ...] = (),
        max_connections: int = 64,
        label: str = "",
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.label = label or self.base_url
        self.host = host_of(_address(self.base_url))
        self._secrets = secrets
        blank_logs(secrets, *TRACE_LOGGERS)
        # one pool per process and URL, shared by clients of any concurrency: size it for all of them
        # (each client's engine bounds its own requests in flight)
        pool = shared(
            ("http", self.base_url), lambda: _Pool(self.base_url, max(POOL_CONNECTIONS, max_connections))
        )
        self._client = pool.client
        self._direct = pool.direct
        # what the client would send: its defaults (User-Agent, Accept, Accept-Encoding, Connection)
        # under ours; made once, copied by each request
        self._headers = httpx.Headers(self._client.headers)
        self._headers.update(dict(headers))
        self._routes: dict[str, tuple[str, str, Any]] = {}  # request.method -> (verb, path, httpx.URL)

    def __repr__(self) -> str:
        return f"HttpTransport({self.label})"

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        import httpx

        route = self._routes.get(request.method) or self._route(request.method)
        headers = self._headers
        if request.headers:
            headers = httpx.Headers(headers)
            headers.update(dict(request.headers))
        try:
            if self._direct is not None and not self._client.is_closed:
                timeouts = {"connect": timeout_s, "read": timeout_s, "write": timeout_s, "pool": timeout_s}
                reply = self._direct.handle_request(
                    httpx.Request(
                        route[0],
                        route[2],
                        headers=headers,
                        content=request.body,
                        extensions={"timeout": timeouts},
                    )
                )
                try:
                    reply.read()
                finally:
                    reply.close()
            else:  # a proxy from the environment (or a closed pool: the client says so)
                reply = self._client.request(
                    route[0], route[2], content=request.body, headers=headers, timeout=timeout_s
                )
        except httpx.TimeoutException as exc:
            where = self._where(route)
            if isinstance(exc, httpx.ConnectTimeout):
                raise ConnectError(f"{where}: cannot connect: timed out after {timeout_s} s") from None
            raise DeadlineExceeded(f"{where}: no reply within {timeout_s} s ({type(exc).__name__})") from None
        except httpx.ConnectError as exc:
            raise ConnectError(f"{self._where(route)}: cannot connect: {exc}") from None
        except httpx.TransportError as exc:  # dropped connection, protocol error mid-reply (may quote it)
            where = self._where(route)
            raise TransportError(f"{where}: {type(exc).__name__}: {self._secrets.blank(str(exc))}") from None
        self.host.answered = True  # a status came back: a server is there, if not well
        status = reply.status_code
        if status >= 300 and status not in request.answers:
            raise error_for_status(
                status,
                reply.content,
                self._where(route),
                reply.headers.get("retry-after"),
                secrets=self._secrets,
            )
        return WireReply(body=reply.content, status=status, headers=dict(reply.headers))

    def _where(self, route: tuple[str, str, Any]) -> str:
        """Where a request went, for an error's message (made only on errors)."""
        return f"{self.label} {route[0]} {route[1]}"

    def _route(self, method: str) -> tuple[str, str, Any]:
        """``"POST /vectors/upsert"`` as its verb, path and parsed URL, kept for the next request."""
        import httpx

        verb, _, path = method.partition(" ")
        route = (verb, path, httpx.URL(self.base_url + path))
        if len(self._routes) >= MAX_ROUTES:  # paths that name ids or names: keep the table bounded
            self._routes.clear()
        self._routes[method] = route
        return route

    def close(self) -> None:
        """The pool is shared by the process; it closes with ``forget_shared`` or at exit."""


class _Pool:
    """The process's connections to one base URL: an ``httpx.Client`` and, unless the environment
    names a proxy for the URL's scheme, the ``httpx.HTTPTransport`` under it, which requests use directly."""

    def __init__(self, base_url: str, max_connections: int) -> None:
        from urllib.request import getproxies

        import httpx

        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        scheme = base_url.partition(":")[0].lower()
        proxies = getproxies()  # what httpx.Client(trust_env=True) reads for its proxy mounts
        if proxies.get(scheme) or proxies.get("all"):
            self.direct: Any = None
            self.client: Any = httpx.Client(limits=limits, follow_redirects=False)
        else:
            # the transport httpx.Client makes for itself without a proxy (verify, trust_env: the defaults)
            self.direct = httpx.HTTPTransport(limits=limits)
            self.client = httpx.Client(transport=self.direct, follow_redirects=False)

    def close(self) -> None:
        self.client.close()


def _address(url: str) -> str:
    """``host:port`` of a URL (the scheme's port when it names none)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.hostname or ''}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
