"""Milvus upsert throughput into Milvus Lite, side by side: this client and pymilvus ``MilvusClient.upsert``.

``python -m jobs.bench.milvus_upsert [--rows 20000 --dim 768 --batch-size 1000]`` writes N random
float32 vectors (fixed seed, unit length) with string ids into fresh collections made the same
way (pymilvus quick setup: VarChar key, FloatVector, dynamic field, AUTOINDEX COSINE), on two
servers, each its own process:

- ``lite``: Milvus Lite, started by ``vectordb.connector.backends.milvus.lite.ensure_server`` (the embedded
  default users get). Its engine is pure Python, so this measures the server.
- ``noop``: Milvus Lite's own servicer with ``Upsert`` replaced by "count the rows and say OK"
  (control-plane calls stay real, so both clients run unchanged). This measures the clients. Its
  ``Delete`` of ``key in [...]`` (what pymilvus ``delete(ids=...)`` and this connector send) counts the
  keys and answers ``MutationResult{delete_cnt}`` in the collection Milvus Lite knows (an unknown one
  fails as there), storing nothing, like its ``Upsert``; any other expression goes to Milvus Lite's own
  ``Delete``. ``/BenchSink/Stats`` on the same port answers the keys deleted so far (JSON,
  ``{"delete_requests", "deleted"}``; ``noop_deleted(address)`` reads it).

Contenders, same batch size: ``connector`` (``connect("milvus://…", batch_size, max_concurrency)``
and ``client.upsert(table)`` of a ``pyarrow.Table``, at concurrency 1 and 4); ``pymilvus-lists``
(the documented loop: ``client.upsert(name, data=batch)`` with ``{"id", "vector": list}`` dicts,
built before timing) and ``pymilvus-numpy`` (the same with numpy rows). Every client is built
and warmed up before timing; the wall time of the upsert calls and the client process's CPU
seconds are recorded; each run is checked by the server's row count; with ``--reps N`` each
cell is the best of N repetitions, interleaved across contenders. Output: a table, one JSON
line per run (``"bench": "milvus_upsert"``) and the ratios connector ÷ pymilvus per server.
Where ``lite`` is far below ``noop`` for every client, the server is the bound.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .machine import environment

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[2]
CONTENDERS = ("connector-c1", "connector-c4", "pymilvus-lists", "pymilvus-numpy")


@dataclass(frozen=True, slots=True)
class Result:
    server: str
    contender: str
    rows: int
    wall_s: float
    cpu_s: float

    @property
    def vectors_per_s(self) -> float:
        return self.rows / self.wall_s


# --------------------------------------------------------------------------------------------------
# servers


@contextmanager
def lite_server(data_dir: str) -> Iterator[str]:
    from vectordb.connector.backends.milvus import lite as embedded

    address = embedded.ensure_server(data_dir, idle_timeout_s=0)
    try:
        yield address
    finally:
        embedded.stop(data_dir)


@contextmanager
def noop_server(data_dir: str) -> Iterator[str]:
    cmd = [sys.executable, "-m", "jobs.bench.milvus_upsert", "--serve-noop", data_dir]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"no-op server did not start: {line!r}")
        yield f"127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


# the keys of ``key in [...]``: double- or single-quoted strings (escapes included) or integers
_IN_LIST = re.compile(r"^\s*(\w+)\s+in\s*\[(.*)\]\s*$", re.DOTALL)
_KEY = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|-?\d+""")


def expr_keys(expr: str) -> tuple[str, int] | None:
    """``(field, keys)`` of a ``field in [k1, k2, ...]`` expression; None for any other."""
    found = _IN_LIST.match(expr)
    if found is None:
        return None
    return found.group(1), len(_KEY.findall(found.group(2)))


def noop_deleted(address: str) -> int:
    """The keys the no-op servicer at ``address`` has deleted (counted) so far."""
    import grpc

    with grpc.insecure_channel(address) as channel:
        return int(json.loads(channel.unary_unary("/BenchSink/Stats")(b"", timeout=10))["deleted"])


