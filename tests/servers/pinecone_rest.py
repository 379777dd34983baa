"""A Pinecone-protocol REST test server: ``POST /vectors/upsert`` with a fault script and a control API.

The body is Pinecone's: ``{"vectors": [{"id", "values", "sparseValues": {"indices", "values"},
"metadata"}], "namespace"}``, decoded with orjson; values are kept as the float32 of the JSON
numbers, so tests compare them byte for byte. The reply is ``{"upsertedCount": n}``; errors
are ``{"code", "message", "details"}`` with Pinecone's statuses: 400 rejected, 401 bad key,
429 throttled (with ``Retry-After``), 503 unavailable; a dropped request gets its socket closed
without a reply. HTTP/1.1 keep-alive, a thread per connection, ``Content-Length`` on every reply.
Requests are judged by Pinecone's limits (``pinecone_rules``, through ``script.serve_upsert``; the rule
on dense values through ``with_value_rules``).
``POST /describe_index_stats`` and ``POST /vectors/delete`` (1 to 1,000 ids, or ``deleteAll``, in a
namespace, each as ``pinecone_rules`` allows; 400 otherwise; 404 for a namespace that holds nothing, as
Pinecone answers) work on the same stored vectors.

The control API (``/_control/...``) lets a test in another process read what arrived and
set the script; the gRPC server runs the same HTTP server beside it with upserts switched off:

    GET  /_control/arrived   msgpack of ``Arrived``        POST /_control/script  JSON ``FaultScript``
    GET  /_control/script    JSON of the current script    POST /_control/reset   forget everything
    GET  /_control/health    "ok"

``python -m tests.servers.pinecone_rest --port 0`` prints ``PORT <n>`` and ``CONTROL <n>`` on
stdout, then serves until SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import msgspec
import numpy as np
import orjson

from . import pinecone_rules as rules
from .script import (
    ECHO_HEADER,
    MAX_DELETE_IDS,
    ArrivedVector,
    Decoded,
    ServerState,
    Verdict,
    decode_script,
    echoed,
    encode_arrived,
    encode_script,
    serve_upsert,
)
from .threaded_http import JsonHandler, ThreadedServer, TrackingHTTPServer

__all__ = [
    "PineconeRestServer",
    "count_rest",
    "decode_rest",
    "delete_problem",
    "main",
    "serve_until_signal",
    "with_value_rules",
]

UPSERT_PATH = "/vectors/upsert"
STATS_PATH = "/describe_index_stats"
DELETE_PATH = "/vectors/delete"
CONTROL_PREFIX = "/_control/"

# Pinecone's error bodies carry the gRPC code number beside the HTTP status.
_STATUS: dict[str, tuple[int, int]] = {
    "rejected": (400, 3),
    "unauthenticated": (401, 16),
    "throttled": (429, 8),
    "over_quota": (429, 8),
    "unavailable": (503, 14),
}


def decode_rest(body: bytes) -> Decoded:
    """Pinecone's upsert JSON as ``Decoded``; ``ValueError`` names what is malformed."""
    doc = orjson.loads(body)  # orjson.JSONDecodeError is a ValueError
    if not isinstance(doc, dict) or not isinstance(doc.get("vectors"), list):
        raise ValueError("the body needs a list 'vectors'")
    namespace = doc.get("namespace", "")
    if not isinstance(namespace, str):
        raise ValueError("'namespace' must be a string")
    problem = rules.namespace_problem(namespace)
    if problem is not None:
        raise ValueError(problem)
    return Decoded(namespace, [_decode_vector(i, item) for i, item in enumerate(doc["vectors"])])


def _decode_vector(i: int, item: Any) -> ArrivedVector:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):  # empty: pinecone_rules judges it
        raise ValueError(f"vectors[{i}] needs a string 'id'")
    sparse = item.get("sparseValues")
    indices = sparse_values = None
    if sparse is not None:
        if not isinstance(sparse, dict):
            raise ValueError(f"vectors[{i}].sparseValues must be an object")
        indices = _numbers(sparse.get("indices", []), f"vectors[{i}].sparseValues.indices", "<u4").tolist()
        sparse_values = _numbers(
            sparse.get("values", []), f"vectors[{i}].sparseValues.values", "<f4"
        ).tobytes()
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(f"vectors[{i}].metadata must be an object")
    return ArrivedVector(
        id=item["id"],
        values_f32=_numbers(item.get("values", []), f"vectors[{i}].values", "<f4").tobytes(),
        sparse_indices=indices,
        sparse_values_f32=sparse_values,
        metadata=metadata,
    )


