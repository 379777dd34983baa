"""Deletes per second, side by side: this client's ``client.delete(ids)`` and each database's official client.

``python -m jobs.bench.deletes [--rows 200000] [--pg-rows 100000] [--chroma-rows 10000] [--batch 1000]
[--reps 5] [--targets ...]``

Steady state, not start-up: a run deletes 200,000 ids from a no-op sink (0.1-1 s), 100,000 from a real
PostgreSQL and 10,000 from a real Chroma (each run 1 s or more), so the fixed costs of a run (a request's
round trip, a thread's wake-up) are a small part of it. Client construction, thread start and first
connections are outside the timed region for both contenders: each is built, then warmed up with one
untimed delete of ``--batch`` ids on every one of its connections, before any timing.

The same ids, deleted by each contender in turn on the servers the upsert benchmarks use, each
its own process:

- ``pinecone+grpc``, ``pinecone``: the no-op Pinecone sinks (``jobs/bench/sinks.py``), which count the
  ids of ``/VectorService/Delete`` and ``POST /vectors/delete``. Official: the ``pinecone`` SDK's
  ``index.delete`` in batches of ``--batch`` (its most is 1,000): gRPC with the SDK's own
  ``delete_async`` futures, at most four pending; REST on a pool of four threads (its parallel-upsert
  pattern).
- ``qdrant+grpc``, ``qdrant``: the no-op Qdrant sink (``jobs/bench/qdrant_vs_official.py``), integer
  ids. Official: ``QdrantClient.delete(collection, points_selector=PointIdsList(points=batch))`` per
  batch (``wait=True``, its default) on a pool of four threads (one client: it is thread-safe).
- ``weaviate``: the no-op Weaviate sink (``jobs/bench/weaviate_sink.py``), UUID ids. Official:
  weaviate-client v4 ``collection.data.delete_many(where=Filter.by_id().contains_any(batch))`` per
  batch (gRPC ``BatchDelete``; this client sends REST ``DELETE /v1/batch/objects``) on four threads.
- ``milvus``: Milvus Lite's servicer whose ``Delete`` by keys only counts them (``jobs.bench.milvus_upsert
  --serve-noop``). Official: pymilvus ``MilvusClient.delete(collection, ids=batch)`` per batch on four
  threads.
- ``postgresql``: a real PostgreSQL + pgvector (``jobs/bench/pgvector_upsert.py``'s server), a table of
  the connector's layout filled with the ids before every run. Official: psycopg,
  ``DELETE FROM t WHERE id = ANY(%s)`` and a commit per batch, four threads with a connection each
  (this client's four pooled connections).
- ``chroma``: a real ``chroma run`` (``jobs/bench/chroma_upsert.py``'s server), a collection filled
  with the ids before every run. Official: chromadb ``HttpClient`` ``collection.delete(ids=batch)`` per
  batch, one at a time (this client's default for Chroma is one request in flight).

This client: ``connect(uri, batch_size=--batch)`` with its defaults otherwise (four requests in
flight; Chroma one), ``client.delete(ids)`` of a list of ids. The official contenders get the same
batch size and the same requests in flight (``CONCURRENCY``); cutting the ids into batches is inside
their timed region, as it is inside this client's. Only the delete is timed (``perf_counter``), with
the client process's CPU seconds (``process_time``, every thread) per id. Each cell is the best of
``--reps`` runs (shortest wall time, with the CPU of that run), and every run's figures are printed and
kept in the JSON line; the contenders alternate, and which goes first alternates too, so background
load hits both alike. Every run is checked: the client acknowledged every id, and the sink counted
every id deleted, or the table or collection is empty afterwards. Output: a table, one JSON line per
cell (``"bench": "deletes"``) and one per target with the ratio connector ÷ official beside the upsert
ratio the README gives for that server (``UPSERT_RATIOS``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from vectordb.connector import connect

from .machine import code_version, environment

__all__ = ["main"]

TARGETS = ("pinecone+grpc", "pinecone", "qdrant+grpc", "qdrant", "weaviate", "milvus", "postgresql", "chroma")
API_KEY = "bench"
SETUP_DIM = 8  # vectors of the rows a real database holds before a run: deletes never read them
CONCURRENCY = 4  # requests in flight, both contenders: this client's default (max_concurrency)
CHROMA_CONCURRENCY = 1  # this client's default for Chroma
# connector ÷ official upsert throughput on the same server, as README "Performance" (Qdrant:
# jobs/bench/results/qdrant_vs_official.jsonl, its last run, connector-c4 ÷ the official best)
UPSERT_RATIOS = {
    "pinecone+grpc": 2.22,
    "pinecone": 1.37,
    "qdrant+grpc": 7.27,
    "qdrant": 5.94,
    "weaviate": 6.8,
    "milvus": 5.4,
    "postgresql": 4.2,
    "chroma": 1.7,
}


@dataclass(slots=True)
class Target:
    """One server with its two contenders, each a timed delete of every id returning the ids acknowledged."""

    name: str
    ids: list[Any]
    contenders: dict[str, Callable[[], int]]
    official: str  # what the official contender calls
    prepare: Callable[[], None]  # untimed, before every run: the rows to delete are there
    deleted: Callable[[], int]  # the ids the server has deleted so far (a sink's count, or rows gone)
    concurrency: int = CONCURRENCY


@dataclass(slots=True)
class Cell:
    target: str
    contender: str
    walls_s: list[float] = field(default_factory=list)
    cpus_s: list[float] = field(default_factory=list)

    def best(self) -> int:
        return min(range(len(self.walls_s)), key=self.walls_s.__getitem__)


def _batches(ids: list[Any], size: int) -> list[list[Any]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def _connector(uri: str, ids: list[Any], batch: int, **options: Any) -> tuple[Callable[[], int], Any]:
    client = connect(uri, batch_size=batch, **options)
    # warm-up: the channel or every pooled connection, the worker threads, the target check (the ids
    # are deleted again by the runs)
    concurrency = options.get("max_concurrency", CONCURRENCY)
    client.delete(ids[: batch * concurrency * 2])

    def run() -> int:
        report = client.delete(ids)
        if report.deleted != len(ids) or report.failed:
            raise RuntimeError(f"connector deleted {report.deleted} of {len(ids)}: {report!r}")
        return int(report.deleted)

    return run, client


class Pool:
    """The official contenders' requests in flight: ``CONCURRENCY`` threads, each calling the client's delete
    for one batch at a time, as the SDKs' own parallel-upsert recipes do. ``warm`` runs one call on every
    thread at once (each thread started, each thread's connection open) before any timing."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="official-delete")

    def run(self, call: Callable[[list[Any]], int], ids: list[Any], batch: int) -> int:
        chunks = _batches(ids, batch)
        if self.threads == 1:
            return sum(call(chunk) for chunk in chunks)
        return sum(self.executor.map(call, chunks))

    def warm(self, call: Callable[[list[Any]], int], ids: list[Any], batch: int) -> None:
        barrier = threading.Barrier(self.threads)
        chunks = _batches(ids[: batch * self.threads], batch)

        def first(chunk: list[Any]) -> int:
            barrier.wait(timeout=60)  # every thread holds one: the pool has started them all
            return call(chunk)

        list(self.executor.map(first, chunks))

    def close(self) -> None:
        self.executor.shutdown()


def _windowed(submit: Callable[[list[Any]], Future[Any]], ids: list[Any], batch: int, window: int) -> int:
    """Futures of ``submit`` per batch, at most ``window`` pending: the oldest is awaited before the next."""
    pending: deque[Future[Any]] = deque()
    for chunk in _batches(ids, batch):
        if len(pending) >= window:
            pending.popleft().result()
        pending.append(submit(chunk))
    while pending:
        pending.popleft().result()
    return len(ids)


# --------------------------------------------------------------------------------------------------
# targets


@contextlib.contextmanager
def pinecone_target(name: str, rows: int, batch: int) -> Iterator[Target]:
    from .sinks import start_sink

    transport = "grpc" if name == "pinecone+grpc" else "rest"
    ids = [f"vec-{i:07d}" for i in range(rows)]
    with start_sink(transport) as sink, contextlib.ExitStack() as stack:
        run, client = _connector(f"{name}://{sink.address}", ids, batch, api_key=API_KEY)
        stack.callback(client.close)
        index: Any
        if transport == "grpc":
            from pinecone.grpc import PineconeGRPC

            index = PineconeGRPC(api_key=API_KEY, grpc_scheme="http").Index(host=sink.address)
            official = f"pinecone SDK index.delete_async(ids=batch), at most {CONCURRENCY} futures pending"

            def run_official() -> int:
                return _windowed(lambda chunk: index.delete_async(ids=chunk), ids, batch, CONCURRENCY)

            run_official()  # warm-up: the channel and its streams
        else:
            from pinecone import Pinecone

            index = Pinecone(api_key=API_KEY).Index(host=sink.url)
            pool = Pool(CONCURRENCY)
            stack.callback(pool.close)
            official = f"pinecone SDK index.delete(ids=batch) on {CONCURRENCY} threads"

            def delete(chunk: list[Any]) -> int:
                index.delete(ids=chunk)
                return len(chunk)

            def run_official() -> int:
                return pool.run(delete, ids, batch)

            pool.warm(delete, ids, batch)
        stack.callback(index.close)
        yield Target(
            name,
            ids,
            {"connector": run, "official": run_official},
            official,
            lambda: None,
            lambda: sink.stats().deleted,
        )


@contextlib.contextmanager
def qdrant_target(name: str, rows: int, batch: int) -> Iterator[Target]:
    from qdrant_client import models

    from .qdrant_vs_official import COLLECTION, Sink, _official

    grpc = name == "qdrant+grpc"
    ids: list[Any] = list(range(rows))
    sink = Sink(SETUP_DIM)
    try:
        port = sink.grpc_port if grpc else sink.rest_port
        run, client = _connector(f"{name}://127.0.0.1:{port}/{COLLECTION}", ids, batch)
        official = _official(sink, grpc)
        pool = Pool(CONCURRENCY)

        def delete(chunk: list[Any]) -> int:
            official.delete(COLLECTION, points_selector=models.PointIdsList(points=chunk), wait=True)
            return len(chunk)

        pool.warm(delete, ids, batch)
        try:
            yield Target(
                name,
                ids,
                {"connector": run, "official": lambda: pool.run(delete, ids, batch)},
                f"qdrant-client delete(points_selector=PointIdsList(points=batch)) on {CONCURRENCY} threads",
                lambda: None,
                sink.deleted,
            )
        finally:
            pool.close()
            client.close()
            official.close()
    finally:
        sink.close()


@contextlib.contextmanager
def weaviate_target(name: str, rows: int, batch: int) -> Iterator[Target]:
    from weaviate.classes.config import Configure
    from weaviate.classes.query import Filter

    from .weaviate_sink import start_sink

    ids = [str(uuid.UUID(int=i + 1)) for i in range(rows)]
    with start_sink() as sink, contextlib.ExitStack() as stack:
        official = sink.client()
        stack.callback(official.close)
        collection = official.collections.create("Bench", vector_config=Configure.Vectors.self_provided())
        run, client = _connector(sink.uri("Bench"), ids, batch, grpc_port=sink.grpc_port)
        stack.callback(client.close)
        pool = Pool(CONCURRENCY)
        stack.callback(pool.close)

        def delete(chunk: list[Any]) -> int:
            result = collection.data.delete_many(where=Filter.by_id().contains_any(chunk))
            if result.failed:
                raise RuntimeError(f"weaviate-client: {result.failed} objects not deleted")
            return int(result.successful)

        pool.warm(delete, ids, batch)
        yield Target(
            name,
            ids,
            {"connector": run, "official": lambda: pool.run(delete, ids, batch)},
            f"weaviate-client data.delete_many(where=Filter.by_id().contains_any(batch)) on {CONCURRENCY} threads",
            lambda: None,
            lambda: sink.stats().deleted,
        )


@contextlib.contextmanager
def milvus_target(name: str, rows: int, batch: int) -> Iterator[Target]:
    from pymilvus import MilvusClient

    from .milvus_upsert import noop_deleted, noop_server

    ids = [f"vec-{i:07d}" for i in range(rows)]
    with (
        tempfile.TemporaryDirectory(prefix="deletes-milvus-") as data,
        noop_server(data) as address,
        contextlib.ExitStack() as stack,
    ):
        official = MilvusClient(uri=f"http://{address}")
        stack.callback(official.close)
        official.create_collection("bench", dimension=SETUP_DIM, id_type="string", max_length=64)
        run, client = _connector(f"milvus://{address}/bench", ids, batch)
        stack.callback(client.close)
        pool = Pool(CONCURRENCY)
        stack.callback(pool.close)

        def delete(chunk: list[Any]) -> int:
            return int(official.delete("bench", ids=chunk)["delete_count"])

        pool.warm(delete, ids, batch)
        yield Target(
            name,
            ids,
            {"connector": run, "official": lambda: pool.run(delete, ids, batch)},
            f"pymilvus MilvusClient.delete(collection, ids=batch) on {CONCURRENCY} threads",
            lambda: None,
            lambda: noop_deleted(address),
        )


@contextlib.contextmanager
def postgresql_target(name: str, rows: int, batch: int) -> Iterator[Target]:
    import psycopg

    from .pgvector_upsert import pg_server

    ids = [f"vec-{i:07d}" for i in range(rows)]
    with (
        pg_server(None) as server,
        psycopg.connect(server.conninfo, autocommit=True) as admin,
        contextlib.ExitStack() as stack,
    ):
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
        admin.execute(
            f"CREATE TABLE bench (id text PRIMARY KEY, embedding vector({SETUP_DIM}), metadata jsonb)"
        )
        gone = [0]

        def prepare() -> None:
            admin.execute(
                "INSERT INTO bench SELECT 'vec-' || lpad(i::text, 7, '0'), "
                f"array_fill(0.5, ARRAY[{SETUP_DIM}])::vector, NULL FROM generate_series(0, %s) AS i",
                (rows - 1,),
            )
            admin.execute("VACUUM ANALYZE bench")
            gone[0] = rows

        def deleted() -> int:
            left = admin.execute("SELECT count(*) FROM bench").fetchone()
            return gone[0] - int(left[0] if left else 0)

        run, client = _connector(f"{server.conninfo}&table=bench", ids, batch)
        stack.callback(client.close)
        local = (
            threading.local()
        )  # a connection a thread, as this client's pool holds one a request in flight
        connections: list[Any] = []
        stack.callback(lambda: [conn.close() for conn in connections])

        def delete(chunk: list[Any]) -> int:
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = local.conn = psycopg.connect(server.conninfo)
                connections.append(conn)
            with conn.cursor() as cur:
                cur.execute("DELETE FROM bench WHERE id = ANY(%s)", (chunk,))
                done = cur.rowcount
            conn.commit()
            return done

        pool = Pool(CONCURRENCY)
        stack.callback(pool.close)
        pool.warm(delete, ids, batch)  # the table is empty yet: nothing is deleted
        yield Target(
            name,
            ids,
            {"connector": run, "official": lambda: pool.run(delete, ids, batch)},
            f"psycopg DELETE ... WHERE id = ANY(%s), a commit per batch, {CONCURRENCY} threads with a "
            "connection each",
            prepare,
            deleted,
        )


@contextlib.contextmanager
def chroma_target(name: str, rows: int, batch: int) -> Iterator[Target]:
    import chromadb
    import numpy as np
    from chromadb.config import Settings

    from .chroma_upsert import chroma_server

    ids = [f"vec-{i:07d}" for i in range(rows)]
    vectors = np.full((rows, SETUP_DIM), 0.5, dtype=np.float32)
    with chroma_server(None) as server, contextlib.ExitStack() as stack:
        chroma = chromadb.HttpClient(
            host=server.host, port=server.port, settings=Settings(anonymized_telemetry=False)
        )
        stack.callback(chroma.close)  # type: ignore[attr-defined]  # HttpClient has it
        collection = chroma.create_collection("bench")
        gone = [0]

        def prepare() -> None:
            for start in range(0, rows, 1000):
                collection.add(ids=ids[start : start + 1000], embeddings=vectors[start : start + 1000])
            gone[0] = rows

        def deleted() -> int:
            return gone[0] - collection.count()

        run, client = _connector(
            f"chroma://{server.host}:{server.port}/bench", ids, batch, max_concurrency=CHROMA_CONCURRENCY
        )
        stack.callback(client.close)
        pool = Pool(CHROMA_CONCURRENCY)
        stack.callback(pool.close)

        def delete(chunk: list[Any]) -> int:
            collection.delete(ids=chunk)
            return len(chunk)

        pool.warm(delete, ids, batch)
        yield Target(
            name,
            ids,
            {"connector": run, "official": lambda: pool.run(delete, ids, batch)},
            "chromadb HttpClient collection.delete(ids=batch), one at a time",
            prepare,
            deleted,
            CHROMA_CONCURRENCY,
        )


def target(name: str, rows: int, batch: int) -> contextlib.AbstractContextManager[Target]:
    if name.startswith("pinecone"):
        return pinecone_target(name, rows, batch)
    if name.startswith("qdrant"):
        return qdrant_target(name, rows, batch)
    starters = {
        "weaviate": weaviate_target,
        "milvus": milvus_target,
        "postgresql": postgresql_target,
        "chroma": chroma_target,
    }
    if name not in starters:
        raise SystemExit(f"unknown target {name!r}; known: {', '.join(TARGETS)}")
    return starters[name](name, rows, batch)


# --------------------------------------------------------------------------------------------------
# measuring


def measure(bench: Target, reps: int) -> list[Cell]:
    """Best of ``reps`` per contender, alternating, each run checked at the server."""
    n = len(bench.ids)
    cells = {name: Cell(bench.name, name) for name in bench.contenders}
    order = list(bench.contenders)
    for rep in range(reps):
        for name in order if rep % 2 == 0 else order[::-1]:
            bench.prepare()
            gc.collect()
            before = bench.deleted()
            wall0, cpu0 = time.perf_counter(), time.process_time()
            acknowledged = bench.contenders[name]()
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            seen = bench.deleted() - before
            if acknowledged != n or seen != n:
                raise RuntimeError(
                    f"{bench.name} {name}: {n} ids, {acknowledged} acknowledged by the client, "
                    f"{seen} deleted at the server"
                )
            cells[name].walls_s.append(wall)
            cells[name].cpus_s.append(cpu)
            print(
                f"  rep {rep + 1}/{reps} {bench.name:<14} {name:<10} {n / wall:>10,.0f} ids/s  "
                f"{cpu / n * 1e6:6.2f} µs CPU an id  ({wall:.3f} s, load {env_load()})",
                file=sys.stderr,
                flush=True,
            )
    return list(cells.values())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jobs.bench.deletes", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="ids a run deletes from a no-op sink")
    parser.add_argument("--pg-rows", type=int, default=100_000, help="ids a run deletes from PostgreSQL")
    parser.add_argument("--chroma-rows", type=int, default=10_000, help="ids a run deletes from Chroma")
    parser.add_argument("--batch", type=int, default=1000, help="ids a request, both contenders")
    parser.add_argument("--reps", type=int, default=5, help="runs per contender (a run takes 0.1-3 s)")
    parser.add_argument("--targets", default=",".join(TARGETS))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the official clients' notes on their own versions
    env = environment(
        "vectordb-connector",
        "pinecone",
        "qdrant-client",
        "weaviate-client",
        "pymilvus",
        "milvus-lite",
        "psycopg",
        "chromadb",
        "grpcio",
        "httpx",
    )
    env["code"] = code_version("connector")
    # where vectordb.connector was imported from: the checkout, or a snapshot of a commit put first on
    # PYTHONPATH (then "code" describes the checkout, not what ran)
    env["connector_from"] = os.path.dirname(os.path.realpath(connect.__code__.co_filename))
    results: list[tuple[Target, list[Cell], float]] = []
    for name in args.targets.split(","):
        rows = {"chroma": args.chroma_rows, "postgresql": args.pg_rows}.get(name, args.rows)
        load0 = env_load()
        with target(name, rows, args.batch) as bench:
            cells = measure(bench, args.reps)
        results.append((bench, cells, max(load0, env_load())))
    print(
        f"\ndeletes: ids/s, best of {args.reps} (client CPU µs an id); batch {args.batch}; "
        f"load {env['load_1m']} at the start on {env['cpus']} cpus"
    )
    print(
        f"{'target':<14} {'ids':>7} {'connector':>22} {'official':>22} {'ratio':>6} {'CPU ratio':>9} "
        f"{'upsert ratio':>13}"
    )
    lines = []
    for bench, cells, load in results:
        n = len(bench.ids)
        by = {c.contender: c for c in cells}
        rate = {k: n / c.walls_s[c.best()] for k, c in by.items()}
        micros = {k: c.cpus_s[c.best()] / n * 1e6 for k, c in by.items()}
        ratio = rate["connector"] / rate["official"]
        upsert = UPSERT_RATIOS.get(bench.name)
        cells_text = [f"{rate[k]:>12,.0f} ({micros[k]:5.1f} µs)" for k in ("connector", "official")]
        cpu_ratio = micros["connector"] / micros["official"]
        print(
            f"{bench.name:<14} {n:>7} {cells_text[0]:>22} {cells_text[1]:>22} {ratio:>5.2f}x "
            f"{cpu_ratio:>8.2f}x {upsert or 0:>12.2f}x"
        )
        for c in cells:
            i = c.best()
            lines.append(
                {
                    "bench": "deletes",
                    "target": bench.name,
                    "contender": c.contender,
                    "calls": "client.delete(ids)" if c.contender == "connector" else bench.official,
                    "ids": n,
                    "batch": args.batch,
                    "in_flight": bench.concurrency,
                    "ids_per_s": round(n / c.walls_s[i]),
                    "cpu_us_per_id": round(c.cpus_s[i] / n * 1e6, 3),
                    "wall_s": round(c.walls_s[i], 4),
                    "ids_per_s_each_rep": [round(n / w) for w in c.walls_s],
                    "cpu_us_per_id_each_rep": [round(cpu / n * 1e6, 3) for cpu in c.cpus_s],
                    "load_1m_max": load,
                    "statistic": "best of reps (shortest wall time); CPU of that run",
                    "env": env,
                }
            )
        lines.append(
            {
                "bench": "deletes_ratio",
                "target": bench.name,
                "ratio": round(ratio, 2),
                "cpu_ratio": round(cpu_ratio, 2),
                "upsert_ratio": upsert,
                "at_least_upsert": None if upsert is None else ratio >= upsert,
            }
        )
    for line in lines:
        print(json.dumps(line))


def env_load() -> float:
    return round(os.getloadavg()[0], 2)


if __name__ == "__main__":
    main()
