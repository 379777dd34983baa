"""No-op Pinecone sinks for benchmarks: gRPC ``/VectorService/Upsert`` and REST ``POST /vectors/upsert``, and deletes.

A sink runs in its own process (``python -m jobs.bench.sinks --kind grpc|rest --port 0
[--delay-ms N]``, which prints ``PORT <n>`` and serves on 127.0.0.1 until SIGTERM), so its
CPU never competes for the GIL of the client being measured. It stores nothing: it counts
requests, body bytes and vectors, and replies with the count (``UpsertResponse{upserted_count}``
or ``{"upsertedCount": n}``). ``--delay-ms`` holds every reply for a fixed time without
holding up other requests, as a cross-region round trip does.

Deletes by id (gRPC ``/VectorService/Delete``, REST ``POST /vectors/delete``) are counted and answered
as Pinecone answers a delete in a namespace that holds vectors: ``DeleteResponse{}`` or ``{}``. As
Pinecone, a request of more than 1,000 ids, or of none without ``delete_all``, is refused
(``INVALID_ARGUMENT``, or 400 with ``{"code": 3, ...}``). The ids are counted, not looked up: the
sink stores nothing, so a benchmark deletes ids it takes as written.

Per request the work is kept small so the sink is never the bottleneck: the gRPC sink
skips over the top-level ``vectors`` fields without decoding them; the REST sink is a bare
asyncio protocol that reads the request line and ``Content-Length`` only and counts the
``{`` in the body (exact for the bodies benchmarks send, which carry no metadata).

Counters are read on the same port, from the benchmark process: REST ``GET /_stats``, gRPC
``/BenchSink/Stats`` (JSON bytes both). ``peak_in_flight`` is the peak since the previous read.
``start_sink(kind, delay_ms)`` starts the process and yields a ``Sink`` for both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from vectordb.connector.protowire import read_varint as _varint

from ..processes import stop_process

__all__ = ["Sink", "SinkStats", "start_sink"]

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parents[2]  # the repository: `python -m jobs.bench.sinks` runs from here
STATS_METHOD = "/BenchSink/Stats"
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
INITIAL_BUFFER_BYTES = 4 * 1024 * 1024  # REST: a whole request body fits, so it is counted in place
READ_BYTES = 256 * 1024
MAX_DELETE_IDS = 1000  # Pinecone's DeleteRequest.ids: "maxLength": 1000
GRPC_WORKERS = 128  # a sleeping handler holds a worker: enough for any concurrency a benchmark uses


@dataclass(frozen=True, slots=True)
class SinkStats:
    """Counters since the sink started; ``peak_in_flight`` since the previous read."""

    requests: int = 0
    bytes: int = 0
    vectors: int = 0
    peak_in_flight: int = 0
    cpu_s: float = 0.0  # CPU seconds of the sink process
    per_second: dict[str, int] = field(default_factory=dict)  # vectors arrived per wall-clock second
    delete_requests: int = 0  # delete requests answered OK
    deleted: int = 0  # ids those requests named

    def __sub__(self, before: SinkStats) -> SinkStats:
        return SinkStats(
            requests=self.requests - before.requests,
            bytes=self.bytes - before.bytes,
            vectors=self.vectors - before.vectors,
            peak_in_flight=self.peak_in_flight,
            cpu_s=self.cpu_s - before.cpu_s,
            per_second={
                k: n - before.per_second.get(k, 0)
                for k, n in self.per_second.items()
                if n != before.per_second.get(k, 0)
            },
            delete_requests=self.delete_requests - before.delete_requests,
            deleted=self.deleted - before.deleted,
        )


class _Counters:
    """Mutable counters behind a lock (the gRPC sink's handlers run on a thread pool)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = self.bytes = self.vectors = 0
        self.in_flight = self.peak = 0
        self.per_second: dict[str, int] = {}  # arrival second (Unix time) → vectors
        self.delete_requests = self.deleted = 0

    def start(self, nbytes: int, vectors: int) -> None:
        second = str(int(time.time()))
        with self._lock:
            self.requests += 1
            self.bytes += nbytes
            self.vectors += vectors
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.per_second[second] = self.per_second.get(second, 0) + vectors

    def delete(self, ids: int) -> None:
        with self._lock:
            self.delete_requests += 1
            self.deleted += ids

    def finish(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def read(self) -> bytes:
        with self._lock:
            stats = SinkStats(
                self.requests,
                self.bytes,
                self.vectors,
                self.peak,
                time.process_time(),
                dict(self.per_second),
                self.delete_requests,
                self.deleted,
            )
            self.peak = self.in_flight
        return json.dumps(asdict(stats)).encode()


# --------------------------------------------------------------------------------------------------
# gRPC


def count_upsert_vectors(body: bytes) -> int:
    """Top-level ``vectors`` (field 1) entries of an ``UpsertRequest``, skipped over, not decoded."""
    count = pos = 0
    end = len(body)
    while pos < end:
        tag = body[pos]
        pos += 1
        size = shift = 0
        while True:  # every top-level field of UpsertRequest is length-delimited
            byte = body[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        pos += size
        count += tag == 0x0A
    return count


def read_delete(body: bytes) -> tuple[int, bool]:
    """``DeleteRequest{ids=1, delete_all=2, namespace=3, filter=4}``: how many ids, and ``delete_all``."""
    ids = pos = 0
    delete_all = False
    end = len(body)
    while pos < end:
        key, pos = _varint(body, pos)
        if key & 7 == 0:
            value, pos = _varint(body, pos)
            delete_all = delete_all or (key >> 3 == 2 and value != 0)
        elif key & 7 == 2:
            size, pos = _varint(body, pos)
            pos += size
            ids += key >> 3 == 1
        else:
            raise ValueError(f"DeleteRequest: wire type {key & 7} at byte {pos}")
    return ids, delete_all


def delete_refusal(ids: int, delete_all: bool) -> str | None:
    """Pinecone's refusal of a delete request (its ``DeleteRequest.ids`` hold at most 1,000), or None."""
    if ids > MAX_DELETE_IDS or (ids == 0) != delete_all:
        return f"Invalid request: ids must hold 1 to {MAX_DELETE_IDS} ids (or delete_all alone)"
    return None


def upsert_reply(count: int) -> bytes:
    """``UpsertResponse{upserted_count=1: count}``."""
    out = bytearray(b"\x08")
    while count > 0x7F:
        out.append((count & 0x7F) | 0x80)
        count >>= 7
    out.append(count)
    return bytes(out)


def serve_grpc(port: int, delay_s: float, stop: threading.Event) -> None:
    import grpc

    counters = _Counters()

    def upsert(body: bytes, context: Any) -> bytes:
        count = count_upsert_vectors(body)
        counters.start(len(body), count)
        try:
            if delay_s:
                time.sleep(delay_s)  # holds only this handler's worker thread
            return upsert_reply(count)
        finally:
            counters.finish()

    def delete(body: bytes, context: Any) -> bytes:
        ids, delete_all = read_delete(body)
        refusal = delete_refusal(ids, delete_all)
        if refusal is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, refusal)
        counters.delete(ids)
        return b""  # DeleteResponse{}

    def stats(body: bytes, context: Any) -> bytes:
        return counters.read()

    options = [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.http2.max_frame_size", 4 * 1024 * 1024),
    ]
    with ThreadPoolExecutor(max_workers=GRPC_WORKERS) as pool:
        server = grpc.server(pool, options=options)
        # no (de)serializers: handlers get and return raw bytes
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    "VectorService",
                    {
                        "Upsert": grpc.unary_unary_rpc_method_handler(upsert),
                        "Delete": grpc.unary_unary_rpc_method_handler(delete),
                        # an index of unknown dimension: the client's pre-write check passes
                        "DescribeIndexStats": grpc.unary_unary_rpc_method_handler(lambda body, context: b""),
                    },
                ),
                grpc.method_handlers_generic_handler(
                    "BenchSink", {"Stats": grpc.unary_unary_rpc_method_handler(stats)}
                ),
            )
        )
        bound = server.add_insecure_port(f"{HOST}:{port}")
        server.start()
        print(f"PORT {bound}", flush=True)
        stop.wait()
        server.stop(grace=1.0).wait()


