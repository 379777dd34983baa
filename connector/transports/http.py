"""HTTP transport: keep-alive connections shared per (base URL) per process (``http1``; httpx through a proxy).

Statuses map to the connector's errors here and nowhere else: 408/429/5xx are retryable,
401/403 are fatal, 404 means the index or endpoint is wrong (fatal), any other 4xx is a
rejection of the request (the engine bisects it to find the rows at fault). Every message quotes
the server's reason with the credentials in use blanked out (``redaction``): servers echo keys.
"""

from __future__ import annotations

import email.utils
import functools
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..errors import (
    AuthError,
    ConfigError,
    ConnectError,
    ConnectorError,
    ConnectTimeout,
    DeadlineExceeded,
    NotFound,
    Rejected,
    ServerError,
    Throttled,
    TransportError,
    Unavailable,
)
from ..redaction import Secrets, blank_logs, detached, key_refused, returned
from .base import WireReply, WireRequest, host_of, shared
from .http1 import ConnectionPool, request_head

__all__ = [
    "HttpTransport",
    "ServerPool",
    "error_for_status",
    "parse_duration_s",
    "parse_retry_after",
    "reason_of",
    "retry_hint_s",
]


POOL_CONNECTIONS = 256
USER_AGENT = "vectordb-connector"
MAX_ROUTES = 64  # parsed URLs kept per transport
# httpcore's debug trace logs each reply's headers whole (a header that echoes the key would show it),
# httpx logs each request's URL (a key in its query)
TRACE_LOGGERS = ("httpcore.http11", "httpcore.http2", "httpx")


def error_for_status(
    status: int, body: bytes, where: str, headers: Mapping[str, str] | None, *, secrets: Secrets
) -> ServerError:
    """The connector error for a non-2xx reply; the message quotes the server's reason (``reason_of``
    its body), with ``secrets`` blanked out, and the wait it asks for is read from its ``headers``
    (names lower-cased; ``retry_hint_s``)."""
    text = reason_of(body, secrets)
    message = f"{where}: HTTP {status}: {text}" if text else f"{where}: HTTP {status}"
    hint = retry_hint_s(status, headers or {})
    kind: type[ServerError]
    if status == 429 and _out_of_quota(body):
        # OpenAI's insufficient_quota: no rate, a plan or bill; every retry would be refused alike
        message += " (the account of this key is out of quota: no request can succeed until it is raised)"
        kind = AuthError
    elif status == 429:
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


def _out_of_quota(body: bytes) -> bool:
    """An OpenAI error body whose ``code`` or ``type`` is ``insufficient_quota``."""
    try:
        parsed = orjson.loads(body)
    except ValueError:
        return False
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return isinstance(error, dict) and "insufficient_quota" in (error.get("code"), error.get("type"))


def reason_of(body: bytes, secrets: Secrets) -> str:
    """The server's message, ``secrets`` blanked: the ``message``/``error``/``detail`` field of a JSON body
    (or of its ``status`` object, as Qdrant nests it, of the first of its ``error`` list, as Weaviate
    does, or of its ``error`` object, as OpenAI does), else the body; at most 500 characters."""
    if body[:1] == b"{":
        try:
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


