"""Qdrant upsert throughput, side by side: this client vs the official qdrant-client, over gRPC and REST.

``python -m jobs.bench.qdrant_vs_official [--n 20000] [--dim 768] [--batch 256] [--reps 2]`` writes N
random float32 vectors (fixed seed, integer ids, no payload) into a no-op Qdrant-protocol sink that runs
in its own process (``python -m jobs.bench.qdrant_vs_official sink``: gRPC ``/qdrant.Points/Upsert`` and
REST ``PUT /collections/{c}/points``, counting points by framing only, so its CPU never competes with
the client's GIL; deletes too, ``/qdrant.Points/Delete`` and ``POST /collections/{c}/points/delete``, their ids
counted and answered as Qdrant answers an applied operation, for ``jobs.bench.deletes``). Contenders,
each on both transports:

- ``connector``: ``connect("qdrant+grpc://…" or "qdrant://…", batch_size, max_concurrency)`` and
  ``client.upsert(table)`` of a ``pyarrow.Table`` (``id`` int64, ``values`` list<float32>), at
  ``max_concurrency`` 1 (one request at a time, as the official client sends) and 4 (the default);
  over REST its vectors are written by the native speedups where they are installed;
- ``connector-py`` (REST only): the same with the native JSON writer switched off (orjson formats the
  floats; the same bytes on the wire);
- ``official-upsert``: ``QdrantClient.upsert(collection, models.Batch(ids, vectors))`` per batch, the
  vectors given as lists (``matrix[a:b].tolist()``, timed: it is what the client needs);
- ``official-upload``: ``QdrantClient.upload_points`` of ``PointStruct``s built from the matrix (timed),
  ``batch_size``, ``parallel=1`` (its default; more starts worker processes).

Only the write is timed (``perf_counter``), with the client process's CPU seconds (``process_time``),
reported per vector; each cell is the best of ``--reps``, repetitions interleaved. Every run is checked:
the sink's count of points received must equal N. Output: a table and one JSON line per cell, then
the ratios (ours at concurrency 4 ÷ the official client's best, per transport; target ≥ 2).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from vectordb.connector.protowire import read_fields as _read_fields
from vectordb.connector.protowire import read_varint as _varint

from ..processes import stop_process
from .machine import code_version
from .native import python_json

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = "bench"
# PointsOperationResponse{result=1 UpdateResult{operation_id=1: 1, status=2: Completed}}
GRPC_REPLY = b"\x0a\x04\x08\x01\x10\x02"
REST_REPLY = b'{"result":{"operation_id":1,"status":"completed"},"status":"ok","time":0.0}'
ROOT_REPLY = b'{"title":"qdrant - vector search engine","version":"1.20.0"}'


# -- the sink (its own process) -------------------------------------------------------------------------


class _Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = self.points = self.bytes = 0
        self.delete_requests = self.deleted = 0

    def add(self, points: int, nbytes: int) -> None:
        with self.lock:
            self.requests += 1
            self.points += points
            self.bytes += nbytes

    def delete(self, ids: int) -> None:
        with self.lock:
            self.delete_requests += 1
            self.deleted += ids


def _grpc_points(body: bytes) -> int:
    """Top-level ``points`` fields (3) of an ``UpsertPoints``, framed, not decoded."""
    count = pos = 0
    end = len(body)
    while pos < end:
        key, pos = _varint(body, pos)
        kind = key & 7
        if kind == 0:
            _, pos = _varint(body, pos)
        elif kind == 2:
            size, pos = _varint(body, pos)
            pos += size
        elif kind == 1:
            pos += 8
        elif kind == 5:
            pos += 4
        count += key >> 3 == 3
    return count


def _grpc_delete_ids(body: bytes) -> int:
    """Point ids a ``DeletePoints`` names: ``points=3 PointsSelector{points=1 PointsIdsList{ids=1}}``, or
    its ``filter=2 Filter{must=2 Condition{has_id=3 HasIdCondition{has_id=1}}}`` (the ids in a
    namespace); 0 for a filter without ids (every point it matches, which the sink cannot count)."""

    def fields(buf: memoryview, wanted: int) -> Iterator[memoryview]:
        for number, kind, value in _read_fields(buf):
            if number == wanted and kind == 2:
                yield value

    count = 0
    for selector in fields(memoryview(body), 3):
        for listed in fields(selector, 1):
            count += sum(1 for _ in fields(listed, 1))
        for where in fields(selector, 2):
            for condition in fields(where, 2):
                for has_id in fields(condition, 3):
                    count += sum(1 for _ in fields(has_id, 1))
    return count


def _rest_delete_ids(body: bytes) -> int:
    """Point ids a ``POST …/points/delete`` names: ``{"points": [...]}``, or ``has_id`` in its filter."""
    doc = orjson.loads(body or b"{}")
    if isinstance(doc.get("points"), list):
        return len(doc["points"])
    must = (doc.get("filter") or {}).get("must") or []
    return sum(len(c["has_id"]) for c in must if isinstance(c, dict) and "has_id" in c)


def _rest_points(body: bytes) -> int:
    """Points in a ``PointsBatch`` (commas in ``ids``) or a ``PointsList`` (``"id"`` keys)."""
    start = body.find(b'"ids":[')
    if start >= 0:
        end = body.index(b"]", start)
        return body.count(b",", start, end) + 1 if end > start + 7 else 0
    return body.count(b'"id"')


class _RestSink(asyncio.Protocol):
    """HTTP/1.1 keep-alive, Content-Length bodies only (what httpx sends), answered at once."""

    def __init__(self, counts: _Counts, collection: bytes) -> None:
        self.counts = counts
        self.collection = collection
        self.buffer = bytearray()
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = bytes(self.buffer[:head_end]).decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self.buffer) < head_end + 4 + length:
                return
            body = bytes(self.buffer[head_end + 4 : head_end + 4 + length])
            del self.buffer[: head_end + 4 + length]
            verb, path = head.split(" ", 2)[:2]
            if verb == "PUT" and path.split("?")[0].endswith("/points"):
                self.counts.add(_rest_points(body), len(body))
                self._reply(REST_REPLY)
            elif verb == "POST" and path.split("?")[0].endswith("/points/delete"):
                self.counts.delete(_rest_delete_ids(body))
                self._reply(REST_REPLY)
            elif path == "/_stats":
                c = self.counts
                found = {"requests": c.requests, "points": c.points, "bytes": c.bytes}
                found |= {"delete_requests": c.delete_requests, "deleted": c.deleted}
                self._reply(json.dumps(found).encode())
            elif path.startswith("/collections/"):
                self._reply(self.collection)
            else:
                self._reply(ROOT_REPLY)

    def _reply(self, body: bytes) -> None:
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body)
        )


def _collection_grpc(dim: int) -> bytes:
    """GetCollectionInfoResponse{result=1 {config=7 {params=1 {vectors_config=5 {params=1 {size=1, distance=2: Dot}}}}}}."""

    def msg(field: int, body: bytes) -> bytes:
        return bytes([field << 3 | 2]) + _encode_varint(len(body)) + body

    params = b"\x08" + _encode_varint(dim) + b"\x10\x03"
    return msg(1, msg(7, msg(1, msg(5, msg(1, params)))))


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def serve_sink(dim: int) -> None:
    import grpc

    counts = _Counts()
    collection_grpc = _collection_grpc(dim)
    collection_rest = json.dumps(
        {"result": {"config": {"params": {"vectors": {"size": dim, "distance": "Dot"}}}}, "status": "ok"}
    ).encode()

    def upsert(body: bytes, context: Any) -> bytes:
        counts.add(_grpc_points(body), len(body))
        return GRPC_REPLY

    def delete(body: bytes, context: Any) -> bytes:
        counts.delete(_grpc_delete_ids(body))
        return GRPC_REPLY  # PointsOperationResponse, as for an upsert

    server = grpc.server(
        ThreadPoolExecutor(max_workers=16),
        handlers=[
            grpc.method_handlers_generic_handler(
                "qdrant.Points",
                {
                    "Upsert": grpc.unary_unary_rpc_method_handler(upsert),
                    "Delete": grpc.unary_unary_rpc_method_handler(delete),
                },
            ),
            grpc.method_handlers_generic_handler(
                "qdrant.Collections",
                {"Get": grpc.unary_unary_rpc_method_handler(lambda body, context: collection_grpc)},
            ),
        ],
        options=[("grpc.max_receive_message_length", 256 << 20)],
    )
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    loop = asyncio.new_event_loop()
    rest = loop.run_until_complete(
        loop.create_server(lambda: _RestSink(counts, collection_rest), "127.0.0.1", 0)
    )
    print(f"REST {rest.sockets[0].getsockname()[1]}", flush=True)
    print(f"GRPC {grpc_port}", flush=True)
    loop.run_forever()


# -- the benchmark ----------------------------------------------------------------------------------------


class Sink:
    def __init__(self, dim: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jobs.bench.qdrant_vs_official", "sink", "--dim", str(dim)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        ports = {}
        for line in self.process.stdout or ():
            name, _, value = line.strip().partition(" ")
            ports[name] = int(value)
            if len(ports) == 2:
                break
        self.rest_port, self.grpc_port = ports["REST"], ports["GRPC"]

    def points(self) -> int:
        return int(self.stats()["points"])

    def deleted(self) -> int:
        """Point ids named by the deletes answered so far."""
        return int(self.stats()["deleted"])

    def stats(self) -> dict[str, int]:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port}/_stats", timeout=10) as reply:
            return dict(json.loads(reply.read()))

    def close(self) -> None:
        stop_process(self.process)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _official(sink: Sink, grpc: bool) -> Any:
    from qdrant_client import QdrantClient

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return QdrantClient(
            host="127.0.0.1",
            port=sink.rest_port,
            grpc_port=sink.grpc_port,
            prefer_grpc=grpc,
            https=False,
            check_compatibility=False,
            timeout=60,
        )


def contenders(sink: Sink, matrix: np.ndarray, batch: int) -> dict[str, Callable[[], None]]:
    import pyarrow as pa
    from qdrant_client import models

    from vectordb.connector import connect

    n, dim = matrix.shape
    ids = list(range(n))
    table = pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "values": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), dim).cast(
                pa.list_(pa.float32())
            ),
        }
    )
    out: dict[str, Callable[[], None]] = {}
    for transport in ("grpc", "rest"):
        port = sink.grpc_port if transport == "grpc" else sink.rest_port
        scheme = "qdrant+grpc" if transport == "grpc" else "qdrant"
        for concurrency in (1, 4):
            client = connect(
                f"{scheme}://127.0.0.1:{port}/{COLLECTION}",
                batch_size=batch,
                max_concurrency=concurrency,
                dimension=dim,
            )

            def run_connector(client: Any = client) -> None:
                report = client.upsert(table)
                assert report.written == n, report

            def run_python_json(client: Any = client) -> None:
                with python_json():
                    run_connector(client)

            out[f"connector-c{concurrency}/{transport}"] = run_connector
            if transport == "rest":
                out[f"connector-py-c{concurrency}/{transport}"] = run_python_json
        official = _official(sink, transport == "grpc")

        def run_upsert(official: Any = official) -> None:
            for start in range(0, n, batch):
                chunk = matrix[start : start + batch]
                official.upsert(
                    COLLECTION,
                    points=models.Batch(ids=ids[start : start + batch], vectors=chunk.tolist()),
                    wait=True,
                )

        def run_upload(official: Any = official) -> None:
            points = [models.PointStruct(id=i, vector=matrix[i].tolist()) for i in range(n)]
            official.upload_points(COLLECTION, points=points, batch_size=batch, parallel=1, wait=True)

        out[f"official-upsert/{transport}"] = run_upsert
        out[f"official-upload/{transport}"] = run_upload
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "sink"])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)
    if args.mode == "sink":
        serve_sink(args.dim)
        return
    from vectordb.connector import jsonvec

    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((args.n, args.dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    sink = Sink(args.dim)
    try:
        runs = contenders(sink, matrix, args.batch)
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.reps):
            for name, run in runs.items():
                before = sink.points()
                wall, cpu = time.perf_counter(), time.process_time()
                run()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                arrived = sink.points() - before
                assert arrived == args.n, f"{name}: the sink received {arrived} points, not {args.n}"
                if name not in best or wall < best[name][0]:
                    best[name] = (wall, cpu)
    finally:
        sink.close()
    env = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "qdrant_client": metadata.version("qdrant-client"),
        "native_json": jsonvec.native_encoder(),
        "code": code_version("connector"),
        "load_1m_at_end": round(os.getloadavg()[0], 2),
        "n": args.n,
        "dim": args.dim,
        "batch": args.batch,
    }
    print(f"{'contender':28} {'vectors/s':>12} {'wall s':>8} {'CPU µs/vector':>14}")
    for name, (wall, cpu) in best.items():
        print(f"{name:28} {args.n / wall:12,.0f} {wall:8.2f} {cpu / args.n * 1e6:14.1f}")
    for name, (wall, cpu) in best.items():
        cell = {"bench": "qdrant_vs_official", "contender": name, "vectors_per_s": args.n / wall}
        print(json.dumps({**cell, "wall_s": wall, "cpu_us_per_vector": cpu / args.n * 1e6, "env": env}))
    for transport in ("grpc", "rest"):
        ours = best[f"connector-c4/{transport}"][0]
        theirs = min(best[f"official-upsert/{transport}"][0], best[f"official-upload/{transport}"][0])
        ours_c1 = best[f"connector-c1/{transport}"][0]
        print(
            f"{transport}: connector (concurrency 4) / official best = {theirs / ours:.1f}x "
            f"(concurrency 1: {theirs / ours_c1:.1f}x; target >= 2)"
        )
        if transport == "rest":
            python = best[f"connector-py-c4/{transport}"][0]
            print(
                f"{transport}: without the native JSON writer (concurrency 4) / official best = {theirs / python:.1f}x"
            )


if __name__ == "__main__":
    main()