# --------------------------------------------------------------------------------------------------
# REST


def count_json_vectors(buf: bytearray, start: int, end: int) -> int:
    """Vectors in an upsert body without metadata or sparse values: one ``{`` each, plus the body's own.

    numpy compares 1.7 MB in a quarter of a millisecond; ``bytes.count`` takes four times longer.
    """
    return max(0, int(np.count_nonzero(np.frombuffer(buf, np.uint8, end - start, start) == ord("{"))) - 1)


def _response(status: bytes, body: bytes, close: bool = False) -> bytes:
    head = (
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
    )
    return head + (b"\r\nConnection: close\r\n\r\n" if close else b"\r\n\r\n") + body


class _HttpSink(asyncio.BufferedProtocol):
    """HTTP/1.1 with keep-alive; requests on one connection are answered in order.

    The socket reads straight into one reused buffer per connection and bodies are counted
    in place: fresh multi-megabyte buffers per request would cost more in page faults than
    everything else the sink does.
    """

    def __init__(self, counters: _Counters, delay_s: float) -> None:
        self._counters, self._delay_s = counters, delay_s
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray(INITIAL_BUFFER_BYTES)
        self._start = self._end = 0  # unprocessed bytes are _buf[_start:_end]
        self._body_at = -1  # where the current request's body starts; -1 while reading its head
        self._length = 0
        self._target = b""
        self._close = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        want = max(READ_BYTES, sizehint)
        if self._body_at >= 0:
            want = max(want, self._body_at + self._length - self._end)
        if len(self._buf) - self._end < want:
            self._compact(want)
        return memoryview(self._buf)[self._end :]

    def _compact(self, want: int) -> None:
        """Move the unprocessed bytes to the front, growing the buffer if they still leave too little room."""
        pending = self._end - self._start
        if self._start:
            self._buf[:pending] = self._buf[self._start : self._end]
            if self._body_at >= 0:
                self._body_at -= self._start
            self._start, self._end = 0, pending
        if len(self._buf) - self._end < want:
            self._buf.extend(bytes(want - (len(self._buf) - self._end)))

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        while self._step():
            pass
        if self._start == self._end:
            self._start = self._end = 0

    def _step(self) -> bool:
        """Parse a head or answer a complete request; False when more bytes are needed."""
        if self._body_at < 0:
            head_end = self._buf.find(b"\r\n\r\n", self._start, self._end)
            if head_end < 0:
                return False
            self._read_head(bytes(self._buf[self._start : head_end]))
            self._body_at = head_end + 4
        body_end = self._body_at + self._length
        if body_end > self._end:
            return False
        self._answer(self._body_at, body_end)
        self._start, self._body_at = body_end, -1
        return True

    def _read_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        self._target = b" ".join(lines[0].split(b" ")[:2])
        self._length, self._close = 0, False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                self._length = int(value)
            elif name == b"connection":
                self._close = value.strip().lower() == b"close"
            elif name == b"transfer-encoding":
                self._target = b"CHUNKED"

    def _answer(self, start: int, end: int) -> None:
        if self._target == b"POST /vectors/upsert":
            count = count_json_vectors(self._buf, start, end)
            self._counters.start(end - start, count)
            reply = _response(b"200 OK", b'{"upsertedCount":%d}' % count, self._close)
            if self._delay_s:
                self._loop.call_later(self._delay_s, self._send_upsert_reply, reply)
            else:
                self._send_upsert_reply(reply)
        elif self._target == b"POST /vectors/delete":
            self._delete(memoryview(self._buf)[start:end])
        elif self._target == b"POST /describe_index_stats":  # the client's pre-write check
            self._send(
                _response(b"200 OK", b'{"namespaces":{},"dimension":0,"totalVectorCount":0}', self._close)
            )
        elif self._target.startswith(b"GET /_stats"):
            self._send(_response(b"200 OK", self._counters.read(), self._close))
        elif self._target == b"CHUNKED":
            self._close = True
            self._send(_response(b"411 Length Required", b'{"message": "send Content-Length"}', close=True))
        else:
            self._send(_response(b"404 Not Found", b'{"message": "no such path"}', self._close))

    def _delete(self, body: memoryview) -> None:
        try:
            doc = orjson.loads(body)
            ids = doc.get("ids") or []
            delete_all = bool(doc.get("deleteAll"))
        except (orjson.JSONDecodeError, AttributeError):
            ids, delete_all = None, False
        listed = len(ids) if isinstance(ids, list) else -1
        refusal = (
            "Invalid request: the body is not a JSON object"
            if listed < 0
            else delete_refusal(listed, delete_all)
        )
        if refusal is not None:
            body_out = orjson.dumps({"code": 3, "message": refusal, "details": []})
            self._send(_response(b"400 Bad Request", body_out, self._close))
            return
        self._counters.delete(listed)
        self._send(_response(b"200 OK", b"{}", self._close))

    def _send_upsert_reply(self, reply: bytes) -> None:
        self._counters.finish()
        self._send(reply)

    def _send(self, data: bytes) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        transport.write(data)
        if self._close:
            transport.close()