def _numbers(value: Any, where: str, dtype: str) -> np.ndarray:
    # no dtype first: numpy would quietly parse strings such as "1.5" into numbers
    array = np.asarray(value)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "fiu"):
        raise ValueError(f"{where} must be a list of numbers")
    return array.astype(dtype)


def with_value_rules(
    decode: Callable[[bytes], Decoded], index: rules.IndexType | None = None
) -> Callable[[bytes], Decoded]:
    """``decode``, then Pinecone's rules on dense values, which ``script.rejection_message`` does not read:
    none all zero (``pinecone_rules.zero_problem``, whose message names the row, as Pinecone's does) and,
    with an ``index`` type, what it refuses (``pinecone_rules.index_problem``). A refusal is 400 /
    ``INVALID_ARGUMENT``, the message after ``serve_upsert``'s "Invalid request: "."""

    def decode_judged(body: bytes) -> Decoded:
        decoded = decode(body)
        for v in decoded.vectors:
            problem = rules.index_problem(index, len(v.values_f32) // 4) or rules.zero_problem(
                v.id, v.values_f32
            )
            if problem is not None:
                raise ValueError(problem)
        return decoded

    return decode_judged


def delete_problem(namespace: str, ids: list[str]) -> str | None:
    """Why Pinecone refuses a delete whole: a namespace or an id it refuses anywhere (``pinecone_rules``)."""
    return rules.namespace_problem(namespace) or next(filter(None, map(rules.id_problem, ids)), None)


def count_rest(body: bytes) -> int:
    """The noop count: one ``"id"`` key per vector (metadata keys named "id" count too)."""
    return body.count(b'"id"')


