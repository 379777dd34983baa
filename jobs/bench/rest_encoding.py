"""REST bodies encoded ahead on the encoder threads vs on the caller's thread, side by side in one run.

``python -m jobs.bench.rest_encoding [--rows 10000] [--dim 1536] [--concurrency 4,16] [--reps 3]``

``client.upsert(table)`` of a ``pyarrow.Table`` to the no-op Pinecone REST sink (``jobs/bench/sinks.py``,
its own process), batch 100, with the native JSON writer: ``ahead`` (``engine.ENCODE_AHEAD = 2``: bodies
encoded two at a time on the process's encoder threads, their floats formatted with Python's lock
released) and ``caller`` (``ENCODE_AHEAD = 0``, the default: every body on the caller's thread). The same
bytes go out either way. Repetitions alternate between the two; each cell is the best wall time, with the
client process's CPU (all threads) a vector. One JSON line per cell and one with the ratio, with the machine.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

from vectordb.connector import connect, engine, jsonvec
from vectordb.connector.transports.base import forget_shared

from .cpu_per_row import table_of
from .machine import code_version, environment
from .sinks import start_sink

__all__ = ["main"]

MODES = {"ahead": 2, "caller": 0}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--concurrency", default="4,16")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    table = table_of(args.rows, args.dim)
    best: dict[tuple[str, int], tuple[float, float]] = {}
    env = environment("vectordb-connector", "vectordb-connector-speedups", "orjson")
    with start_sink("rest") as sink:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            client = connect(
                f"pinecone://{sink.address}", api_key="k", batch_size=100, max_concurrency=concurrency
            )
            client.upsert(table.slice(0, 100))  # warm-up: connections, imports
            for _ in range(args.reps):
                for mode, ahead in MODES.items():
                    engine.ENCODE_AHEAD = ahead
                    wall, cpu = time.perf_counter(), time.process_time()
                    report = client.upsert(table)
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    if report.written != args.rows:
                        raise RuntimeError(f"{mode}: wrote {report.written} of {args.rows}")
                    if (mode, concurrency) not in best or wall < best[(mode, concurrency)][0]:
                        best[(mode, concurrency)] = (wall, cpu)
            engine.ENCODE_AHEAD = 0
            client.close()
        forget_shared()
    common: dict[str, Any] = {
        "bench": "rest_encoding",
        "rows": args.rows,
        "dim": args.dim,
        "batch_size": 100,
        "native_json": jsonvec.native_encoder(),
        "reps": args.reps,
    }
    for (mode, concurrency), (wall, cpu) in best.items():
        print(
            json.dumps(
                common
                | {
                    "mode": mode,
                    "max_concurrency": concurrency,
                    "vectors_per_s": round(args.rows / wall),
                    "cpu_us_per_vector": round(cpu / args.rows * 1e6, 1),
                }
            )
        )
    for concurrency in {c for _, c in best}:
        ratio = best[("caller", concurrency)][0] / best[("ahead", concurrency)][0]
        print(
            json.dumps(
                common
                | {"ratio": "ahead_vs_caller", "max_concurrency": concurrency, "value": round(ratio, 2)}
                | {"env": env, "code": code_version("connector", "jobs/bench")}
            )
        )


if __name__ == "__main__":
    main()