async def _serve_rest(port: int, delay_s: float) -> None:
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopped.set)
    counters = _Counters()
    server = await loop.create_server(lambda: _HttpSink(counters, delay_s), HOST, port, backlog=256)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await stopped.wait()


def serve_rest(port: int, delay_s: float) -> None:
    asyncio.run(_serve_rest(port, delay_s))


# --------------------------------------------------------------------------------------------------
# the benchmark's side


class Sink:
    """A running sink process: its address and its counters."""

    def __init__(self, kind: str, port: int, delay_ms: float) -> None:
        self.kind, self.port, self.delay_ms = kind, port, delay_ms
        self.address = f"{HOST}:{port}"
        self.url = f"http://{HOST}:{port}"
        self._channel: Any = None

    def __repr__(self) -> str:
        return f"Sink({self.kind} {self.address}, delay {self.delay_ms} ms)"

    def stats(self) -> SinkStats:
        if self.kind == "rest":
            with urllib.request.urlopen(self.url + "/_stats", timeout=10) as reply:
                return SinkStats(**json.loads(reply.read()))
        if self._channel is None:
            import grpc

            self._channel = grpc.insecure_channel(self.address)
        return SinkStats(**json.loads(self._channel.unary_unary(STATS_METHOD)(b"", timeout=10)))

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None