def serve_noop(data_dir: str) -> None:
    """Milvus Lite's servicer, but ``Upsert`` and ``Delete`` by keys only count: real control plane, free
    data plane."""
    from concurrent import futures

    import grpc
    from milvus_lite.adapter.grpc.errors import success_status_kwargs, to_status_kwargs
    from milvus_lite.adapter.grpc.servicer import MilvusServicer
    from milvus_lite.db import MilvusLite
    from milvus_lite.exceptions import MilvusLiteError
    from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc

    lock = threading.Lock()
    deletes = {"delete_requests": 0, "deleted": 0}

    class NoopServicer(MilvusServicer):
        def Upsert(self, request: Any, context: Any) -> Any:
            return milvus_pb2.MutationResult(status=common_pb2.Status(), upsert_cnt=request.num_rows)

        def Delete(self, request: Any, context: Any) -> Any:
            keys = expr_keys(request.expr)
            if keys is None:
                return super().Delete(request, context)
            try:
                self._get_collection(request, context)  # an unknown collection fails as in Milvus Lite
            except MilvusLiteError as exc:
                return milvus_pb2.MutationResult(status=common_pb2.Status(**to_status_kwargs(exc)))
            with lock:
                deletes["delete_requests"] += 1
                deletes["deleted"] += keys[1]
            return milvus_pb2.MutationResult(
                status=common_pb2.Status(**success_status_kwargs()), delete_cnt=keys[1]
            )

    db = MilvusLite(data_dir)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16),
        options=[("grpc.max_receive_message_length", 256 << 20), ("grpc.max_send_message_length", 256 << 20)],
    )
    milvus_pb2_grpc.add_MilvusServiceServicer_to_server(NoopServicer(db), server)

    def stats(body: bytes, context: Any) -> bytes:
        with lock:
            return json.dumps(deletes).encode()

    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "BenchSink", {"Stats": grpc.unary_unary_rpc_method_handler(stats)}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    print(f"PORT {port}", flush=True)
    stopping.wait()
    server.stop(grace=2).wait()
    db.close()


# --------------------------------------------------------------------------------------------------
# contenders


def build_inputs(rows: int, dim: int, seed: int) -> tuple[list[str], np.ndarray, Any]:
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = [f"vec-{i:07d}" for i in range(rows)]
    offsets = pa.array(np.arange(0, (rows + 1) * dim, dim, dtype=np.int32))
    table = pa.table(
        {"id": pa.array(ids), "values": pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))}
    )
    return ids, matrix, table


def run_connector(
    address: str, name: str, table: Any, batch_size: int, concurrency: int
) -> Callable[[], int]:
    from vectordb.connector import connect

    client = connect(f"milvus://{address}/{name}", batch_size=batch_size, max_concurrency=concurrency)
    client.upsert(table.slice(0, 1))  # warm-up: channel, check_target

    def run() -> int:
        try:
            return client.upsert(table).written
        finally:
            client.close()

    return run


def run_pymilvus(address: str, name: str, rows: list[dict[str, Any]], batch_size: int) -> Callable[[], int]:
    from pymilvus import MilvusClient

    client = MilvusClient(uri=f"http://{address}")
    client.upsert(name, data=rows[:1])  # warm-up: channel, schema cache

    def run() -> int:
        try:
            written = 0
            for start in range(0, len(rows), batch_size):
                written += client.upsert(name, data=rows[start : start + batch_size])["upsert_count"]
            return written
        finally:
            client.close()

    return run