# OpenAI's rate-limit headers: when each limit is whole again, and what is left of it
_RESETS = (
    ("x-ratelimit-reset-requests", "x-ratelimit-remaining-requests"),
    ("x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"),
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def retry_hint_s(status: int, headers: Mapping[str, str]) -> float | None:
    """The wait a reply asks for before a retry, from its headers (names lower-cased), or ``None``:
    ``retry-after-ms`` (Azure OpenAI), else ``Retry-After``; and for a 429 without either, OpenAI's
    ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens`` (``"3s"``, ``"6m0s"``, ``"120ms"``), of
    the limits with nothing remaining (each, if no ``x-ratelimit-remaining-*`` says), the longest. The
    reset headers come on every OpenAI reply: on another status they say nothing about the error.
    ``ServerError`` bounds the hint."""
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000.0
    hint = parse_retry_after(headers.get("retry-after"))
    if hint is not None or status != 429:
        return hint
    resets = [
        parse_duration_s(headers.get(reset, ""))
        for reset, remaining in _RESETS
        if headers.get(remaining, "0").strip() in ("0", "")
    ]
    return max((reset for reset in resets if reset is not None), default=None)


def parse_duration_s(value: str) -> float | None:
    """Seconds of a Go duration as OpenAI writes its resets (``"1h2m3.5s"``, ``"120ms"``), or of a bare
    number of seconds; ``None`` for anything else."""
    value = value.strip()
    number = _number(value)
    if number is not None or not value:
        return number
    total, at = 0.0, 0
    for part in _DURATION_PART.finditer(value):
        if part.start() != at:
            return None
        total += float(part.group(1)) * _DURATION_UNITS_S[part.group(2)]
        at = part.end()
    return total if at == len(value) else None


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date (``ServerError`` bounds it)."""
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


class HttpTransport:
    """Sends request bodies to ``base_url`` + path; ``headers`` (e.g. the api key) go on every request,
    and ``secrets`` (the credentials among them) are blanked out of every error it raises.

    Requests go through the process's keep-alive connections to the server (``http1.ConnectionPool``),
    with each path's request head made once. When the environment names a proxy (``HTTP_PROXY``,
    ``HTTPS_PROXY``, ``ALL_PROXY``) they go through an ``httpx.Client`` instead, which picks the proxy.
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
        self.base_url = base_url.rstrip("/")
        self.label = label or self.base_url
        self.host = host_of(_address(self.base_url))
        self._secrets = secrets
        blank_logs(secrets, *TRACE_LOGGERS)
        # one pool per process and URL, shared by clients of any concurrency: size it for all of them
        # (each client's engine bounds its own requests in flight)
        pool = shared(
            ("http", self.base_url), lambda: ServerPool(self.base_url, max(POOL_CONNECTIONS, max_connections))
        )
        self._pool = pool
        parts = urlsplit(self.base_url)
        self._prefix = parts.path.rstrip("/")  # a base URL's own path goes before each request's
        # every request's headers, by lower-cased name: ours under the transport's under the request's
        self._headers: dict[str, tuple[str, str]] = {
            "host": ("Host", parts.netloc.rpartition("@")[2]),
            "user-agent": ("User-Agent", USER_AGENT),
            "accept": ("Accept", "*/*"),
        }
        self._headers.update((name.lower(), (name, value)) for name, value in headers)
        self._routes: dict[str, _Route] = {}  # request.method -> its route

    def __repr__(self) -> str:
        return f"HttpTransport({self.label})"

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        # an error is raised from no frame that holds the request's head and headers (the key) or the reply
        return returned(self._exchange(request, timeout_s))

    def _exchange(self, request: WireRequest, timeout_s: float) -> WireReply | ConnectorError:
        """The reply, or the error ``send`` raises: made here and returned, never raised through this frame."""
        try:
            route = self._routes.get(request.method) or self._route(request.method)
            head, headers = (
                (route.head, route.headers) if not request.headers else self._framed(route, request.headers)
            )
            status, body, reply_headers = self._pool.send(
                route.verb,
                route.url,
                head,
                headers,
                request.body,
                where=route.where,
                timeout_s=timeout_s,
                secrets=self._secrets,
            )
        except ConnectorError as exc:  # raised through frames holding the request's head and headers
            return detached(exc)
        self.host.answered = True  # a status came back: a server is there, if not well
        if status >= 300 and status not in request.answers:
            return error_for_status(status, body, route.where, reply_headers, secrets=self._secrets)
        return WireReply(body=body, status=status, headers=reply_headers)

    def _route(self, method: str) -> _Route:
        """``"POST /vectors/upsert"`` as its verb, URL, request head and headers, and the place its errors
        name, kept for the next request."""
        verb, _, path = method.partition(" ")
        head, headers = self._framed_as(verb, path, self._headers)
        route = _Route(verb, path, self.base_url + path, head, headers, f"{self.label} {verb} {path}")
        if len(self._routes) >= MAX_ROUTES:  # paths that name ids or names: keep the table bounded
            self._routes.clear()
        self._routes[method] = route
        return route

    def _framed(self, route: _Route, extra: tuple[tuple[str, str], ...]) -> tuple[bytes, dict[str, str]]:
        """The head and headers of a request with headers of its own, which win over the transport's."""
        merged = dict(self._headers)
        merged.update((name.lower(), (name, value)) for name, value in extra)
        return self._framed_as(route.verb, route.path, merged)

    def _framed_as(
        self, verb: str, path: str, headers: dict[str, tuple[str, str]]
    ) -> tuple[bytes, dict[str, str]]:
        """The request head (``ConnectionPool``'s) and the headers but ``Host`` (an httpx client's). A key
        HTTP cannot carry names its option: the header's name alone (``Api-Key: a line break ...``) named none."""
        try:
            head = request_head(verb, self._prefix + path, dict(headers.values()))
        except ConfigError as exc:  # raised on: ``_exchange`` detaches it from the frames that hold the key
            named = key_refused(exc, headers.values(), self._secrets)
            if named is None:
                raise
            raise named from None
        return head, {name: value for key, (name, value) in headers.items() if key != "host"}

    def close(self) -> None:
        """The pool is shared by the process; it closes with ``forget_shared`` or at exit."""


