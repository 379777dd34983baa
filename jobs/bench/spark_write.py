"""Spark write throughput, side by side: this data source, ``foreachPartition`` + an official SDK, a naive loop.

``python -m jobs.bench.spark_write [--rows 200000] [--dims 768,1536] [--targets noop,20ms,milvus]``

One ``local[2]`` session; the input (``id`` string, ``values`` array<float>, deterministic values)
is built by Spark expressions and cached before timing, so every contender reads the same cached
rows. Targets: the no-op Pinecone gRPC sink and the same sink holding each reply 20 ms (separate
processes, ``jobs/bench/sinks.py``), and Milvus Lite (the embedded default). Contenders:

- ``vectordb``: ``df.write.format("vectordb").mode("append").save()`` (the Arrow writer).
- ``foreachPartition+sdk``: the pattern users write today: ``df.foreachPartition(f)``, where ``f``
  makes the official client (``pinecone.grpc.PineconeGRPC``; for Milvus, ``pymilvus.MilvusClient``)
  and upserts ``(id, list of floats)`` rows in chunks with its batched upsert (batch 100 / 1000).
- ``naive``: one upsert per row through the same SDK, on ``--naive-rows`` rows only (it is slow).

A warm-up run of each contender comes first (the first Python data source write of a session
pays ~10 s of set-up), and each cell is the fastest of ``--reps`` runs (the machine is shared). Each
cell: rows/s and MB/s of vector payload (rows × dim × 4 bytes) over the wall time of the
Spark action, and CPU-seconds of the Spark side (the JVM and every Python worker under it, sampled
every 0.1 s: ``CpuMeter``) plus the driver's Python. Each run is checked: the target must hold (or have
counted) exactly the rows sent. Output: a table, one JSON line per cell (``"bench":
"spark_write"``) with the machine it ran on, and the ratio vectordb ÷ foreachPartition+sdk.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any

from .sinks import Sink, start_sink

__all__ = ["main"]

API_KEY = "bench"
SDK_BATCH = {"pinecone": 100, "milvus": 1000}


@dataclass
class Cell:
    target: str
    contender: str
    dim: int
    rows: int
    wall_s: float
    cpu_s: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.wall_s

    @property
    def mb_per_s(self) -> float:
        return self.rows * self.dim * 4 / self.wall_s / 1e6


# --------------------------------------------------------------------------------------------------
# the session, its input and its CPU


def start_session(partitions: int) -> Any:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from vectordb.spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("vectordb-bench-spark-write")
        .config("spark.driver.memory", "6g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.default.parallelism", str(partitions))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def cached_input(spark: Any, rows: int, dim: int, partitions: int) -> Any:
    values = f"transform(sequence(0, {dim - 1}), i -> cast((xxhash64(id, i) % 1000000) / 1000000.0 as float))"
    df = spark.range(0, rows, numPartitions=partitions).selectExpr(
        "cast(id as string) as id", f"{values} as values", "id as n"
    )
    df = df.cache()
    assert df.count() == rows
    return df


class CpuMeter:
    """CPU seconds of processes and every process under them (a driver's JVM, a standalone worker: its
    executors, Python daemons and workers) during an action.

    Workers come and go during a job, so the process tree is sampled every 0.1 s and each process
    counts from its first sample (or from zero if it was born during the action) to its last; a
    process that ends between samples loses at most that interval. The driver's own Python counts too.
    """

    def __init__(self, roots: list[int], every_s: float = 0.1) -> None:
        import psutil

        self._roots = [psutil.Process(pid) for pid in roots]
        self._every_s = every_s
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-meter", daemon=True)

    def _sample(self, initial: bool = False) -> None:
        import psutil

        procs = [p for root in self._roots for p in (root, *root.children(recursive=True))]
        for proc in procs:
            try:
                t = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            used = t.user + t.system
            self._first.setdefault(proc.pid, used if initial else 0.0)
            self._last[proc.pid] = used

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            self._sample()

    def __enter__(self) -> CpuMeter:
        self._sample(initial=True)
        self._cpu0 = time.process_time()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.cpu_s = (
            sum(self._last[p] - self._first[p] for p in self._last) + time.process_time() - self._cpu0
        )


def measure(spark: Any, action: Callable[[], None]) -> tuple[float, float]:
    with CpuMeter([spark.sparkContext._gateway.proc.pid]) as meter:
        wall0 = time.perf_counter()
        action()
        wall = time.perf_counter() - wall0
    return wall, meter.cpu_s


# --------------------------------------------------------------------------------------------------
# contenders (functions shipped to executors are module-level: pickled by value from __main__)


def pinecone_partition(address: str, batch: int, rows: Iterator[Any]) -> None:
    from pinecone.grpc import PineconeGRPC

    index = PineconeGRPC(api_key=API_KEY, grpc_scheme="http").Index(host=address)
    chunk: list[tuple[str, list[float]]] = []
    for row in rows:
        chunk.append((row.id, row.values))
        if len(chunk) == 1000:
            index.upsert(vectors=chunk, batch_size=batch, show_progress=False)
            chunk = []
    if chunk:
        index.upsert(vectors=chunk, batch_size=batch, show_progress=False)
    index.close()


def pinecone_per_row(address: str, rows: Iterator[Any]) -> None:
    from pinecone.grpc import PineconeGRPC

    index = PineconeGRPC(api_key=API_KEY, grpc_scheme="http").Index(host=address)
    for row in rows:
        index.upsert(vectors=[(row.id, row.values)], show_progress=False)
    index.close()


def milvus_partition(address: str, collection: str, batch: int, rows: Iterator[Any]) -> None:
    from pymilvus import MilvusClient

    client = MilvusClient(uri=f"http://{address}")
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append({"id": row.id, "vector": row.values})
        if len(chunk) == batch:
            client.upsert(collection, chunk)
            chunk = []
    if chunk:
        client.upsert(collection, chunk)
    client.close()


def milvus_per_row(address: str, collection: str, rows: Iterator[Any]) -> None:
    from pymilvus import MilvusClient

    client = MilvusClient(uri=f"http://{address}")
    for row in rows:
        client.upsert(collection, [{"id": row.id, "vector": row.values}])
    client.close()


# --------------------------------------------------------------------------------------------------
# targets


class SinkTarget:
    """A Pinecone gRPC sink; it counts what arrives."""

    def __init__(self, name: str, sink: Sink) -> None:
        self.name, self.sink = name, sink

    def options(self, dim: int) -> dict[str, str]:
        # the bench sink has no describe_index_stats: skip the driver's check (verify=false)
        return {"uri": f"pinecone+grpc://{self.sink.address}", "verify": "false"}

    def sdk(self, df: Any, dim: int) -> None:
        address, batch = self.sink.address, SDK_BATCH["pinecone"]
        df.foreachPartition(lambda rows: pinecone_partition(address, batch, rows))

    def naive(self, df: Any, dim: int) -> None:
        address = self.sink.address
        df.foreachPartition(lambda rows: pinecone_per_row(address, rows))

    @contextmanager
    def run(self, rows: int, dim: int) -> Iterator[None]:
        before = self.sink.stats()
        yield
        got = (self.sink.stats() - before).vectors
        if got != rows:
            raise RuntimeError(f"{self.name}: the sink counted {got} vectors, {rows} were sent")


class MilvusTarget:
    """Milvus Lite through its gRPC server; a fresh collection per run, dropped after."""

    def __init__(self, path: str) -> None:
        from pymilvus import MilvusClient

        from vectordb.connector.backends.milvus import lite as embedded

        self.name, self.path = "milvus-lite", path
        self.address = embedded.ensure_server(path, idle_timeout_s=0)
        self.client = MilvusClient(uri=f"http://{self.address}")
        self.collection = ""

    def options(self, dim: int) -> dict[str, str]:
        return {"uri": f"milvus+lite://{self.path}", "collection": self.collection}

    def sdk(self, df: Any, dim: int) -> None:
        address, collection, batch = self.address, self.collection, SDK_BATCH["milvus"]
        df.foreachPartition(lambda rows: milvus_partition(address, collection, batch, rows))

    def naive(self, df: Any, dim: int) -> None:
        address, collection = self.address, self.collection
        df.foreachPartition(lambda rows: milvus_per_row(address, collection, rows))

    @contextmanager
    def run(self, rows: int, dim: int) -> Iterator[None]:
        self.collection = f"bench_{uuid.uuid4().hex[:8]}"
        self.client.create_collection(self.collection, dimension=dim, id_type="string", max_length=64)
        try:
            yield
            self.client.flush(self.collection)
            got = self.client.get_collection_stats(self.collection)["row_count"]
            if got != rows:
                raise RuntimeError(f"{self.name}: the collection holds {got} rows, {rows} were sent")
        finally:
            self.client.drop_collection(self.collection)

    def close(self) -> None:
        from vectordb.connector.backends.milvus import lite as embedded

        self.client.close()
        embedded.stop(self.path)


# --------------------------------------------------------------------------------------------------


def run_cell(
    spark: Any, target: Any, contender: str, df: Any, rows: int, dim: int, extra: dict[str, str]
) -> Cell:
    with target.run(rows, dim):
        if contender == "vectordb":
            writer = df.write.format("vectordb").options(**target.options(dim), **extra).mode("append")
            wall, cpu = measure(spark, writer.save)
        elif contender == "foreachPartition+sdk":
            wall, cpu = measure(spark, lambda: target.sdk(df, dim))
        else:
            wall, cpu = measure(spark, lambda: target.naive(df, dim))
    if contender == "vectordb" and extra:
        contender += f" c={extra['max_concurrency']}"
    return Cell(target.name, contender, dim, rows, wall, cpu)


def environment() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "pyspark": metadata.version("pyspark"),
        "pinecone": metadata.version("pinecone"),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def report(cell: Cell) -> None:
    line = {"bench": "spark_write", **asdict(cell), "rows_per_s": round(cell.rows_per_s)}
    line |= {"mb_per_s": round(cell.mb_per_s, 1), "env": environment()}
    print(json.dumps(line), flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.bench.spark_write", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dims", default="768,1536")
    parser.add_argument("--targets", default="noop,20ms,milvus")
    parser.add_argument("--milvus-rows", type=int, default=20_000, help="Milvus Lite ingests ~1-3k rows/s")
    parser.add_argument("--naive-rows", type=int, default=5_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--contenders", default="vectordb,foreachPartition+sdk,naive")
    parser.add_argument("--reps", type=int, default=2, help="runs per cell; the fastest is reported")
    parser.add_argument(
        "--concurrency", type=int, help="vectordb's max_concurrency (default: the connector's)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    extra = {"max_concurrency": str(args.concurrency)} if args.concurrency else {}
    spark = start_session(args.partitions)
    cells: list[Cell] = []
    workdir = tempfile.mkdtemp(prefix="bench-spark-write-")
    try:
        for dim in (int(d) for d in args.dims.split(",")):
            df = cached_input(spark, args.rows, dim, args.partitions)
            if not cells:  # the first Python data source write and SDK import in a session are slow
                with open_target("noop", workdir) as warm:
                    for contender in args.contenders.split(","):
                        run_cell(spark, warm, contender, df.where("n < 1000"), 1000, dim, extra)
            for name in args.targets.split(","):
                with open_target(name, workdir) as target:
                    cells += measure_target(spark, target, df, dim, args, extra)
            df.unpersist()
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(cells)


def measure_target(
    spark: Any, target: Any, df: Any, dim: int, args: argparse.Namespace, extra: dict[str, str]
) -> list[Cell]:
    """Every contender against one target: the fastest of ``args.reps`` runs each."""
    cells = []
    for contender in args.contenders.split(","):
        rows = args.naive_rows if contender == "naive" else args.rows
        if target.name == "milvus-lite" and contender != "naive":
            rows = args.milvus_rows
        part = df if rows == args.rows else df.where(f"n < {rows}")
        try:
            runs = [run_cell(spark, target, contender, part, rows, dim, extra) for _ in range(args.reps)]
        except Exception as exc:  # one contender failing (e.g. its SDK) ends only its cell
            failed = {"bench": "spark_write", "target": target.name, "contender": contender, "dim": dim}
            print(json.dumps({**failed, "error": str(exc)[:300]}), flush=True)
            continue
        cell = min(runs, key=lambda c: c.wall_s)
        report(cell)
        cells.append(cell)
    return cells


@contextmanager
def open_target(name: str, workdir: str) -> Iterator[Any]:
    if name == "milvus":
        target = MilvusTarget(os.path.join(workdir, "milvus.db"))
        try:
            yield target
        finally:
            target.close()
        return
    delay = {"noop": 0.0, "20ms": 20.0}[name]
    with start_sink("grpc", delay) as sink:
        yield SinkTarget(name, sink)


def print_table(cells: list[Cell]) -> None:
    print(f"\n{'target':<12} {'dim':>5} {'contender':<22} {'rows':>8} {'rows/s':>9} {'MB/s':>7} {'CPU s':>7}")
    for c in cells:
        print(
            f"{c.target:<12} {c.dim:>5} {c.contender:<22} {c.rows:>8} {c.rows_per_s:>9,.0f} "
            f"{c.mb_per_s:>7.1f} {c.cpu_s:>7.1f}"
        )
    for c in cells:
        if not c.contender.startswith("vectordb"):
            continue
        sdk = next(
            (s for s in cells if (s.target, s.dim, s.contender) == (c.target, c.dim, "foreachPartition+sdk")),
            None,
        )
        if sdk is not None:
            print(
                f"{c.target} {c.dim}-d: {c.contender} / foreachPartition+sdk = {c.rows_per_s / sdk.rows_per_s:.1f}x rows/s, "
                f"{(sdk.cpu_s / sdk.rows) / (c.cpu_s / c.rows):.1f}x less CPU per row"
            )


if __name__ == "__main__":
    main()