@contextmanager
def start_sink(kind: str, delay_ms: float = 0.0, *, start_timeout_s: float = 30.0) -> Iterator[Sink]:
    """Run a sink process for the block; it is stopped (SIGTERM, then SIGKILL) however the block ends."""
    if kind not in ("grpc", "rest"):
        raise ValueError(f"sink kind {kind!r}: expected 'grpc' or 'rest'")
    command = [
        sys.executable,
        "-m",
        "jobs.bench.sinks",
        "--kind",
        kind,
        "--port",
        "0",
        "--delay-ms",
        str(delay_ms),
    ]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    sink: Sink | None = None
    try:
        sink = Sink(kind, _read_port(proc, start_timeout_s), delay_ms)
        yield sink
    finally:
        if sink is not None:
            sink.close()
        stop_process(proc)
        assert proc.stdout is not None
        proc.stdout.close()


def _read_port(proc: subprocess.Popen[str], timeout_s: float) -> int:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    line = proc.stdout.readline() if ready else ""
    if not line.startswith("PORT "):
        raise RuntimeError(
            f"sink did not start within {timeout_s} s (exit code {proc.poll()}, said {line!r})"
        )
    return int(line.split()[1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jobs.bench.sinks", description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("grpc", "rest"), required=True)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="fixed latency added to every upsert")
    args = parser.parse_args(argv)
    delay_s = max(0.0, args.delay_ms) / 1000
    if args.kind == "rest":
        serve_rest(args.port, delay_s)
        return
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    serve_grpc(args.port, delay_s, stop)


if __name__ == "__main__":
    main()