class _Route:
    """One request method's verb, path, URL, request head (up to ``Content-Length``), headers (for an
    httpx client) and error label."""

    __slots__ = ("head", "headers", "path", "url", "verb", "where")

    def __init__(
        self, verb: str, path: str, url: str, head: bytes, headers: dict[str, str], where: str
    ) -> None:
        self.verb, self.path, self.url, self.head, self.headers, self.where = (
            verb,
            path,
            url,
            head,
            headers,
            where,
        )


class ServerPool:
    """The connections of a process (or of one client) to one base URL: a ``ConnectionPool`` (``direct``),
    unless the environment names a proxy for the URL's scheme; then an ``httpx.Client`` (``client``), which
    goes through it. ``send`` picks the one there is."""

    def __init__(self, base_url: str, max_connections: int) -> None:
        from urllib.request import getproxies

        parts = urlsplit(base_url)
        scheme = parts.scheme.lower()
        proxies = getproxies()  # what httpx.Client(trust_env=True) reads for its proxy mounts
        self.direct: ConnectionPool | None = None
        self._new_client: Callable[[], Any] | None = None
        self._clients: dict[int, Any] = {}  # by process id: see ``client``
        if proxies.get(scheme) or proxies.get("all"):
            import httpx

            limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
            self._new_client = functools.partial(httpx.Client, limits=limits, follow_redirects=False)
            self._clients[os.getpid()] = self._new_client()
        else:
            port = parts.port or (443 if scheme == "https" else 80)
            self.direct = ConnectionPool(scheme, parts.hostname or "", port, max_idle=max_connections)

    def send(
        self,
        verb: str,
        url: str,
        head: bytes,
        headers: dict[str, str],
        body: bytes,
        *,
        where: str,
        timeout_s: float,
        secrets: Secrets,
    ) -> tuple[int, bytes, dict[str, str]]:
        """The status, body and headers of the reply: ``head`` (``request_head``'s) over the connections,
        or ``url`` with ``headers`` through the proxy (httpx picks it), its failures mapped as
        ``ConnectionPool`` maps its own."""
        if self.direct is not None:
            reply = self.direct.request(
                head, body, verb=verb, where=where, timeout_s=timeout_s, secrets=secrets
            )
            return reply.status, reply.body, reply.headers
        import httpx

        try:
            reply = self.client.request(verb, url, content=body, headers=headers, timeout=timeout_s)
        except httpx.TimeoutException as exc:
            if isinstance(exc, httpx.ConnectTimeout):
                raise ConnectTimeout(f"{where}: cannot connect: timed out after {timeout_s} s") from None
            raise DeadlineExceeded(f"{where}: no reply within {timeout_s} s ({type(exc).__name__})") from None
        except httpx.ConnectError as exc:
            raise ConnectError(f"{where}: cannot connect: {exc}") from None
        except httpx.TransportError as exc:  # dropped connection, protocol error mid-reply (may quote it)
            raise TransportError(f"{where}: {type(exc).__name__}: {secrets.blank(str(exc))}") from None
        return reply.status_code, reply.content, dict(reply.headers)

    @property
    def client(self) -> Any:
        """This process's ``httpx.Client`` (``None`` without a proxy). A forked child makes its own: the
        parent's holds the parent's keep-alive sockets, and a reply read on one of them may answer the
        other process's request. The parent's stays in ``_clients``, referenced and unclosed: its sockets
        are the parent's, so the child leaves them alone."""
        if self._new_client is None:
            return None
        pid = os.getpid()
        client = self._clients.get(pid)
        if client is None:
            made = self._new_client()
            client = self._clients.setdefault(pid, made)  # atomic: of the child's threads racing, one wins
            if client is not made:
                made.close()  # never sent on
        return client

    def close(self) -> None:
        client = self._clients.pop(os.getpid(), None)  # this process's only: the parent's is the parent's
        if client is not None:
            client.close()
        if self.direct is not None:
            self.direct.close()


def _address(url: str) -> str:
    """``host:port`` of a URL (the scheme's port when it names none)."""
    parts = urlsplit(url)
    return f"{parts.hostname or ''}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
