"""How the Spark writer scales with tasks and requests in flight, on a standalone cluster on 127.0.0.1.

``python -m jobs.bench.spark_scaling [--rows 120000] [--dim 768] [--delays 20,80]``

A master and two workers (``spark-class``, 4 task slots each, so up to 8 tasks run at once on this
machine's 2 cores) and a driver in this process. The sinks are the no-op Pinecone gRPC sink holding
each reply 20 ms and 80 ms (``jobs/bench/sinks.py``: a cross-region round trip, in its own process).
Each cell writes ``--rows`` rows with ``tasks`` partitions and ``max_concurrency`` c, batch 500,
and reports rows/s (the sink's count over the action's wall time) and the executors' CPU per row
(every process under the two worker daemons: executor JVMs, Python daemons and workers). Where
the rows/s stop growing the note says why: the sink's round trip (tasks × c × batch / round trip),
the CPU (2 cores), or neither.

``--budget R`` instead runs the job-wide budget check: ``max_rows_per_second=R`` with
``budget_tasks`` equal to the tasks, for ``--budget-seconds`` (60), and prints the rows the sink
received in every whole second with its distance from R (the first and last, partial seconds are
shown but not judged).

Output: a table, one JSON line per cell (``"bench": "spark_scaling"``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..spark_cluster import Cluster, standalone_cluster
from .sinks import Sink, start_sink
from .spark_write import CpuMeter, cached_input

__all__ = ["main"]

SLOTS_PER_WORKER = 4
WORKERS = 2
BATCH = 500
API_KEY = "bench"


def start_session(cluster: Cluster, tasks: int) -> Any:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the driver's Python workers too
    from pyspark.sql import SparkSession

    from vectordb.spark import register

    spark = (
        SparkSession.builder.master(cluster.master_url)
        .appName("vectordb-bench-spark-scaling")
        .config("spark.pyspark.python", sys.executable)  # the workers run this venv's Python
        .config("spark.executor.cores", str(SLOTS_PER_WORKER))
        .config("spark.executor.memory", "2g")
        .config("spark.driver.memory", "3g")
        .config("spark.default.parallelism", str(tasks))
        # cached partitions live on one executor; Spark's default 3 s wait for a slot there would start
        # the tasks of a write seconds apart
        .config("spark.locality.wait", "0")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def write(df: Any, sink: Sink, concurrency: int, extra: dict[str, str] | None = None) -> None:
    (
        df.write.format("vectordb")
        .mode("append")
        .option("uri", f"pinecone+grpc://{sink.address}")
        .option("api_key", API_KEY)
        .option("batch_size", str(BATCH))
        .option("max_concurrency", str(concurrency))
        .options(**(extra or {}))
        .save()
    )


@dataclass
class Cell:
    delay_ms: float
    tasks: int
    concurrency: int
    rows: int
    wall_s: float
    cpu_s: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.wall_s

    @property
    def cpu_us_per_row(self) -> float:
        return 1e6 * self.cpu_s / self.rows

    @property
    def sink_bound(self) -> float:
        """What the round trip alone allows: tasks × c requests of BATCH rows per round trip."""
        return self.tasks * self.concurrency * BATCH / (self.delay_ms / 1000.0)


def run_cell(spark: Any, cluster: Cluster, sink: Sink, df: Any, tasks: int, concurrency: int) -> Cell:
    before = sink.stats()
    with CpuMeter(cluster.worker_pids) as meter:
        started = time.perf_counter()
        write(df, sink, concurrency)
        wall = time.perf_counter() - started
    received = (sink.stats() - before).vectors
    rows = df.count()
    if received != rows:
        raise AssertionError(f"the sink received {received} rows of {rows}")
    return Cell(sink.delay_ms, tasks, concurrency, rows, wall, meter.cpu_s)


def scaling(args: argparse.Namespace, cluster: Cluster) -> None:
    spark = start_session(cluster, max(args.tasks))
    inputs = {tasks: cached_input(spark, args.rows, args.dim, tasks) for tasks in args.tasks}
    print(f"{args.rows} rows x {args.dim}, batch {BATCH}; {WORKERS} workers x {SLOTS_PER_WORKER} slots")
    print(f"{'delay':>6} {'tasks':>5} {'c':>3} {'rows/s':>10} {'round-trip bound':>17} {'µs CPU/row':>11}")
    for delay in args.delays:
        with start_sink("grpc", delay) as sink:
            for tasks in args.tasks:
                # warm-up: the first write of a task count starts that many Python workers
                write(cached_input(spark, 500 * tasks, args.dim, tasks), sink, 1)
                for concurrency in args.concurrency:
                    cell = run_cell(spark, cluster, sink, inputs[tasks], tasks, concurrency)
                    print(
                        f"{delay:>4}ms {tasks:>5} {concurrency:>3} {cell.rows_per_s:>10,.0f} "
                        f"{cell.sink_bound:>17,.0f} {cell.cpu_us_per_row:>11.1f}",
                        flush=True,
                    )
                    print(json.dumps({"bench": "spark_scaling", **cell.__dict__, "machine": _machine()}))
    spark.stop()


def budget(args: argparse.Namespace, cluster: Cluster) -> None:
    tasks, rate = max(args.tasks), args.budget
    rows = int(rate * args.budget_seconds)
    spark = start_session(cluster, tasks)
    df = cached_input(spark, rows, args.dim, tasks)
    with start_sink("grpc", min(args.delays)) as sink:
        write(
            cached_input(spark, 500 * tasks, args.dim, tasks), sink, 4
        )  # warm-up: start every task's worker
        before = sink.stats()
        options = {"max_rows_per_second": str(rate), "budget_tasks": str(tasks), "batch_size": "100"}
        write(df, sink, 4, options)
        per_second = (sink.stats() - before).per_second
    seconds = sorted(per_second, key=int)
    judged = seconds[1:-1]  # the first and last seconds are partial
    worst = max((abs(per_second[s] - rate) / rate for s in judged), default=0.0)
    print(f"budget {rate:,.0f} rows/s over {tasks} tasks, {rows:,} rows, batch 100:")
    for i, second in enumerate(seconds):
        count = per_second[second]
        note = "" if second in judged else "  (partial second, not judged)"
        print(f"  second {i:>3}: {count:>7,} rows  {100 * (count - rate) / rate:+6.1f} %{note}")
    print(
        f"worst whole second: {100 * worst:.1f} % from the target ({'within' if worst <= 0.1 else 'beyond'} ±10 %)"
    )
    print(json.dumps({"bench": "spark_scaling_budget", "rate": rate, "tasks": tasks, "worst": worst,
                      "per_second": [per_second[s] for s in seconds], "machine": _machine()}))  # fmt: skip
    spark.stop()


def _machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "load": os.getloadavg()[0], "python": platform.python_version()}


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=120_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--delays", type=_ints, default=[20, 80], help="sink reply delays, ms")
    parser.add_argument("--tasks", type=_ints, default=[1, 2, 4, 8])
    parser.add_argument("--concurrency", type=_ints, default=[1, 4, 16])
    parser.add_argument("--budget", type=float, help="run the job-wide budget check at this many rows/s")
    parser.add_argument("--budget-seconds", type=float, default=60.0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="spark-scaling-") as work_dir,
        standalone_cluster(Path(work_dir), workers=WORKERS, cores=SLOTS_PER_WORKER, memory="3g") as cluster,
    ):
        if args.budget:
            budget(args, cluster)
        else:
            scaling(args, cluster)


if __name__ == "__main__":
    main()
