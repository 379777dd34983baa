"""Chroma upsert throughput, side by side: this client and chromadb's own ``HttpClient``, into a real server.

``python -m jobs.bench.chroma_upsert [--rows 2000] [--dim 768]`` starts ``chroma run`` on
127.0.0.1 (the chromadb package's Rust server, data in a temporary directory) unless ``--url``
names one, and writes N random unit-length float32 vectors in batches. 2,000 × 768 by default,
not 20,000: the local server ingests a few thousand vectors per second at best on this machine,
so 20,000 per run times every cell would take minutes. Contenders, each into a fresh collection
per run (inserts, never updates of rows already there):

- ``connector-base64`` / ``connector-json``: ``connect("chroma://…", vector_encoding=…,
  batch_size, max_concurrency).write(table)`` of a ``pyarrow.Table`` (``id``, ``values``
  list<float32>); base64 is what the backend picks when the server offers it.
- ``chromadb``: ``HttpClient(...).get_collection(name).upsert(ids, embeddings=matrix[i:j])``
  per batch, in one thread (its API has no concurrency): numpy rows in, which it turns into
  Python floats and packs to base64 itself.

Timed: the write calls only (``time.perf_counter``), with the client process's CPU seconds
(``time.process_time``, all threads) and, for a server this script started, the server
process's CPU seconds (``/proc/PID/stat``). Where the client spends a few hundredths of a CPU
second per second of wall time (it waits for replies) while the server spends most of one, the
server (its CPU and its SQLite writes) is the bound, and no client can go much faster. Measured
here (2 shared cores): client 0.02–0.07, server 0.55–0.8, both clients within 1–1.7× of each
other; concurrency above 1 only queues at the server. Every run is checked: the collection must
hold N rows afterwards.
Each cell is the best of ``--reps`` runs, interleaved across contenders.

Output: one JSON line per cell (``"bench": "chroma_upsert"``) with the environment, then one
with the ratios of this client's best to chromadb's, per batch size and overall.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from ..processes import stop_process
from ..spark_cluster import free_port
from .machine import environment, process_cpu_s

__all__ = ["main"]

CONTENDERS = ("connector-base64", "connector-json", "chromadb")


@dataclass(frozen=True, slots=True)
class Server:
    host: str
    port: int
    pid: int | None  # set when this script started it: its CPU time is read from /proc


@dataclass(slots=True)
class Cell:
    contender: str
    batch_size: int
    concurrency: int
    walls_s: list[float] = field(default_factory=list)
    cpus_s: list[float] = field(default_factory=list)
    server_cpus_s: list[float | None] = field(default_factory=list)

    def best(self) -> int:
        return min(range(len(self.walls_s)), key=self.walls_s.__getitem__)


# --------------------------------------------------------------------------------------------------
# the server


@contextmanager
def chroma_server(url: str | None) -> Iterator[Server]:
    """The server at ``url``, or a ``chroma run`` started here and stopped on exit."""
    if url:
        parts = httpx.URL(url)
        yield Server(parts.host, parts.port or 8000, None)
        return
    command = (
        str(Path(sys.executable).with_name("chroma"))
        if Path(sys.executable).with_name("chroma").exists()
        else shutil.which("chroma")
    )
    if command is None:
        raise SystemExit("the chroma command is missing: pip install chromadb")
    with (
        tempfile.TemporaryDirectory(prefix="chroma-bench-") as root,
        Path(root, "server.log").open("wb") as log,
    ):
        port = free_port()
        args = [command, "run", "--path", str(Path(root, "data")), "--host", "127.0.0.1", "--port", str(port)]
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        try:
            _wait_ready(proc, f"http://127.0.0.1:{port}")
            yield Server("127.0.0.1", port, proc.pid)
        finally:
            stop_process(proc, grace_s=15)


def _wait_ready(proc: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + 60
    with httpx.Client(timeout=2) as client:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if client.get(f"{url}/api/v2/heartbeat").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    raise SystemExit(f"chroma did not start at {url}")


def _server_cpu_s(pid: int | None) -> float | None:
    return None if pid is None else process_cpu_s(pid)


# --------------------------------------------------------------------------------------------------
# contenders: each returns a function that writes every row into the named (existing) collection


def connector_writer(
    server: Server, table: Any, encoding: str, batch_size: int, concurrency: int
) -> Callable[[str], int]:
    from vectordb.connector import connect

    def write(collection: str) -> int:
        uri = f"chroma://{server.host}:{server.port}/{collection}"
        with connect(
            uri, vector_encoding=encoding, batch_size=batch_size, max_concurrency=concurrency
        ) as client:
            report = client.write(table)
        if not report.ok:
            raise RuntimeError(f"connector: {report!r}")
        return report.written

    return write


def chromadb_writer(chroma: Any, ids: list[str], matrix: np.ndarray, batch_size: int) -> Callable[[str], int]:
    def write(collection: str) -> int:
        handle = chroma.get_collection(collection)
        for start in range(0, len(ids), batch_size):
            stop = start + batch_size
            handle.upsert(ids=ids[start:stop], embeddings=matrix[start:stop])
        return len(ids)

    return write


# --------------------------------------------------------------------------------------------------
# the run


def build_inputs(rows: int, dim: int, seed: int) -> tuple[list[str], np.ndarray, Any]:
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)  # unit length, as embeddings are
    ids = [f"vec-{i:07d}" for i in range(rows)]
    offsets = pa.array(np.arange(0, (rows + 1) * dim, dim, dtype=np.int32))
    table = pa.table({"id": ids, "values": pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))})
    return ids, matrix, table


def timed_run(
    chroma: Any, server: Server, write: Callable[[str], int], rows: int
) -> tuple[float, float, float | None]:
    """(wall s, client CPU s, server CPU s) of one write into a fresh collection, checked by count."""
    name = f"bench-{uuid.uuid4().hex[:12]}"
    chroma.create_collection(name)
    try:
        cpu0, server0, t0 = time.process_time(), _server_cpu_s(server.pid), time.perf_counter()
        written = write(name)
        wall = time.perf_counter() - t0
        cpu, server1 = time.process_time() - cpu0, _server_cpu_s(server.pid)
        stored = chroma.get_collection(name).count()
        if written != rows or stored != rows:
            raise RuntimeError(f"wrote {written}, the collection holds {stored}; expected {rows}")
    finally:
        chroma.delete_collection(name)
    return wall, cpu, None if server0 is None or server1 is None else server1 - server0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--batch-sizes", default="100,500")
    parser.add_argument(
        "--concurrencies", default="1,2,4", help="for this client; chromadb's upsert is serial"
    )
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--url", help="an existing Chroma server, e.g. http://127.0.0.1:8000 (else one is started)"
    )
    args = parser.parse_args(argv)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    concurrencies = [int(c) for c in args.concurrencies.split(",")]
    ids, matrix, table = build_inputs(args.rows, args.dim, args.seed)
    env = environment("chromadb", "orjson", "httpx")

    import chromadb
    from chromadb.config import Settings

    with chroma_server(args.url) as server:
        chroma = chromadb.HttpClient(
            host=server.host, port=server.port, settings=Settings(anonymized_telemetry=False)
        )
        cells: dict[tuple[str, int, int], tuple[Cell, Callable[[str], int]]] = {}
        for batch in batch_sizes:
            for c in concurrencies:
                # JSON vectors at the first concurrency only: they differ in encoding, not in how they queue
                for encoding in ("base64", "json") if c == concurrencies[0] else ("base64",):
                    writer = connector_writer(server, table, encoding, batch, c)
                    cells[(f"connector-{encoding}", batch, c)] = (
                        Cell(f"connector-{encoding}", batch, c),
                        writer,
                    )
            cells[("chromadb", batch, 1)] = (
                Cell("chromadb", batch, 1),
                chromadb_writer(chroma, ids, matrix, batch),
            )
        # warm-up, untimed: connections, imports and the server's first-collection costs
        for key in (("connector-base64", batch_sizes[0], concurrencies[0]), ("chromadb", batch_sizes[0], 1)):
            timed_run(chroma, server, cells[key][1], args.rows)
        for _ in range(args.reps):  # interleaved, so background load hits every contender alike
            for cell, writer in cells.values():
                wall, cpu, server_cpu = timed_run(chroma, server, writer, args.rows)
                cell.walls_s.append(wall)
                cell.cpus_s.append(cpu)
                cell.server_cpus_s.append(server_cpu)
        chroma.close()

    best: dict[tuple[str, int], float] = {}
    for cell, _ in cells.values():
        i = cell.best()
        rate = args.rows / cell.walls_s[i]
        server_cpu = cell.server_cpus_s[i]
        line = {
            "bench": "chroma_upsert",
            "contender": cell.contender,
            "rows": args.rows,
            "dim": args.dim,
            "batch_size": cell.batch_size,
            "concurrency": cell.concurrency,
            "vectors_per_s": round(rate),
            "wall_s": round(cell.walls_s[i], 3),
            "client_cpu_per_wall": round(cell.cpus_s[i] / cell.walls_s[i], 2),
            "server_cpu_per_wall": None if server_cpu is None else round(server_cpu / cell.walls_s[i], 2),
            "runs_s": [round(w, 3) for w in cell.walls_s],
            "env": env,
        }
        print(json.dumps(line))
        family = "connector" if cell.contender.startswith("connector") else "chromadb"
        best[(family, cell.batch_size)] = max(best.get((family, cell.batch_size), 0.0), rate)
    ratios = {f"batch_{b}": round(best[("connector", b)] / best[("chromadb", b)], 2) for b in batch_sizes}
    overall = max(v for (f, _), v in best.items() if f == "connector") / max(
        v for (f, _), v in best.items() if f == "chromadb"
    )
    print(
        json.dumps(
            {"bench": "chroma_upsert", "ratio_connector_vs_chromadb": {**ratios, "best": round(overall, 2)}}
        )
    )


if __name__ == "__main__":
    main()