class _Handler(JsonHandler):
    server_version = "pinecone-test"
    server: _Server

    def do_POST(self) -> None:
        body = self._read_body()
        path = self.path.partition("?")[0]
        if path == UPSERT_PATH and self.server.upserts:
            self._upsert(body)
        elif path == STATS_PATH and self.server.upserts:
            self._stats()
        elif path == DELETE_PATH and self.server.upserts:
            self._delete(body)
        elif path.startswith(CONTROL_PREFIX):
            self._control("POST", path[len(CONTROL_PREFIX) :], body)
        else:
            self._reply(404, b"not found", "text/plain")

    def do_GET(self) -> None:
        self._read_body()
        path = self.path.partition("?")[0]
        if path.startswith(CONTROL_PREFIX):
            self._control("GET", path[len(CONTROL_PREFIX) :], b"")
        else:
            self._reply(404, b"not found", "text/plain")

    def _read_body(self) -> bytes:
        # read the whole body whatever the route: leftovers would be parsed as the next request
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _read_chunked(self) -> bytes:
        parts = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline()

    def _upsert(self, body: bytes) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        verdict = serve_upsert(
            self.server.state,
            body,
            headers=headers,
            api_key=headers.get("api-key"),
            decode=self.server.decode,
            count=count_rest,
        )
        if verdict.outcome == "dropped":
            self._drop()
        elif verdict.outcome == "ok":
            self._reply(200, orjson.dumps({"upsertedCount": verdict.upserted}))
        else:
            self._error(verdict)

    def _stats(self) -> None:
        fault, counts, dimension = self.server.state.describe(self.headers.get("Api-Key"))
        if fault is not None:
            self._unauthenticated()
            return
        namespaces = {ns: {"vectorCount": n} for ns, n in counts.items()}
        body: dict[str, object] = {
            "namespaces": namespaces,
            "dimension": dimension,
            "indexFullness": 0.0,
            "totalVectorCount": sum(counts.values()),
        }
        index = self.server.index
        if index is not None:  # a learning server reports no type: it has none until its first row
            body |= {
                "dimension": index.reported_dimension,
                "metric": index.metric,
                "vectorType": index.vector_type,
            }
        self._reply(200, orjson.dumps(body))

    def _delete(self, body: bytes) -> None:
        request = orjson.loads(body or b"{}")
        problem = delete_problem(request.get("namespace") or "", list(request.get("ids") or []))
        if problem is not None:
            self._reply(
                400, orjson.dumps({"code": 3, "message": f"Invalid request: {problem}", "details": []})
            )
            return
        outcome = self.server.state.delete(
            self.headers.get("Api-Key"),
            request.get("namespace") or "",
            delete_all=bool(request.get("deleteAll")),
            ids=list(request.get("ids") or []),
        )
        if outcome == "unauthenticated":
            self._unauthenticated()
        elif outcome == "not_found":
            self._reply(404, orjson.dumps({"code": 5, "message": "Namespace not found", "details": []}))
        elif outcome == "invalid":
            message = f"Invalid request: ids must hold 1 to {MAX_DELETE_IDS} ids (or deleteAll alone)"
            self._reply(400, orjson.dumps({"code": 3, "message": message, "details": []}))
        else:
            self._reply(200, b"{}")

    def _unauthenticated(self) -> None:
        message = "Invalid API key"
        if self.server.state.script.echo_key:
            message = echoed(message, self.headers.get("Api-Key"))
        body = orjson.dumps({"code": 16, "message": message, "details": []})
        self._reply(401, body, extra=self._echo_header())

    def _echo_header(self) -> dict[str, str]:
        """With the script's ``echo_key``, the request's key in a reply header."""
        return {ECHO_HEADER: self.headers.get("Api-Key") or ""} if self.server.state.script.echo_key else {}

    def _error(self, verdict: Verdict) -> None:
        status, code = _STATUS[verdict.outcome]
        extra = self._echo_header()  # serve_upsert has put the key in the message
        if status == 429:
            extra["Retry-After"] = format(verdict.retry_after_s, "g")
        body = orjson.dumps({"code": code, "message": verdict.message, "details": []})
        self._reply(status, body, extra=extra)

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _control(self, verb: str, name: str, body: bytes) -> None:
        state = self.server.state
        if verb == "GET" and name == "arrived":
            self._reply(200, encode_arrived(state.snapshot()), "application/msgpack")
        elif verb == "GET" and name == "script":
            self._reply(200, encode_script(state.script))
        elif verb == "GET" and name == "health":
            self._reply(200, b"ok", "text/plain")
        elif verb == "POST" and name == "script":
            try:
                state.set_script(decode_script(body or b"{}"))
            except msgspec.DecodeError as exc:
                self._reply(400, str(exc).encode(), "text/plain")
                return
            self._reply(200, encode_script(state.script))
        elif verb == "POST" and name == "reset":
            state.reset()
            self._reply(200, b"{}")
        else:
            self._reply(404, b"no such control endpoint", "text/plain")


class _Server(TrackingHTTPServer):
    def __init__(self, port: int, state: ServerState, upserts: bool, index: rules.IndexType | None) -> None:
        self.state = state
        self.upserts = upserts
        self.index = index
        self.decode = with_value_rules(decode_rest, index)
        super().__init__(port, _Handler)


class PineconeRestServer(ThreadedServer):
    """The REST server in a daemon thread on 127.0.0.1; ``upserts=False`` serves the control API only.
    ``index``: the index's type, fixed from the start (``pinecone_rules.IndexType``); none: the dimension
    is learnt from the first dense row, and a fresh server reports none."""

    def __init__(
        self,
        port: int = 0,
        state: ServerState | None = None,
        *,
        upserts: bool = True,
        index: rules.IndexType | None = None,
    ) -> None:
        self.state = state or ServerState()
        super().__init__(_Server(port, self.state, upserts, index), "rest")


def serve_until_signal(port: int, control_port: int) -> None:
    """Announce the ports on stdout (the parent reads them) and block until SIGTERM or SIGINT."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"PORT {port}", flush=True)
    print(f"CONTROL {control_port}", flush=True)
    while not stop.wait(0.5):
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    rules.add_index_arguments(parser)
    args = parser.parse_args(argv)
    with PineconeRestServer(args.port, index=rules.index_of(args)) as server:
        serve_until_signal(server.port, server.port)


if __name__ == "__main__":
    main()
