"""Weaviate import throughput, side by side against one real server: this client vs weaviate-client v4's batcher.

``python -m jobs.bench.weaviate_vs_official [--n 20000] [--dim 768] [--batch 200] [--concurrency 4]
[--reps 1]`` starts one ``weaviate-server`` (v1.35.2, built by ``.ci/run``; see
tests/integration/weaviate_server.py) on 127.0.0.1 and writes N random float32 vectors (fixed seed, UUID
ids, two properties: ``title`` text and ``n`` int) into a fresh collection per run, so every run builds
its HNSW index from empty. Contenders:

- ``connector-cK``: ``connect("weaviate://…", batch_size, max_concurrency=K)`` and ``client.upsert(table)``
  of a ``pyarrow.Table`` (``id`` UUID strings, ``values`` list<float32>, ``title``, ``n``), K = 1 and
  ``--concurrency``;
- ``official``: ``collection.batch.fixed_size(batch_size, concurrent_requests=--concurrency)`` and
  ``batch.add_object(properties, uuid, vector)`` per row (the vector as a list: ``matrix[i].tolist()``,
  timed), then ``collection.batch.failed_objects`` must be empty.

Only the write is timed (``perf_counter``), with this process's CPU seconds (``process_time``: every
thread, the official batcher's included) and the server's (``/proc/PID/stat``), both per vector; each
cell is the best of ``--reps``, repetitions interleaved. Every run is checked: the collection must
hold N objects afterwards. The server and the client share this machine's cores: with the server
using most of them, rows/s says where the server is the bound, and client CPU per vector is what the
client itself costs. Output: a table, one JSON line per cell, then the ratio (ours ÷ official).

Measured on this 2-core machine (x86_64, Python 3.11, weaviate-client 4.16.2, other work running beside
it), 20,000 × 768, batch 200: connector-c4 724 vectors/s and 27.5 µs client CPU per vector, connector-c1
428 and 31.5 µs, official (fixed_size, 4 in flight) 443 and 147.1 µs; the server spent 1.8-2.2 ms of CPU
per vector (HNSW inserts): the server is the bound, the client's own cost is a fifth of the official one's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[2]
TICKS = os.sysconf("SC_CLK_TCK")


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def contenders(server: Any, matrix: np.ndarray, args: argparse.Namespace) -> dict[str, Callable[[str], None]]:
    import pyarrow as pa

    from vectordb.connector import connect

    n, dim = matrix.shape
    ids = [str(uuid.UUID(int=i + 1)) for i in range(n)]
    titles = [f"document {i}" for i in range(n)]
    table = pa.table(
        {
            "id": ids,
            "values": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), dim).cast(
                pa.list_(pa.float32())
            ),
            "title": titles,
            "n": pa.array(np.arange(n, dtype=np.int64)),
        }
    )
    out: dict[str, Callable[[str], None]] = {}
    for concurrency in sorted({1, args.concurrency}):

        def run_connector(name: str, concurrency: int = concurrency) -> None:
            with connect(
                server.uri(name),
                grpc_port=server.grpc_port,
                batch_size=args.batch,
                max_concurrency=concurrency,
                create=True,
            ) as client:
                report = client.upsert(table)
            assert report.written == n, report

        out[f"connector-c{concurrency}"] = run_connector

    def run_official(name: str) -> None:
        from weaviate.classes.config import Configure, DataType, Property

        client = server.client()
        try:
            collection = client.collections.create(
                name,
                vector_config=Configure.Vectors.self_provided(),
                properties=[
                    Property(name="title", data_type=DataType.TEXT),
                    Property(name="n", data_type=DataType.INT),
                ],
            )
            with collection.batch.fixed_size(
                batch_size=args.batch, concurrent_requests=args.concurrency
            ) as batch:
                for i in range(n):
                    batch.add_object(
                        properties={"title": titles[i], "n": i}, uuid=ids[i], vector=matrix[i].tolist()
                    )
            failed = collection.batch.failed_objects
            assert not failed, failed[:3]
        finally:
            client.close()

    out["official"] = run_official
    return out


def count(server: Any, name: str) -> int:
    client = server.client()
    try:
        return int(client.collections.get(name).aggregate.over_all(total_count=True).total_count or 0)
    finally:
        client.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--reps", type=int, default=1)  # 20,000 × 768 takes about 30-50 s a run here
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.integration.weaviate_server import start_weaviate, weaviate_binary

    if weaviate_binary() is None:
        raise SystemExit(
            "no weaviate-server binary: go install github.com/weaviate/weaviate/cmd/weaviate-server@v1.35.2"
        )
    warnings.simplefilter("ignore")  # weaviate-client's notes on its own version
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((args.n, args.dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    best: dict[str, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="weaviate-bench-") as root, start_weaviate(Path(root)) as server:
        pid = server.pid or 0
        runs = contenders(server, matrix, args)
        for rep in range(args.reps):
            for name, run in runs.items():
                collection = f"Bench_{name.replace('-', '_')}_{rep}"
                server_before = server_cpu_s(pid)
                wall, cpu = time.perf_counter(), time.process_time()
                run(collection)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                server_cpu = server_cpu_s(pid) - server_before
                stored = count(server, collection)
                assert stored == args.n, f"{name}: the collection holds {stored} objects, not {args.n}"
                server.rest("DELETE", f"/v1/schema/{collection}")
                if name not in best or wall < best[name][0]:
                    best[name] = (wall, cpu, server_cpu)
    env = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "weaviate_server": "1.35.2",
        "weaviate_client": metadata.version("weaviate-client"),
        "n": args.n,
        "dim": args.dim,
        "batch": args.batch,
        "concurrency": args.concurrency,
    }
    print(
        f"{'contender':16} {'vectors/s':>10} {'wall s':>8} {'client CPU µs/vector':>21} {'server CPU µs/vector':>21}"
    )
    for name, (wall, cpu, server_cpu) in best.items():
        print(
            f"{name:16} {args.n / wall:10,.0f} {wall:8.2f} {cpu / args.n * 1e6:21.1f} "
            f"{server_cpu / args.n * 1e6:21.1f}"
        )
    for name, (wall, cpu, server_cpu) in best.items():
        cell = {"bench": "weaviate_vs_official", "contender": name, "vectors_per_s": args.n / wall}
        cell |= {"wall_s": wall, "cpu_us_per_vector": cpu / args.n * 1e6}
        print(json.dumps({**cell, "server_cpu_us_per_vector": server_cpu / args.n * 1e6, "env": env}))
    ours, theirs = best[f"connector-c{args.concurrency}"], best["official"]
    print(
        f"connector (concurrency {args.concurrency}) / official: {theirs[0] / ours[0]:.2f}x the rows/s, "
        f"{ours[1] / theirs[1]:.2f}x the client CPU per vector"
    )


if __name__ == "__main__":
    main()
