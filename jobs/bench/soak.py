"""Soak: whether memory stays flat and no row is lost over millions of rows, through the client and Spark.

``python -m jobs.bench.soak [--part client|spark|both] [--rows N]`` (default 2,000,000 rows for the
client, 1,000,000 for Spark) prints one JSON line per part (``"bench": "soak"``) with the machine it
ran on and the code (the commit, and the files of the connector and the test servers changed since).

``client``: 128-d float32 rows, made as Arrow batches while the write pulls them (so the input holds
one batch, not the rows), through ``connect(...)``'s ``Client.write`` into the Pinecone-protocol test
server (``--sink rest`` or ``grpc``) in its own process, in ``noop`` mode with an id log
(``start_server_process(kind, id_log=...)``): it keeps no vector, and appends the ids it accepted to
a file. Every ``--fault-every-s`` a fault script is posted to its control API: the next request is
dropped (REST closes the connection; gRPC answers UNAVAILABLE) and the three after it are throttled
(429 with ``Retry-After`` / ``RESOURCE_EXHAUSTED`` with pushback). The client's resident memory
(``VmRSS``) is sampled every ``--sample-every`` rows as the write pulls them; after the warm-up (the
first ``--warmup`` of the rows) the line gives the first, last, largest and smallest sample, max/min
and the drift (``memory_figures``). Also rows/s, the process's CPU per row (and the share of it spent making the input), and the
check: every id the report counts written is in the server's log (``lost``), every row is written or
failed with a reason.

``spark``: ``df.write.format("vectordb")`` in a ``local[2]`` session (``spark_write.start_session``,
input cached first: ``spark_write.cached_input``) into Milvus Lite, the embedded default
(``milvus+lite://DIR/data.db``, ``create=true``), ``--spark-dim`` (64) and ``--spark-batch-size``
(5,000) rows a request. A driver thread samples the resident memory of every Python process under the
JVM each ``--spark-sample-s``; the tasks' workers are known by the pids in the job's report
(``report_path``), and each gets the same figures from its samples taken before any task had
completed (``WorkerSampler``) after its warm-up (the first ``--warmup`` of them). Also rows/s, CPU per row of the Spark side (JVM, its Python workers, the driver:
``spark_write.CpuMeter``) and of the Milvus Lite server, and the rows pymilvus counts in the collection
at the end against the rows the job reports written. Milvus Lite ingests a few thousand rows a second
here, so 1,000,000 rows take minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from vectordb.connector import WriteReport, connect

from .machine import code_version, environment, process_cpu_s, process_rss_bytes

__all__ = ["main"]

MB = 1 << 20
PACKAGES = ("pyarrow", "numpy", "grpcio", "pyspark", "pymilvus", "milvus-lite")


def memory_figures(samples: list[tuple[float, int]], warmup: float) -> dict[str, Any]:
    """RSS figures (MB) of ``(progress, bytes)`` samples after the warm-up: the first ``warmup`` of the
    progress (rows, or seconds) from the first sample to the last. ``max_over_min`` is the spread of the
    samples; ``drift``, the median of their last tenth over that of their first, tells growth from a
    working set that comes and goes; ``trace_mb`` is every sample, warm-up included."""
    if not samples:
        return {"samples": 0}
    first, last = samples[0][0], samples[-1][0]
    kept = [rss for at, rss in samples if at >= first + warmup * (last - first)]
    tenth = max(1, len(kept) // 10)
    return {
        "samples": len(kept),
        "before_warmup_mb": round(samples[0][1] / MB, 1),
        "start_mb": round(kept[0] / MB, 1),
        "end_mb": round(kept[-1] / MB, 1),
        "max_mb": round(max(kept) / MB, 1),
        "min_mb": round(min(kept) / MB, 1),
        "max_over_min": round(max(kept) / min(kept), 3),
        "drift": round(float(np.median(kept[-tenth:]) / np.median(kept[:tenth])), 3),
        "trace_mb": [round(rss / MB, 1) for _, rss in samples],
    }


# --------------------------------------------------------------------------------------------------
# the client


class SoakInput:
    """``rows`` rows (id = the row's number as a string, ``dim`` float32 values) as Arrow record batches
    made on demand; this process's RSS is sampled every ``sample_every`` rows handed out."""

    def __init__(self, rows: int, dim: int, batch_rows: int, sample_every: int, seed: int = 1) -> None:
        self.rows, self.dim, self.batch_rows, self.sample_every = rows, dim, batch_rows, sample_every
        self.seed = seed
        self.samples: list[tuple[float, int]] = []  # (rows handed out, RSS bytes)
        self.cpu_s = 0.0  # CPU of making the batches (on the thread that pulls them)
        # the first batch imports what pyarrow loads lazily (a second of CPU): not the input's cost
        self._make(0, 1, np.random.default_rng(seed))

    def _make(self, start: int, n: int, rng: np.random.Generator) -> Any:
        import pyarrow as pa

        ids = pa.array(np.arange(start, start + n)).cast(pa.string())
        values = pa.FixedSizeListArray.from_arrays(rng.random(n * self.dim, dtype=np.float32), self.dim)
        return pa.RecordBatch.from_arrays([ids, values], names=["id", "values"])

    def __iter__(self) -> Iterator[Any]:
        rng = np.random.default_rng(self.seed)
        next_sample = 0
        for start in range(0, self.rows, self.batch_rows):
            cpu0 = time.thread_time()
            batch = self._make(start, min(self.batch_rows, self.rows - start), rng)
            if start >= next_sample:
                self.samples.append((start, process_rss_bytes()))
                next_sample += self.sample_every
            self.cpu_s += time.thread_time() - cpu0
            yield batch
        self.samples.append((self.rows, process_rss_bytes()))


class Faults:
    """Posts a fault script every ``every_s`` from a thread: the next request dropped, the ``throttles``
    after it throttled for ``retry_after_s``; on exit, a script without faults."""

    def __init__(self, server: Any, every_s: float, throttles: int = 3, retry_after_s: float = 0.1) -> None:
        from tests.servers.script import FaultScript

        self._server = server
        self._every_s = every_s
        self._script = FaultScript(
            noop=True, drop_first=1, throttle_first=throttles, retry_after_s=retry_after_s
        )
        self._calm = FaultScript(noop=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-faults", daemon=True)
        self.posted = 0

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            self._server.script(self._script)
            self.posted += 1

    def __enter__(self) -> Faults:
        self._server.script(self._calm)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._server.script(self._calm)


def check_ids(id_log: Path, rows: int, report: WriteReport) -> dict[str, int]:
    """The report against the server's id log: written ids it lacks (``lost``), ids it accepted more than
    once (a retry of a request whose reply was lost), failed ids it holds anyway."""
    logged = np.array(id_log.read_bytes().split(), dtype="S").astype(np.int64)
    times = np.bincount(logged, minlength=rows)
    failed = np.zeros(rows, dtype=bool)
    failed[[int(i) for i in report.failed_ids if i is not None]] = True
    return {
        "lost": int(np.count_nonzero(~failed & (times == 0))),
        "accepted_twice": int(np.count_nonzero(times > 1)),
        "failed_but_stored": int(np.count_nonzero(failed & (times > 0))),
        "unknown_ids": int(np.count_nonzero(times[rows:])),  # ids the client never sent
    }


def client_part(args: argparse.Namespace) -> dict[str, Any]:
    from tests.servers.fixtures import start_server_process

    rows = args.rows or 2_000_000
    source = SoakInput(rows, args.dim, args.arrow_rows, args.sample_every)
    with (
        tempfile.TemporaryDirectory(prefix="soak-client-") as tmp,
        start_server_process(args.sink, id_log=Path(tmp) / "ids.log") as server,
    ):
        options = {"on_error": "report", "batch_size": args.batch_size, "max_concurrency": args.concurrency}
        with connect(server.uri, **options) as client:
            faults = Faults(server, args.fault_every_s)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            with faults:
                report = client.write(source)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            server_cpu = process_cpu_s(server.pid) if server.pid else None
        arrived = server.arrived()
        ids = check_ids(Path(tmp) / "ids.log", rows, report)
    return {
        "bench": "soak",
        "part": "client",
        "sink": args.sink,
        "rows": rows,
        "dim": args.dim,
        "batch_size": args.batch_size,
        "max_concurrency": args.concurrency,
        "wall_s": round(wall, 1),
        "rows_per_s": round(rows / wall),
        "cpu_us_per_row": round(cpu / rows * 1e6, 2),
        "input_cpu_us_per_row": round(source.cpu_s / rows * 1e6, 2),  # making the Arrow batches: included
        "server_cpu_s": server_cpu,
        "rss": memory_figures(source.samples, args.warmup),
        "rss_every_rows": args.sample_every,
        "written": report.written,
        "failed": report.failed,
        "unaccounted": rows - report.written - report.failed,
        "reasons": report.reasons(),
        "requests": report.requests,
        "retries": report.retries,
        "throttled": report.throttled,
        "fault_scripts": faults.posted,
        "server": {o: arrived.count(o) for o in ("ok", "throttled", "dropped")},
        **ids,
        "code": code_version("connector", "spark", "tests/servers"),
        "env": environment(*PACKAGES),
    }


# --------------------------------------------------------------------------------------------------
# Spark


class WorkerSampler:
    """RSS of every Python process under a JVM, every ``every_s`` seconds, from a thread of this process.

    ``during_tasks(pid)`` is a worker's samples from before any task of the job had completed (Spark's
    status tracker, polled at each sample): with one task per worker, every worker was then inside its
    task. Later samples are not the task's memory: a finished worker stays (Spark reuses it), and what
    its task freed, or the next task's start, would count as the task's.
    """

    def __init__(self, spark_context: Any, every_s: float) -> None:
        import psutil

        self._context = spark_context
        self._jvm = psutil.Process(spark_context._gateway.proc.pid)
        self._every_s = every_s
        self.samples: dict[int, list[tuple[float, int]]] = {}  # pid → (seconds since start, RSS bytes)
        self.first_task_done_s: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-rss", daemon=True)

    def _run(self) -> None:
        import psutil

        tracker = self._context.statusTracker()
        t0 = time.monotonic()
        while not self._stop.wait(self._every_s):
            now = time.monotonic() - t0
            for proc in self._jvm.children(recursive=True):
                try:
                    if "python" in proc.name():
                        self.samples.setdefault(proc.pid, []).append((now, process_rss_bytes(proc.pid)))
                except (psutil.Error, OSError):  # ended between the listing and the read
                    continue
            if self.first_task_done_s is None and any(
                (info := tracker.getStageInfo(stage)) is not None and info.numCompletedTasks > 0
                for stage in tracker.getActiveStageIds()
            ):
                self.first_task_done_s = now

    def during_tasks(self, pid: int) -> list[tuple[float, int]]:
        done = self.first_task_done_s
        return [(at, rss) for at, rss in self.samples.get(pid, []) if done is None or at < done]

    def __enter__(self) -> WorkerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def milvus_count(path: str, collection: str) -> int:
    """Rows in the collection, counted by Milvus (``count(*)``) through pymilvus, after a flush."""
    from pymilvus import MilvusClient

    from vectordb.connector.backends.milvus import lite as embedded

    client = MilvusClient(uri=f"http://{embedded.ensure_server(path)}")
    try:
        client.flush(collection)
        result = client.query(collection, filter="", output_fields=["count(*)"], consistency_level="Strong")
        return int(result[0]["count(*)"])
    finally:
        client.close()


def spark_part(args: argparse.Namespace) -> dict[str, Any]:
    from vectordb.connector.backends.milvus import lite as embedded

    from .spark_write import CpuMeter, cached_input, start_session

    rows = args.rows or 1_000_000
    workdir = tempfile.mkdtemp(prefix="soak-spark-")
    path = os.path.join(workdir, "data.db")
    collection = "soak"
    spark = start_session(args.partitions)
    try:
        df = cached_input(spark, rows, args.spark_dim, args.partitions).select("id", "values")
        options = {
            "uri": f"milvus+lite://{path}",
            "collection": collection,
            "create": "true",
            "dimension": str(args.spark_dim),
            "batch_size": str(args.spark_batch_size),
            "on_error": "report",
            "report_path": os.path.join(workdir, "reports"),
        }
        embedded.ensure_server(path, idle_timeout_s=0)  # up before the clock starts, and for the count
        lite = embedded.running(path)
        lite_cpu0 = process_cpu_s(lite.pid) if lite else 0.0
        jvm = spark.sparkContext._gateway.proc.pid
        with WorkerSampler(spark.sparkContext, args.spark_sample_s) as sampler, CpuMeter([jvm]) as meter:
            wall0 = time.perf_counter()
            df.write.format("vectordb").options(**options).mode("append").save()
            wall = time.perf_counter() - wall0
        lite_cpu = process_cpu_s(lite.pid) - lite_cpu0 if lite else None
        lite_rss = process_rss_bytes(lite.pid) if lite else None
        job = json.loads(next(Path(workdir, "reports").glob("*.json")).read_bytes())
        stored = milvus_count(path, collection)
    finally:
        spark.stop()
        embedded.stop(path)
        shutil.rmtree(workdir, ignore_errors=True)
    task_pids = {t["pid"] for t in job["tasks"]}
    workers = [
        {
            "pid": pid,
            "tasks": sum(t["pid"] == pid for t in job["tasks"]),
            "samples_after_first_task_done": len(sampler.samples[pid]) - len(sampler.during_tasks(pid)),
            **memory_figures(sampler.during_tasks(pid), args.warmup),
        }
        for pid in sorted(task_pids & set(sampler.samples))
    ]
    return {
        "bench": "soak",
        "part": "spark",
        "target": "milvus-lite",
        "rows": rows,
        "dim": args.spark_dim,
        "batch_size": args.spark_batch_size,
        "partitions": args.partitions,
        "wall_s": round(wall, 1),
        "rows_per_s": round(rows / wall),
        "spark_cpu_us_per_row": round(meter.cpu_s / rows * 1e6, 1),  # JVM + Python workers + driver
        "milvus_cpu_us_per_row": round(lite_cpu / rows * 1e6, 1) if lite_cpu is not None else None,
        "milvus_rss_mb_end": round(lite_rss / MB) if lite_rss is not None else None,
        "workers": workers,
        "rss_every_s": args.spark_sample_s,
        "other_python_processes": len(sampler.samples) - len(workers),  # the daemon, planning workers
        "written": job["written"],
        "failed": job["failed"],
        "reasons": job["reasons"],
        "requests": job["requests"],
        "retries": job["retries"],
        "stored": stored,
        "lost": job["written"] - stored,
        "code": code_version("connector", "spark", "tests/servers"),
        "env": environment(*PACKAGES),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m jobs.bench.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("client", "spark", "both"), default="both")
    parser.add_argument("--rows", type=int, help="default: 2,000,000 (client), 1,000,000 (spark)")
    parser.add_argument("--warmup", type=float, default=0.1, help="the share of a run before memory counts")
    client = parser.add_argument_group("client")
    client.add_argument("--sink", choices=("rest", "grpc"), default="rest")
    client.add_argument("--dim", type=int, default=128)
    client.add_argument("--batch-size", type=int, default=500)
    client.add_argument("--concurrency", type=int, default=4)
    client.add_argument("--arrow-rows", type=int, default=10_000, help="rows per Arrow batch made")
    client.add_argument("--sample-every", type=int, default=20_000, help="rows between RSS samples")
    client.add_argument("--fault-every-s", type=float, default=1.0)
    spark = parser.add_argument_group("spark")
    spark.add_argument("--spark-dim", type=int, default=64)
    spark.add_argument("--spark-batch-size", type=int, default=5_000)
    spark.add_argument("--partitions", type=int, default=2)
    spark.add_argument("--spark-sample-s", type=float, default=2.0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.part in ("client", "both"):
        print(json.dumps(client_part(args)), flush=True)
    if args.part in ("spark", "both"):
        print(json.dumps(spark_part(args)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
