"""Qdrant upserts of several vectors a point, side by side: this client vs the official qdrant-client, gRPC and REST.

``python -m jobs.bench.qdrant_named [--reps 2] [--out jobs/bench/results/qdrant_named.jsonl]`` runs two
workloads (issue 25), fixed seeds, integer ids, no payload:

- ``named``: 20,000 rows x 2 named dense vectors of 768 (``title``, ``body``), batch 256;
- ``multi``: 5,000 rows x one multi-vector of 100 x 128 (``colbert``, max_sim), batch 64;

into the no-op sink of ``jobs.bench.qdrant_vs_official`` (its REST protocol and point counting, in its own
process, so its CPU never competes with the client's GIL), which here describes a collection with those
named vectors (``python -m jobs.bench.qdrant_named sink --workload W``). Contenders, on both transports:

- ``connector-c1`` / ``connector-c4``: ``connect(uri, vector_columns=… | multi_vector_columns=…,
  batch_size, max_concurrency)`` and ``client.upsert(table)`` of a ``pyarrow.Table`` (``list<float32>``
  columns; ``list<list<float32>>`` for the multi-vector), at ``max_concurrency`` 1 and 4 (the default);
- ``official-upsert``: ``QdrantClient.upsert(collection, models.Batch(ids, vectors={name: lists}))`` per
  batch, the lists made from the matrices (timed: it is what the client needs);
- ``official-upload``: ``QdrantClient.upload_points`` of ``PointStruct``s made from the matrices as it
  asks for them (a generator, timed), ``batch_size``, ``parallel=1``.

Only the write is timed, with the client process's CPU seconds (``process_time``), per row; each cell is
the best of ``--reps``, repetitions interleaved. Every run is checked: the sink's count of points received
must equal the rows. Output: a table, one JSON line per cell (also appended to ``--out``), and the ratios
(the connector at concurrency 4 against the official client's best, rows/s and CPU per row).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from .machine import code_version
from .qdrant_vs_official import GRPC_REPLY, ROOT, Sink, _Counts, _grpc_points, _official, _RestSink

__all__ = ["main"]

COLLECTION = "bench"
WORKLOADS: dict[str, dict[str, Any]] = {
    "named": {"n": 20_000, "batch": 256, "dense": {"title": 768, "body": 768}, "multi": {}},
    "multi": {"n": 5_000, "batch": 64, "dense": {}, "multi": {"colbert": (100, 128)}},
}


# -- the sink: qdrant_vs_official's, describing a collection with the workload's named vectors ------------


def _vectors_config(spec: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {name: {"size": dim, "distance": "Dot"} for name, dim in spec["dense"].items()}
    for name, (_, dim) in spec["multi"].items():
        config[name] = {"size": dim, "distance": "Dot", "multivector_config": {"comparator": "max_sim"}}
    return config


def serve_sink(workload: str) -> None:
    import grpc
    from qdrant_client import grpc as qg
    from qdrant_client.conversions.conversion import RestToGrpc
    from qdrant_client.http import models

    counts = _Counts()
    config = _vectors_config(WORKLOADS[workload])
    rest_reply = json.dumps({"result": {"config": {"params": {"vectors": config}}}, "status": "ok"}).encode()
    params = {name: models.VectorParams.model_validate(p) for name, p in config.items()}
    info = qg.CollectionInfo()
    info.config.params.vectors_config.CopyFrom(RestToGrpc.convert_vectors_config(params))
    grpc_reply = qg.GetCollectionInfoResponse(result=info, time=0.0).SerializeToString()

    def upsert(body: bytes, context: Any) -> bytes:
        counts.add(_grpc_points(body), len(body))
        return GRPC_REPLY

    server = grpc.server(
        ThreadPoolExecutor(max_workers=16),
        handlers=[
            grpc.method_handlers_generic_handler(
                "qdrant.Points", {"Upsert": grpc.unary_unary_rpc_method_handler(upsert)}
            ),
            grpc.method_handlers_generic_handler(
                "qdrant.Collections",
                {"Get": grpc.unary_unary_rpc_method_handler(lambda body, context: grpc_reply)},
            ),
        ],
        options=[("grpc.max_receive_message_length", 256 << 20)],
    )
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    loop = asyncio.new_event_loop()
    rest = loop.run_until_complete(loop.create_server(lambda: _RestSink(counts, rest_reply), "127.0.0.1", 0))
    print(f"REST {rest.sockets[0].getsockname()[1]}", flush=True)
    print(f"GRPC {grpc_port}", flush=True)
    loop.run_forever()


class NamedSink(Sink):
    """``qdrant_vs_official.Sink`` (its counts, stats and stop), started as this module's sink."""

    def __init__(self, workload: str) -> None:  # the parent's, started with another command
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jobs.bench.qdrant_named", "sink", "--workload", workload],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
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


