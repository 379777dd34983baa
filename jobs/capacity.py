"""The capacity model: how fast a load will go, and how to size it, from your own figures.

``python -m jobs.capacity --rows 1e9 --dim 768 --database pinecone+grpc --round-trip-ms 80 \\
    --executors 10 --cores 8``

Per task (one partition being written), rows/s is the smaller of what the round trip allows and
what one core can encode::

    rows/s per task ≈ min(concurrency × batch / round trip, 1e6 / CPU µs per row)

and the job is ``tasks × that``, capped by the cores (every row costs its CPU somewhere) and by
whatever the database accepts (``--server-rows-per-s``, or the budget you set with
``max_rows_per_second``). CPU per row is the client's (``jobs.bench.cpu_per_row``, measured per
database and transport at 384/768/1536 dimensions, interpolated by dimension) plus Spark's own
per-row work in the executor (reading the partition, Arrow conversion: ``SPARK_US_PER_ROW_768``,
from ``jobs.bench.spark_scaling``, scaled by the row's floats). Several vectors a row: ``--vectors N``
named dense vectors of ``--dim`` each are costed as one vector of their floats together; a
multi-vector (``--multi-vector 100x128``: vectors a row × their dimension) adds its floats at the
measured cost a float of each database's multi-vector writer (``MULTI_NS_PER_FLOAT``, from
``jobs.bench.qdrant_named`` and ``jobs.bench.weaviate_named``). Give ``--cpu-us-per-row`` to use your own
measurement instead. The constants were measured on one 2-core machine (README, "Capacity");
slower or faster cores scale them.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

__all__ = ["Plan", "main", "plan"]

# Client CPU µs per row, by target and dimension: `python -m jobs.bench.cpu_per_row` (README, "Capacity").
CLIENT_US_PER_ROW: dict[str, dict[int, float]] = {
    "pinecone+grpc": {384: 3.2, 768: 3.6, 1536: 5.4},
    "pinecone": {384: 12.4, 768: 21.5, 1536: 38.7},
    "milvus": {384: 3.5, 768: 4.6, 1536: 6.2},
    "postgresql": {384: 4.8, 768: 6.3, 1536: 9.8},
    "chroma": {384: 11.4, 768: 19.3, 1536: 23.7},
    "qdrant+grpc": {384: 3.6, 768: 4.1, 1536: 6.1},  # string ids: a UUIDv5 each
    "qdrant": {384: 12.2, 768: 23.3, 1536: 42.8},
    "weaviate": {384: 8.4, 768: 9.3, 1536: 11.3},  # gRPC; string ids: a UUIDv5 each, kept as a property
}
# Client CPU ns per float of a multi-vector, on top of the row's own cost: 5,000 rows x 100 x 128-d
# (jobs.bench.qdrant_named, jobs.bench.weaviate_named; best connector run, machine loaded).
MULTI_NS_PER_FLOAT: dict[str, float] = {
    "qdrant+grpc": 4.3,  # 55 µs a row of 12,800 floats
    "qdrant": 42.9,  # JSON: the floats' text is the floor (549 µs a row)
    "weaviate": 4.1,  # 52 µs a row
}
# The executor's own work per row (JVM read of the partition, Arrow to the Python worker), 768-d.
SPARK_US_PER_ROW_768 = 9.0  # executors 12-17 µs a row in jobs.bench.spark_scaling, less the client's 5.2
# Bulk import pays no per-request overhead, but each import is a job of its own that starts slowly:
# below this many rows an upsert load finishes first (README, "Bulk import").
IMPORT_WORTH_ROWS = 50_000_000


@dataclass(frozen=True)
class Plan:
    rows: float
    tasks: int
    per_task_rows_s: float
    task_bound_by: str  # what limits one task: the round trip or one core
    bound_by: str  # what limits the job: the task bound, the executors' cores or the database
    job_rows_s: float
    hours: float
    cpu_us_per_row: float

    def lines(self) -> list[str]:
        return [
            f"CPU per row (client + Spark): {self.cpu_us_per_row:.1f} µs",
            f"per task: {self.per_task_rows_s:,.0f} rows/s (bound by {self.task_bound_by})",
            f"job: {self.tasks} tasks → {self.job_rows_s:,.0f} rows/s (bound by {self.bound_by})",
            f"{self.rows:,.0f} rows: {self.hours:.1f} hours",
        ]


def client_us_per_row(database: str, dim: int) -> float:
    """The measured constant for ``database``, linear in the dimension between the measured points."""
    try:
        table = CLIENT_US_PER_ROW[database]
    except KeyError:
        raise SystemExit(f"--database: one of {', '.join(CLIENT_US_PER_ROW)}") from None
    dims = sorted(table)
    low = max([d for d in dims if d <= dim], default=dims[0])
    high = min([d for d in dims if d >= dim], default=dims[-1])
    if low == high:
        return table[low] * dim / low
    share = (dim - low) / (high - low)
    return table[low] + share * (table[high] - table[low])


def row_cpu_us(
    database: str, dim: int, vectors: int = 1, multi_vector: tuple[int, int] | None = None
) -> float:
    """Client + Spark CPU µs a row of ``vectors`` dense vectors of ``dim`` (0: none) and a multi-vector
    of ``multi_vector`` = (vectors, their dimension)."""
    dense = dim * vectors
    # a row without dense floats still pays its id, checks and framing: the smallest measured row's cost
    client = client_us_per_row(database, dense or min(CLIENT_US_PER_ROW.get(database, {384: 0})))
    floats = dense
    if multi_vector is not None:
        if database not in MULTI_NS_PER_FLOAT:
            raise SystemExit(
                f"--multi-vector: {database} stores no multi-vectors (those that do: {', '.join(MULTI_NS_PER_FLOAT)})"
            )
        count, size = multi_vector
        client += count * size * MULTI_NS_PER_FLOAT[database] / 1000
        floats += count * size
    return client + SPARK_US_PER_ROW_768 * floats / 768


def default_batch(database: str) -> int:
    """The backend's own default rows per request (``batch_size``), as a write would use it."""
    from vectordb.connector.backends.registry import backend_class

    return int(backend_class(database.partition("+")[0]).limits.default_rows)


