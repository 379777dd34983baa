"""The project's OpenAI-compatible embeddings server: deterministic vectors, scripted faults.

``POST /v1/embeddings`` takes OpenAI's body (``model``, ``input``: a string or a list of strings,
``encoding_format``: ``"float"`` (default) or ``"base64"``, ``dimensions``) and answers OpenAI's
reply: ``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
"usage"}``. Each text's vector is derived from the text alone (``vectors_for``), so a test computes
the vector it must get back exactly: the first ``dim`` bytes of SHAKE-256 of ``model NUL text``,
each minus 127.5, as float32, scaled to unit length (``dimensions`` takes fewer bytes, which is
OpenAI's "truncate and renormalise"). Base64 is the little-endian float32 bytes; floats are the
shortest float32 reprs (orjson), the hardest case for a decoder that goes through doubles.

Errors use OpenAI's body, ``{"error": {"message", "type", "param", "code"}}``, and statuses:
400 ``invalid_request_error`` (an input over the context limit, in OpenAI's wording, which names
no input unless ``name_index``; an empty string among the inputs, refused as OpenAI does, with
the whole request; a request over ``max_request_tokens`` in all; too many inputs; a malformed
body, a body field OpenAI does not take: "Unrecognized request argument supplied: X"; ``dimensions``
for a model without them, ``text-embedding-ada-002``), 401 (bad or missing key), 404 (unknown
model), 429 (rate limits: ``Retry-After``, Azure's ``retry-after-ms``, OpenAI's
``x-ratelimit-reset-*``, or no hint at all; ``insufficient_quota`` with ``out_of_quota``), 5xx. Tokens are counted as ``tokens_of``: a quarter of
the UTF-8 bytes, rounded up. Adversarial on purpose: the context error reports the whole
request's token count, so two requests holding the same bad input get different messages.
``echo_key`` makes it a server that echoes keys: a wrong key is quoted whole (not masked as OpenAI
does), and every error quotes the key the request carried in its message and in a reply header
(``x-echo-api-key``).

Faults are scripted (``script(Fault.throttle(0.2), Fault.drop(), ...)``): each scripted fault
is spent by one embeddings request, in order; ``delay_s`` adds latency to every request without
holding others up, ``accept_delay_s`` to those answered with vectors only (refusals come faster); ``quota`` answers 429 to requests beyond that many in flight;
``throttle_s`` answers 429 to every request in the first seconds after the first one, with the time
left as ``throttle_hint`` says (``"none"``: no hint, as a proxy's or gateway's 429 may have).
``base64="refuse"`` answers base64 requests with 400 (a server without base64), ``"ignore"``
answers them with floats; ``shuffle`` lists the items last to first (their ``index`` is right);
``null_for`` answers ``"embedding": null`` for each of these texts, every time, in a reply whose other
items are right (a server or proxy that fails one input inside a 200);
``idle_timeout_s`` closes a keep-alive connection that sat idle that long (as uvicorn does after
5 s), so a client's next request on it meets a closed socket.

One asyncio event loop, HTTP/1.1 keep-alive, a few microseconds of work per input (one SHAKE-256
digest, numpy, one base64 encode), so one process answers well over 100,000 inputs/s. In a
thread for tests (``EmbeddingsServer``, a context manager); in its own process for benchmarks:
``python -m tests.servers.embeddings --port 0 [--delay-ms N]`` prints ``PORT <n>`` and serves
until SIGTERM; ``GET /_stats`` returns its counters and CPU seconds as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import binascii
import collections
import hashlib
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import orjson

__all__ = [
    "DEFAULT_KEY",
    "DEFAULT_MODEL",
    "EmbeddingsServer",
    "Fault",
    "ServerStats",
    "context_error_message",
    "main",
    "tokens_of",
    "vectors_for",
]

DEFAULT_MODEL = "test-embed-768"
DEFAULT_KEY = "sk-test-0123456789abcdef"
MODELS = {DEFAULT_MODEL: 768, "test-embed-64": 64, "text-embedding-ada-002": 1536}
FIXED_DIMENSIONS = frozenset(
    {"text-embedding-ada-002"}
)  # models that refuse ``dimensions``, as OpenAI's does
BODY_FIELDS = frozenset({"model", "input", "encoding_format", "dimensions", "user"})  # what OpenAI takes
ThrottleHint = Literal["none", "retry-after", "retry-after-ms", "openai"]
EMBEDDINGS_PATH = b"/v1/embeddings"
STATS_PATH = b"/_stats"

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed"}
_REASONS |= {413: "Payload Too Large", 429: "Too Many Requests", 500: "Internal Server Error"}
_REASONS |= {502: "Bad Gateway", 503: "Service Unavailable"}


def tokens_of(text: str) -> int:
    """The server's token count of one input: a quarter of its UTF-8 bytes, rounded up (at least 1)."""
    return max(1, -(-len(text.encode("utf-8")) // 4))


def vectors_for(texts: Sequence[str], dim: int, model: str = DEFAULT_MODEL) -> np.ndarray:
    """(len(texts), dim) float32 unit vectors, each a function of its text alone (see the module doc)."""
    salt = model.encode() + b"\0"
    raw = b"".join([hashlib.shake_256(salt + text.encode("utf-8")).digest(dim) for text in texts])
    vectors = np.frombuffer(raw, np.uint8).reshape(len(texts), dim).astype(np.float32)
    vectors -= np.float32(127.5)
    vectors /= np.sqrt(np.sum(vectors * vectors, axis=1, dtype=np.float32))[:, None]
    return vectors


def context_error_message(limit: int, requested: int) -> str:
    """OpenAI's wording for a request over the model's context; names no input."""
    return (
        f"This model's maximum context length is {limit} tokens, however you requested {requested} "
        f"tokens ({requested} in your prompt; 0 for the completion). Please reduce your prompt; or "
        "completion length."
    )


@dataclass(frozen=True, slots=True)
class Fault:
    """One scripted answer, spent by one embeddings request."""

    kind: Literal["status", "drop", "cut", "slow", "short"]
    status: int = 0
    retry_after: str | None = None
    delay_s: float = 0.0
    hint: ThrottleHint = "retry-after"

    @classmethod
    def throttle(cls, retry_after_s: float | None = None, hint: ThrottleHint = "retry-after") -> Fault:
        """429 with OpenAI's rate-limit body; ``retry_after_s`` in the header ``hint`` names (``_hint_headers``):
        ``Retry-After`` in whole or fractional seconds, Azure's ``retry-after-ms``, or OpenAI's
        ``x-ratelimit-reset-requests``/``-tokens`` (``"1.5s"``); none without ``retry_after_s``."""
        wait = None if retry_after_s is None else f"{retry_after_s:g}"
        return cls("status", status=429, retry_after=wait, hint=hint)

    @classmethod
    def error(cls, status: int, retry_after: str | None = None) -> Fault:
        return cls("status", status=status, retry_after=retry_after)

    @classmethod
    def drop(cls) -> Fault:
        """Read the request, then close the connection without a reply."""
        return cls("drop")

    @classmethod
    def cut(cls) -> Fault:
        """Send the headers and half the reply, then close the connection."""
        return cls("cut")

    @classmethod
    def short(cls) -> Fault:
        """A 200 reply that leaves out the last input's vector (a broken server or proxy)."""
        return cls("short")

    @classmethod
    def slow(cls, delay_s: float) -> Fault:
        """Answer correctly, ``delay_s`` late."""
        return cls("slow", delay_s=delay_s)


@dataclass(slots=True)
class ServerStats:
    """What the server saw; ``log`` has one ``(monotonic time, inputs, status)`` per embeddings request."""

    requests: int = 0
    inputs: int = 0
    embedded: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    statuses: collections.Counter[int] = field(default_factory=collections.Counter)
    log: list[tuple[float, int, int]] = field(default_factory=list)
    auth_headers: set[str] = field(default_factory=set)  # the distinct Authorization values seen
    formats: collections.Counter[str] = field(default_factory=collections.Counter)


class _Reply:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, body: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.status, self.body, self.headers = status, body, headers


def _error(
    status: int, message: str, kind: str, param: str | None = None, code: str | None = None, **headers: str
) -> _Reply:
    body = orjson.dumps({"error": {"message": message, "type": kind, "param": param, "code": code}})
    return _Reply(status, body, tuple((k.replace("_", "-"), v) for k, v in headers.items()))


def _echoed(reply: _Reply, key: str) -> _Reply:
    """An error reply that also quotes the request's key, in its message and in a header."""
    doc = orjson.loads(reply.body)
    doc["error"]["message"] += f" (the request's API key: {key})"
    return _Reply(reply.status, orjson.dumps(doc), (*reply.headers, ("x-echo-api-key", key)))


class _BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _quiet_about_cancelled(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio reports a connection handler cancelled at shutdown as an error; it is not one here."""
    if not isinstance(context.get("exception"), asyncio.CancelledError):
        loop.default_exception_handler(context)


class EmbeddingsServer:
    """An OpenAI-compatible ``/v1/embeddings`` on 127.0.0.1, in a thread of this process."""

    def __init__(
        self,
        *,
        port: int = 0,
        api_key: str | None = DEFAULT_KEY,
        models: dict[str, int] | None = None,
        context_tokens: int = 512,
        max_inputs: int = 2048,
        delay_s: float = 0.0,
        accept_delay_s: float = 0.0,
        base64: Literal["yes", "refuse", "ignore"] = "yes",
        name_index: bool = False,
        echo_key: bool = False,
        quota: int | None = None,
        quota_retry_after_s: float = 0.05,
        shuffle: bool = False,
        max_request_tokens: int = 300_000,
        idle_timeout_s: float | None = None,
        throttle_s: float = 0.0,
        throttle_hint: ThrottleHint = "none",
        out_of_quota: bool = False,
        null_for: Sequence[str] = (),
    ) -> None:
        self.port = port
        self.api_key = api_key
        self.models = dict(MODELS if models is None else models)
        self.context_tokens, self.max_inputs = context_tokens, max_inputs
        self.delay_s, self.base64, self.name_index, self.echo_key = delay_s, base64, name_index, echo_key
        self.accept_delay_s = accept_delay_s  # more for a request answered with vectors: refusals come faster
        self.quota, self.quota_retry_after_s = quota, quota_retry_after_s
        self.shuffle = shuffle
        self.null_for = frozenset(null_for)  # texts answered with a null embedding
        self.max_request_tokens = max_request_tokens
        self.idle_timeout_s = idle_timeout_s
        # 429 for every request in the first throttle_s seconds after the first one, the time left said
        # as throttle_hint says (or not at all); out_of_quota: 429 insufficient_quota, for good
        self.throttle_s, self.throttle_hint = throttle_s, throttle_hint
        self.out_of_quota = out_of_quota
        self._first_request: float | None = None
        self.stats = ServerStats()
        self._faults: collections.deque[Fault] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()

    def __repr__(self) -> str:
        return f"EmbeddingsServer({self.url})"

    @property
    def url(self) -> str:
        """The base URL clients take: ``http://127.0.0.1:P`` (the OpenAI client wants ``url + "/v1"``)."""
        return f"http://127.0.0.1:{self.port}"

    # -- script --------------------------------------------------------------------------------

    def script(self, *faults: Fault) -> None:
        """Queue faults; each is spent by the next embeddings request, in order."""
        self._faults.extend(faults)

    def pending_faults(self) -> int:
        return len(self._faults)

    def reset(self) -> None:
        """Forget the counters and any faults not yet spent."""
        self._faults.clear()
        self.stats = ServerStats()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> EmbeddingsServer:
        self._thread = threading.Thread(target=self._run, name="embeddings-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the embeddings server did not start within 10 s")
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(10)
        self._loop = None

    def __enter__(self) -> EmbeddingsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._server = loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", self.port, backlog=1024)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            for writer in list(self._connections):
                writer.transport.abort()
            # handlers still waiting (a slow reply the client gave up on) end now, closing their
            # connections, so no transport is left for the garbage collector to warn about later
            loop.set_exception_handler(_quiet_about_cancelled)
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            for writer in list(self._connections):  # any that a handler registered meanwhile
                writer.transport.abort()
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

    async def serve_forever(self) -> None:
        """Serve on the running loop until cancelled (the process mode)."""
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        async with self._server:
            await self._server.serve_forever()

    # -- HTTP/1.1 ------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle_timeout_s)
                except (
                    asyncio.IncompleteReadError,
                    asyncio.LimitOverrunError,
                    ConnectionError,
                    TimeoutError,
                ):
                    return
                request_line, *lines = head[:-4].split(b"\r\n")
                method, _, rest = request_line.partition(b" ")
                target = rest.partition(b" ")[0]
                headers: dict[bytes, bytes] = {}
                for line in lines:
                    name, _, value = line.partition(b":")
                    headers[name.strip().lower()] = value.strip()
                if headers.get(b"expect", b"").lower() == b"100-continue":
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                try:
                    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
                        body = await _read_chunked(reader)
                    else:
                        body = await reader.readexactly(int(headers.get(b"content-length", b"0")))
                except (asyncio.IncompleteReadError, ConnectionError, ValueError):
                    return
                keep_alive = headers.get(b"connection", b"").lower() != b"close"
                if method == b"POST" and target.split(b"?")[0] in (EMBEDDINGS_PATH, b"/embeddings"):
                    done = await self._embeddings(headers, body, writer)
                    if not done:
                        return
                elif method == b"GET" and target == STATS_PATH:
                    _write(writer, _Reply(200, self._stats_json()))
                else:
                    reply = _error(
                        404, f"Invalid URL ({method.decode()} {target.decode()})", "invalid_request_error"
                    )
                    _write(writer, reply)
                if not keep_alive:
                    return
                await writer.drain()
        finally:
            self._connections.discard(writer)
            writer.close()

    async def _embeddings(
        self, headers: dict[bytes, bytes], body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one embeddings request; False when the connection must close (a scripted drop)."""
        stats = self.stats
        stats.requests += 1
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        fault = self._faults.popleft() if self._faults else None
        try:
            over_quota = self.quota is not None and stats.in_flight > self.quota
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if fault is not None and fault.kind == "slow":
                await asyncio.sleep(fault.delay_s)
            if fault is not None and fault.kind == "drop":
                stats.log.append((time.monotonic(), -1, 0))
                writer.transport.abort()
                return False
            n_inputs, reply = self._answer(headers, body, fault, over_quota)
            if self.accept_delay_s and reply.status == 200:
                await asyncio.sleep(self.accept_delay_s)
            if self.echo_key and reply.status >= 400:
                reply = _echoed(reply, headers.get(b"authorization", b"").decode("latin-1")[7:])
        finally:
            stats.in_flight -= 1
        stats.statuses[reply.status] += 1
        stats.log.append((time.monotonic(), n_inputs, reply.status))
        if fault is not None and fault.kind == "cut":
            data = _encode(reply)
            writer.write(data[: max(1, len(data) // 2)])
            await writer.drain()
            writer.transport.abort()
            return False
        _write(writer, reply)
        return True

    def _answer(
        self, headers: dict[bytes, bytes], body: bytes, fault: Fault | None, over_quota: bool
    ) -> tuple[int, _Reply]:
        auth = headers.get(b"authorization", b"").decode("latin-1")
        self.stats.auth_headers.add(auth)
        if self.api_key is not None:
            given = auth[7:] if auth.startswith("Bearer ") else ""
            if not given:
                return 0, _error(
                    401,
                    "You didn't provide an API key. You need to provide your API key in an Authorization "
                    "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                    "invalid_request_error",
                )
            if given != self.api_key:
                shown = given if self.echo_key else _masked(given)
                return 0, _error(
                    401,
                    f"Incorrect API key provided: {shown}. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.",
                    "invalid_request_error",
                    code="invalid_api_key",
                )
        if fault is not None and fault.kind == "status":
            return 0, self._fault_reply(fault)
        if self.out_of_quota:
            return 0, _error(
                429,
                "You exceeded your current quota, please check your plan and billing details. For more "
                "information on this error, read the docs: "
                "https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "insufficient_quota",
                code="insufficient_quota",
            )
        now = time.monotonic()
        if self._first_request is None:
            self._first_request = now
        left = self.throttle_s - (now - self._first_request)
        if left > 0:
            message = f"Rate limit reached for requests. Please try again in {left:.3f}s."
            headers = _hint_headers(self.throttle_hint, f"{left:.3f}")
            return 0, _error(429, message, "requests", code="rate_limit_exceeded", **headers)
        if over_quota:
            return 0, _error(
                429,
                "Rate limit reached for requests. Please try again shortly.",
                "requests",
                code="rate_limit_exceeded",
                retry_after=f"{self.quota_retry_after_s:g}",
            )
        try:
            return self._embed(body, short=fault is not None and fault.kind == "short")
        except _BadRequest as exc:
            return 0, _error(400, str(exc), "invalid_request_error", param=exc.param)

    def _fault_reply(self, fault: Fault) -> _Reply:
        extra = {"retry_after": fault.retry_after} if fault.retry_after is not None else {}
        if fault.status == 429:
            extra = _hint_headers(fault.hint, fault.retry_after)
            message = "Rate limit reached for requests. Please try again in a moment."
            return _error(429, message, "requests", code="rate_limit_exceeded", **extra)
        if fault.status >= 500:
            message = "The server had an error while processing your request. Sorry about that!"
            return _error(fault.status, message, "server_error", **extra)
        return _error(fault.status, f"scripted HTTP {fault.status}", "invalid_request_error", **extra)

    def _embed(self, body: bytes, *, short: bool = False) -> tuple[int, _Reply]:
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise _BadRequest("We could not parse the JSON body of your request.") from None
        if not isinstance(doc, dict):
            raise _BadRequest("We could not parse the JSON body of your request.")
        unknown = sorted(set(doc) - BODY_FIELDS)
        if unknown:
            raise _BadRequest(f"Unrecognized request argument supplied: {unknown[0]}")
        model = doc.get("model")
        if not isinstance(model, str):
            raise _BadRequest("you must provide a model parameter", "model")
        if model not in self.models:
            return 0, _error(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error",
                code="model_not_found",
            )
        texts = doc.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            raise _BadRequest(
                "'$.input' is invalid. Please check the API reference: "
                "https://platform.openai.com/docs/api-reference.",
                "input",
            )
        self.stats.inputs += len(texts)
        if len(texts) > self.max_inputs:
            raise _BadRequest(f"Too many inputs. The max number of inputs is {self.max_inputs}.", "input")
        encoding = doc.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            raise _BadRequest(
                f"Invalid value for 'encoding_format': {encoding!r}. Supported values are: 'float' and 'base64'.",
                "encoding_format",
            )
        if encoding == "base64" and self.base64 == "refuse":
            raise _BadRequest("encoding_format 'base64' is not supported by this server.", "encoding_format")
        self.stats.formats[encoding] += 1
        native = self.models[model]
        if "dimensions" in doc and model in FIXED_DIMENSIONS:
            raise _BadRequest("This model does not support specifying dimensions.", "dimensions")
        dim = doc.get("dimensions", native)
        if not isinstance(dim, int) or isinstance(dim, bool) or not 1 <= dim <= native:
            raise _BadRequest(
                f"Invalid value for 'dimensions' = {dim}. Must be between 1 and {native}.", "dimensions"
            )
        tokens = [tokens_of(text) for text in texts]
        over = [i for i, count in enumerate(tokens) if count > self.context_tokens]
        if over:
            requested = sum(tokens)
            message = context_error_message(self.context_tokens, requested)
            if self.name_index:
                message = f"Invalid 'input[{over[0]}]': {message}"
            raise _BadRequest(message, None)
        if sum(tokens) > self.max_request_tokens:
            raise _BadRequest(
                f"Requested {sum(tokens)} tokens, max {self.max_request_tokens} tokens per request", "input"
            )
        vectors = vectors_for(texts, dim, model)
        self.stats.embedded += len(texts)
        usage = b'"usage":{"prompt_tokens":%d,"total_tokens":%d}' % (sum(tokens), sum(tokens))
        head = b'{"object":"list","data":['
        tail = b'],"model":"%s",%s}' % (model.encode(), usage)
        if encoding == "base64" and self.base64 == "yes":
            items = [
                b'{"object":"embedding","index":%d,"embedding":"%s"}'
                % (i, binascii.b2a_base64(row.tobytes(), newline=False))
                for i, row in enumerate(vectors)
            ]
        else:
            items = [
                b'{"object":"embedding","index":%d,"embedding":%s}'
                % (i, orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY))
                for i, row in enumerate(vectors)
            ]
        for i, text in enumerate(texts):
            if text in self.null_for:
                items[i] = b'{"object":"embedding","index":%d,"embedding":null}' % i
        if self.shuffle:
            items.reverse()
        if short:
            items.pop()
        return len(texts), _Reply(200, head + b",".join(items) + tail)

    def _stats_json(self) -> bytes:
        usage = os.times()
        stats = self.stats
        return orjson.dumps(
            {
                "requests": stats.requests,
                "inputs": stats.inputs,
                "embedded": stats.embedded,
                "peak_in_flight": stats.peak_in_flight,
                "statuses": {str(k): v for k, v in stats.statuses.items()},
                "cpu_s": usage.user + usage.system,
            }
        )


def _hint_headers(hint: ThrottleHint, seconds: str | None) -> dict[str, str]:
    """The headers of a 429 that says ``seconds`` (a number) as ``hint`` says: ``Retry-After``, Azure's
    ``retry-after-ms``, OpenAI's reset headers (``"1.5s"``, with nothing remaining), or none."""
    if seconds is None or hint == "none":
        return {}
    if hint == "retry-after":
        return {"retry_after": seconds}
    if hint == "retry-after-ms":
        return {"retry_after_ms": f"{float(seconds) * 1000:.0f}"}
    return {
        "x_ratelimit_remaining_requests": "0",
        "x_ratelimit_reset_requests": f"{float(seconds):g}s",
        "x_ratelimit_remaining_tokens": "0",
        "x_ratelimit_reset_tokens": f"{float(seconds):g}s",
    }


def _masked(key: str) -> str:
    """OpenAI's way of quoting a wrong key: its first 3 characters and last 4."""
    return key[:3] + "*" * max(0, len(key) - 7) + key[-4:] if len(key) > 8 else "*" * len(key)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _encode(reply: _Reply) -> bytes:
    lines = [b"HTTP/1.1 %d %s" % (reply.status, _REASONS.get(reply.status, "Error").encode())]
    lines.append(b"content-type: application/json")
    lines.append(b"content-length: %d" % len(reply.body))
    lines.extend(f"{name}: {value}".encode("latin-1") for name, value in reply.headers)
    return b"\r\n".join(lines) + b"\r\n\r\n" + reply.body


def _write(writer: asyncio.StreamWriter, reply: _Reply) -> None:
    writer.write(_encode(reply))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=0.0, help="latency added to every request")
    parser.add_argument("--api-key", default=DEFAULT_KEY)
    parser.add_argument("--context-tokens", type=int, default=512)
    args = parser.parse_args(argv)
    server = EmbeddingsServer(
        port=args.port,
        api_key=args.api_key or None,
        delay_s=args.delay_ms / 1000,
        context_tokens=args.context_tokens,
    )

    async def run() -> None:
        task = asyncio.ensure_future(server.serve_forever())
        while server._server is None or not server._server.is_serving():
            await asyncio.sleep(0.01)
        print(f"PORT {server.port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        task.cancel()

    try:
        import uvloop  # a faster loop when installed; the server does not need it

        uvloop.run(run())
    except ImportError:
        asyncio.run(run())
    sys.exit(0)


if __name__ == "__main__":
    main()