# -- the data and the contenders ---------------------------------------------------------------------------


def make_data(spec: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each dense name's ``(n, dim)`` matrix and each multi-vector name's ``(n, k, dim)`` block (float32)."""
    rng = np.random.default_rng(0)
    n = spec["n"]
    dense = {name: rng.standard_normal((n, dim)).astype(np.float32) for name, dim in spec["dense"].items()}
    multi = {
        name: rng.standard_normal((n, k, dim)).astype(np.float32) for name, (k, dim) in spec["multi"].items()
    }
    return dense, multi


def arrow_table(dense: dict[str, np.ndarray], multi: dict[str, np.ndarray]) -> Any:
    import pyarrow as pa

    n = len(next(iter({**dense, **multi}.values())))
    columns: dict[str, Any] = {"id": pa.array(np.arange(n, dtype=np.int64))}
    for name, matrix in dense.items():
        offsets = pa.array(np.arange(0, (n + 1) * matrix.shape[1], matrix.shape[1], dtype=np.int32))
        columns[name] = pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))
    for name, block in multi.items():
        _, k, dim = block.shape
        inner = pa.ListArray.from_arrays(
            pa.array(np.arange(0, (n * k + 1) * dim, dim, dtype=np.int32)), pa.array(block.reshape(-1))
        )
        columns[name] = pa.ListArray.from_arrays(
            pa.array(np.arange(0, (n + 1) * k, k, dtype=np.int32)), inner
        )
    return pa.table(columns)


def contenders(
    sink: Sink, dense: dict[str, np.ndarray], multi: dict[str, np.ndarray], batch: int
) -> dict[str, Callable[[], None]]:
    from qdrant_client import models

    from vectordb.connector import connect

    table = arrow_table(dense, multi)
    n = table.num_rows
    ids = list(range(n))
    named: dict[str, np.ndarray] = {**dense, **multi}

    def vectors_of(start: int, stop: int) -> dict[str, Any]:
        return {name: values[start:stop].tolist() for name, values in named.items()}

    def points() -> Iterator[Any]:
        for i in range(n):
            yield models.PointStruct(
                id=i, vector={name: values[i].tolist() for name, values in named.items()}
            )

    options: dict[str, Any] = {}
    if dense:
        options["vector_columns"] = {name: name for name in dense}
    if multi:
        options["multi_vector_columns"] = {name: name for name in multi}
    out: dict[str, Callable[[], None]] = {}
    for transport in ("grpc", "rest"):
        port = sink.grpc_port if transport == "grpc" else sink.rest_port
        scheme = "qdrant+grpc" if transport == "grpc" else "qdrant"
        for concurrency in (1, 4):
            client = connect(
                f"{scheme}://127.0.0.1:{port}/{COLLECTION}",
                batch_size=batch,
                max_concurrency=concurrency,
                **options,
            )

            def run_connector(client: Any = client) -> None:
                report = client.upsert(table)
                assert report.written == n, report

            out[f"connector-c{concurrency}/{transport}"] = run_connector
        official = _official(sink, transport == "grpc")

        def run_upsert(official: Any = official) -> None:
            for start in range(0, n, batch):
                stop = min(n, start + batch)
                official.upsert(
                    COLLECTION,
                    points=models.Batch(ids=ids[start:stop], vectors=vectors_of(start, stop)),
                    wait=True,
                )

        def run_upload(official: Any = official) -> None:
            official.upload_points(COLLECTION, points=points(), batch_size=batch, parallel=1, wait=True)

        out[f"official-upsert/{transport}"] = run_upsert
        out[f"official-upload/{transport}"] = run_upload
    return out


def run_workload(workload: str, reps: int) -> dict[str, tuple[float, float]]:
    """Best (wall s, client CPU s) of each contender, repetitions interleaved, each run checked at the sink."""
    spec = WORKLOADS[workload]
    dense, multi = make_data(spec)
    sink = NamedSink(workload)
    best: dict[str, tuple[float, float]] = {}
    try:
        runs = contenders(sink, dense, multi, spec["batch"])
        for _ in range(reps):
            for name, run in runs.items():
                before = sink.points()
                wall, cpu = time.perf_counter(), time.process_time()
                run()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                arrived = sink.points() - before
                assert arrived == spec["n"], (
                    f"{workload} {name}: the sink received {arrived} points, not {spec['n']}"
                )
                if name not in best or wall < best[name][0]:
                    best[name] = (wall, cpu)
    finally:
        sink.close()
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "sink"])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "jobs" / "bench" / "results" / "qdrant_named.jsonl"
    )
    args = parser.parse_args(argv)
    if args.mode == "sink":
        serve_sink((args.workload or ["named"])[0])
        return
    from vectordb.connector import jsonvec

    lines: list[str] = []
    ratios: list[str] = []
    for workload in args.workload or list(WORKLOADS):
        spec = WORKLOADS[workload]
        best = run_workload(workload, args.reps)
        n = spec["n"]
        env = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "qdrant_client": metadata.version("qdrant-client"),
            "native_json": jsonvec.native_encoder(),
            "code": code_version("connector"),
            "load_1m_at_end": round(os.getloadavg()[0], 2),
            "workload": workload,
            "rows": n,
            "dense": spec["dense"],
            "multi": {name: list(shape) for name, shape in spec["multi"].items()},
            "batch": spec["batch"],
        }
        print(f"\n{workload}: {n} rows, dense {spec['dense']}, multi {spec['multi']}, batch {spec['batch']}")
        print(f"{'contender':24} {'rows/s':>10} {'wall s':>8} {'CPU µs/row':>11}")
        for name, (wall, cpu) in best.items():
            print(f"{name:24} {n / wall:10,.0f} {wall:8.2f} {cpu / n * 1e6:11.1f}")
            cell = {"bench": "qdrant_named", "workload": workload, "contender": name, "rows_per_s": n / wall}
            lines.append(json.dumps({**cell, "wall_s": wall, "cpu_us_per_row": cpu / n * 1e6, "env": env}))
        for transport in ("grpc", "rest"):
            ours_wall, ours_cpu = best[f"connector-c4/{transport}"]
            theirs = min(
                (best[f"official-{kind}/{transport}"] for kind in ("upsert", "upload")), key=lambda b: b[0]
            )
            ratios.append(
                f"{workload} {transport}: connector (concurrency 4) {theirs[0] / ours_wall:.1f}x the official "
                f"client's best rows/s, at {ours_cpu / theirs[1]:.2f}x its CPU per row "
                f"(concurrency 1: {theirs[0] / best[f'connector-c1/{transport}'][0]:.1f}x)"
            )
    print()
    for line in lines:
        print(line)
    for line in ratios:
        print(line)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as out:
        out.writelines(line + "\n" for line in lines)


if __name__ == "__main__":
    main()