def plan(
    rows: float,
    dim: int,
    database: str,
    round_trip_ms: float,
    executors: int,
    cores: int,
    *,
    concurrency: int = 4,
    batch: int | None = None,
    tasks_per_core: int = 1,
    cpu_us_per_row: float | None = None,
    server_rows_per_s: float | None = None,
    vectors: int = 1,
    multi_vector: tuple[int, int] | None = None,
) -> Plan:
    batch = batch or default_batch(database)
    cpu = cpu_us_per_row or row_cpu_us(database, dim, vectors, multi_vector)
    tasks = executors * cores * tasks_per_core
    by_round_trip = concurrency * batch / (round_trip_ms / 1000.0)
    by_cpu = 1e6 / cpu
    per_task = min(by_round_trip, by_cpu)
    task_bound = "the round trip" if by_round_trip < by_cpu else "one core's CPU"
    job, bound = tasks * per_task, task_bound
    cores_cap = executors * cores * 1e6 / cpu
    if cores_cap < job:
        job, bound = cores_cap, "the executors' cores (more tasks than cores)"
    if server_rows_per_s is not None and server_rows_per_s < job:
        job, bound = server_rows_per_s, "the database (or your budget)"
    return Plan(rows, tasks, per_task, task_bound, bound, job, rows / job / 3600.0, cpu)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=float, required=True)
    parser.add_argument("--dim", type=int, required=True)
    parser.add_argument("--database", default="pinecone+grpc", help=", ".join(CLIENT_US_PER_ROW))
    parser.add_argument("--round-trip-ms", type=float, required=True, help="one upsert request's latency")
    parser.add_argument("--executors", type=int, required=True)
    parser.add_argument("--cores", type=int, required=True, help="cores per executor")
    parser.add_argument("--concurrency", type=int, default=4, help="option max_concurrency")
    parser.add_argument("--batch", type=int, help="option batch_size (default: the database's)")
    parser.add_argument("--tasks-per-core", type=int, default=1)
    parser.add_argument("--cpu-us-per-row", type=float, help="your own measurement, client + Spark")
    parser.add_argument("--server-rows-per-s", type=float, help="what the database accepts (or your budget)")
    parser.add_argument("--vectors", type=int, default=1, help="dense vectors a row, each of --dim (0: none)")
    parser.add_argument("--multi-vector", help="a multi-vector a row: VECTORSxDIM, e.g. 100x128")
    args = parser.parse_args(argv)
    multi = None
    if args.multi_vector:
        try:
            count, size = (int(part) for part in args.multi_vector.lower().split("x"))
        except ValueError:
            raise SystemExit(
                f"--multi-vector: {args.multi_vector!r} is not VECTORSxDIM, e.g. 100x128"
            ) from None
        multi = (count, size)
    result = plan(
        args.rows,
        args.dim,
        args.database,
        args.round_trip_ms,
        args.executors,
        args.cores,
        concurrency=args.concurrency,
        batch=args.batch,
        tasks_per_core=args.tasks_per_core,
        cpu_us_per_row=args.cpu_us_per_row,
        server_rows_per_s=args.server_rows_per_s,
        vectors=args.vectors,
        multi_vector=multi,
    )
    for line in result.lines():
        print(line)
    needed = math.ceil(result.job_rows_s * result.cpu_us_per_row / 1e6)
    print(f"cores kept busy: about {needed} of {args.executors * args.cores}")
    if args.database.startswith("pinecone") and args.rows >= IMPORT_WORTH_ROWS:
        print("at this size consider write_mode=import (README, 'Bulk import'): no per-request overhead")


if __name__ == "__main__":
    main()