def measure(
    server: str, address: str, contender: str, inputs: tuple[list[str], np.ndarray, Any], batch_size: int
) -> Result:
    from pymilvus import MilvusClient

    ids, matrix, table = inputs
    name = f"bench_{contender.replace('-', '_')}_{int(time.time() * 1000) % 10**8}"
    admin = MilvusClient(uri=f"http://{address}")
    admin.create_collection(
        name, dimension=matrix.shape[1], id_type="string", max_length=64, metric_type="COSINE"
    )
    try:
        if contender.startswith("connector"):
            run = run_connector(address, name, table, batch_size, int(contender.rsplit("c", 1)[1]))
        elif contender == "pymilvus-lists":
            run = run_pymilvus(
                address,
                name,
                [{"id": i, "vector": v} for i, v in zip(ids, matrix.tolist(), strict=True)],
                batch_size,
            )
        else:
            run = run_pymilvus(
                address, name, [{"id": i, "vector": matrix[k]} for k, i in enumerate(ids)], batch_size
            )
        wall, cpu = time.perf_counter(), time.process_time()
        written = run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if written != len(ids):
            raise RuntimeError(f"{contender} on {server} wrote {written} of {len(ids)}")
        if server == "lite":
            stored = int(admin.get_collection_stats(name)["row_count"])
            if stored != len(ids):
                raise RuntimeError(f"{contender} on {server}: the server holds {stored} rows, not {len(ids)}")
        return Result(server, contender, len(ids), wall, cpu)
    finally:
        admin.drop_collection(name)
        admin.close()


# --------------------------------------------------------------------------------------------------
# report


def report(results: list[Result], args: argparse.Namespace) -> None:
    env = environment("pymilvus", "milvus-lite", "grpcio", "numpy", "pyarrow")
    print(
        f"\n{args.rows} x {args.dim} float32, batch {args.batch_size}, load {env['load_1m']} on {env['cpus']} cpus"
    )
    print(f"{'server':<6} {'contender':<16} {'vectors/s':>10} {'wall s':>8} {'client cpu s':>13}")
    for r in results:
        print(f"{r.server:<6} {r.contender:<16} {r.vectors_per_s:>10,.0f} {r.wall_s:>8.2f} {r.cpu_s:>13.2f}")
    for r in results:
        line = {
            "bench": "milvus_upsert",
            "server": r.server,
            "contender": r.contender,
            "rows": r.rows,
            "dim": args.dim,
            "batch_size": args.batch_size,
            "vectors_per_s": round(r.vectors_per_s, 1),
            "wall_s": round(r.wall_s, 4),
            "client_cpu_s": round(r.cpu_s, 4),
            "env": env,
        }
        print(json.dumps(line))
    for server in sorted({r.server for r in results}):
        ours = max(
            (r for r in results if r.server == server and r.contender.startswith("connector")),
            key=lambda r: r.vectors_per_s,
            default=None,
        )
        theirs = max(
            (r for r in results if r.server == server and r.contender.startswith("pymilvus")),
            key=lambda r: r.vectors_per_s,
            default=None,
        )
        if ours and theirs:
            print(
                f"ratio {server}: connector {ours.vectors_per_s:,.0f} / pymilvus {theirs.vectors_per_s:,.0f} = "
                f"{ours.vectors_per_s / theirs.vectors_per_s:.2f}x throughput, "
                f"{theirs.cpu_s / ours.cpu_s:.1f}x less client CPU"
            )
    lite = {r.contender: r.vectors_per_s for r in results if r.server == "lite"}
    noop = {r.contender: r.vectors_per_s for r in results if r.server == "noop"}
    for contender in CONTENDERS:
        if contender in lite and contender in noop:
            print(
                f"bound {contender}: lite {lite[contender]:,.0f} vs noop {noop[contender]:,.0f} vectors/s "
                f"({'server' if lite[contender] < 0.5 * noop[contender] else 'client'}-bound)"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--servers", default="lite,noop")
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--reps", type=int, default=1, help="best of N, interleaved")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--serve-noop", metavar="DATA_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_noop:
        serve_noop(args.serve_noop)
        return 0
    inputs = build_inputs(args.rows, args.dim, args.seed)
    servers = {"lite": lite_server, "noop": noop_server}
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="milvus-bench-") as tmp:
        for server in args.servers.split(","):
            with servers[server](os.path.join(tmp, f"{server}.db")) as address:
                best: dict[str, Result] = {}
                # repetitions interleave the contenders, so background load hits them alike
                for _ in range(args.reps):
                    for contender in args.contenders.split(","):
                        result = measure(server, address, contender, inputs, args.batch_size)
                        print(f"{server} {contender}: {result.vectors_per_s:,.0f} vectors/s", file=sys.stderr)
                        if contender not in best or result.wall_s < best[contender].wall_s:
                            best[contender] = result
                results.extend(best.values())
    report(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
