"""Deletes per second, side by side: this client's ``client.delete(ids)`` and each database's official client.

``python -m jobs.bench.deletes [--rows 20000] [--chroma-rows 4000] [--batch 1000] [--reps 5] [--targets ...]``

The same ids, deleted by each contender in turn on the servers the upsert benchmarks use, each
its own process:

- ``pinecone+grpc``, ``pinecone``: the no-op Pinecone sinks (``jobs/bench/sinks.py``), which count the
  ids of ``/VectorService/Delete`` and ``POST /vectors/delete``. Official: the ``pinecone`` SDK's
  ``index.delete(ids=...)`` in batches of ``--batch`` (its most is 1,000), four in flight: gRPC with
  the SDK's own ``delete_async`` futures, REST on a pool of four threads (its parallel-upsert pattern).
- ``qdrant+grpc``, ``qdrant``: the no-op Qdrant sink (``jobs/bench/qdrant_vs_official.py``), integer
  ids. Official: ``QdrantClient.delete(collection, points_selector=PointIdsList(points=batch))`` per
  batch (``wait=True``, its default).
- ``weaviate``: the no-op Weaviate sink (``jobs/bench/weaviate_sink.py``), UUID ids. Official:
  weaviate-client v4 ``collection.data.delete_many(where=Filter.by_id().contains_any(batch))`` per
  batch (gRPC ``BatchDelete``; this client sends REST ``DELETE /v1/batch/objects``).
- ``milvus``: Milvus Lite's servicer whose ``Delete`` by keys only counts them (``jobs.bench.milvus_upsert
  --serve-noop``). Official: pymilvus ``MilvusClient.delete(collection, ids=batch)`` per batch.
- ``postgresql``: a real PostgreSQL + pgvector (``jobs/bench/pgvector_upsert.py``'s server), a table of
  the connector's layout filled with the ids before every run. Official: one psycopg connection,
  ``DELETE FROM t WHERE id = ANY(%s)`` and a commit per batch.
- ``chroma``: a real ``chroma run`` (``jobs/bench/chroma_upsert.py``'s server), a collection filled
  with the ids before every run (``--chroma-rows``: a local Chroma is slow). Official: chromadb
  ``HttpClient`` ``collection.delete(ids=batch)`` per batch.

This client: ``connect(uri, batch_size=--batch)`` with its defaults otherwise (four requests in
flight; Chroma one), ``client.delete(ids)`` of a list of ids. Every client is built and warmed up
(a delete of an id that is not there) before timing; only the delete is timed (``perf_counter``),
with the client process's CPU seconds (``process_time``, every thread) per id. Each cell is the best
of ``--reps`` runs; the contenders alternate, and which goes first alternates too, so background
load hits both alike. Every run is checked: the client acknowledged every id, and the sink counted
every id deleted, or the table or collection is empty afterwards. Output: a table, one JSON line
per cell (``"bench": "deletes"``) and one per target with the ratio connector ÷ official beside the
upsert ratio the README gives for that server (``UPSERT_RATIOS``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from vectordb.connector import connect

from .machine import code_version, environment

__all__ = ["main"]

TARGETS = ("pinecone+grpc", "pinecone", "qdrant+grpc", "qdrant", "weaviate", "milvus", "postgresql", "chroma")
API_KEY = "bench"
SETUP_DIM = 8  # vectors of the rows a real database holds before a run: deletes never read them
PINECONE_THREADS = 4  # the SDK's requests in flight, as this client's default
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
    client.delete([ids[0]])  # warm-up: channel, target check (the id is deleted again by the runs)

    def run() -> int:
        report = client.delete(ids)
        if report.deleted != len(ids) or report.failed:
            raise RuntimeError(f"connector deleted {report.deleted} of {len(ids)}: {report!r}")
        return int(report.deleted)

    return run, client


# --------------------------------------------------------------------------------------------------
# targets


@contextlib.contextmanager
def pinecone_target(name: str, rows: int, batch: int) -> Iterator[Target]:
    from .sinks import start_sink

    transport = "grpc" if name == "pinecone+grpc" else "rest"
    ids = [f"vec-{i:07d}" for i in range(rows)]
    chunks = _batches(ids, batch)
    with start_sink(transport) as sink, contextlib.ExitStack() as stack:
        run, client = _connector(f"{name}://{sink.address}", ids, batch, api_key=API_KEY)
        stack.callback(client.close)
        index: Any
        if transport == "grpc":
            from pinecone.grpc import PineconeGRPC

            index = PineconeGRPC(api_key=API_KEY, grpc_scheme="http").Index(host=sink.address)
            official = "pinecone SDK index.delete_async(ids=batch), futures collected"

            def run_official() -> int:
                for future in [index.delete_async(ids=chunk) for chunk in chunks]:
                    future.result()
                return rows
        else:
            from pinecone import Pinecone

            index = Pinecone(api_key=API_KEY).Index(host=sink.url)
            pool = ThreadPoolExecutor(PINECONE_THREADS, thread_name_prefix="sdk-delete")
            stack.callback(pool.shutdown)
            official = f"pinecone SDK index.delete(ids=batch) on {PINECONE_THREADS} threads"

            def run_official() -> int:
                for _ in pool.map(lambda chunk: index.delete(ids=chunk), chunks):
                    pass
                return rows

        stack.callback(index.close)
        index.delete(ids=ids[:1])  # warm-up
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
    chunks = _batches(ids, batch)
    sink = Sink(SETUP_DIM)
    try:
        port = sink.grpc_port if grpc else sink.rest_port
        run, client = _connector(f"{name}://127.0.0.1:{port}/{COLLECTION}", ids, batch)
        official = _official(sink, grpc)

        def run_official() -> int:
            for chunk in chunks:
                official.delete(COLLECTION, points_selector=models.PointIdsList(points=chunk), wait=True)
            return rows

        official.delete(COLLECTION, points_selector=models.PointIdsList(points=ids[:1]), wait=True)
        try:
            yield Target(
                name,
                ids,
                {"connector": run, "official": run_official},
                "qdrant-client delete(points_selector=PointIdsList(points=batch))",
                lambda: None,
                sink.deleted,
            )
        finally:
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
    chunks = _batches(ids, batch)
    with start_sink() as sink, contextlib.ExitStack() as stack:
        official = sink.client()
        stack.callback(official.close)
        collection = official.collections.create("Bench", vector_config=Configure.Vectors.self_provided())
        run, client = _connector(sink.uri("Bench"), ids, batch, grpc_port=sink.grpc_port)
        stack.callback(client.close)

        def run_official() -> int:
            deleted = 0
            for chunk in chunks:
                result = collection.data.delete_many(where=Filter.by_id().contains_any(chunk))
                if result.failed:
                    raise RuntimeError(f"weaviate-client: {result.failed} objects not deleted")
                deleted += result.successful
            return deleted

        collection.data.delete_many(where=Filter.by_id().contains_any(ids[:1]))
        yield Target(
            name,
            ids,
            {"connector": run, "official": run_official},
            "weaviate-client data.delete_many(where=Filter.by_id().contains_any(batch))",
            lambda: None,
            lambda: sink.stats().deleted,
        )


@contextlib.contextmanager
def milvus_target(name: str, rows: int, batch: int) -> Iterator[Target]:
    from pymilvus import MilvusClient

    from .milvus_upsert import noop_deleted, noop_server

    ids = [f"vec-{i:07d}" for i in range(rows)]
    chunks = _batches(ids, batch)
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

        def run_official() -> int:
            deleted = 0
            for chunk in chunks:
                deleted += int(official.delete("bench", ids=chunk)["delete_count"])
            return deleted

        official.delete("bench", ids=ids[:1])
        yield Target(
            name,
            ids,
            {"connector": run, "official": run_official},
            "pymilvus MilvusClient.delete(collection, ids=batch)",
            lambda: None,
            lambda: noop_deleted(address),
        )


@contextlib.contextmanager
def postgresql_target(name: str, rows: int, batch: int) -> Iterator[Target]:
    import psycopg

    from .pgvector_upsert import pg_server

    ids = [f"vec-{i:07d}" for i in range(rows)]
    chunks = _batches(ids, batch)
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
        single = stack.enter_context(psycopg.connect(server.conninfo))

        def run_official() -> int:
            done = 0
            with single.cursor() as cur:
                for chunk in chunks:
                    cur.execute("DELETE FROM bench WHERE id = ANY(%s)", (chunk,))
                    done += cur.rowcount
                    single.commit()
            return done

        single.execute("DELETE FROM bench WHERE id = ANY(%s)", (ids[:1],))
        single.commit()
        yield Target(
            name,
            ids,
            {"connector": run, "official": run_official},
            "psycopg DELETE ... WHERE id = ANY(%s), a commit per batch",
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
    chunks = _batches(ids, batch)
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

        run, client = _connector(f"chroma://{server.host}:{server.port}/bench", ids, batch)
        stack.callback(client.close)

        def run_official() -> int:
            for chunk in chunks:
                collection.delete(ids=chunk)
            return rows

        collection.delete(ids=ids[:1])
        yield Target(
            name,
            ids,
            {"connector": run, "official": run_official},
            "chromadb HttpClient collection.delete(ids=batch)",
            prepare,
            deleted,
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
                f"{cpu / n * 1e6:6.2f} µs CPU an id",
                file=sys.stderr,
                flush=True,
            )
    return list(cells.values())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jobs.bench.deletes", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000, help="ids a run deletes")
    parser.add_argument("--chroma-rows", type=int, default=4_000, help="ids a run deletes from Chroma")
    parser.add_argument("--batch", type=int, default=1000, help="ids a request, both contenders")
    parser.add_argument("--reps", type=int, default=5, help="runs per contender (a run takes 10-300 ms)")
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
        rows = args.chroma_rows if name == "chroma" else args.rows
        load0 = env_load()
        with target(name, rows, args.batch) as bench:
            cells = measure(bench, args.reps)
        results.append((bench, cells, max(load0, env_load())))
    print(
        f"\ndeletes: ids/s, best of {args.reps} (client CPU µs an id); batch {args.batch}; "
        f"load {env['load_1m']} at the start on {env['cpus']} cpus"
    )
    print(f"{'target':<14} {'ids':>6} {'connector':>22} {'official':>22} {'ratio':>6} {'upsert ratio':>13}")
    lines = []
    for bench, cells, load in results:
        n = len(bench.ids)
        by = {c.contender: c for c in cells}
        rate = {k: n / c.walls_s[c.best()] for k, c in by.items()}
        micros = {k: c.cpus_s[c.best()] / n * 1e6 for k, c in by.items()}
        ratio = rate["connector"] / rate["official"]
        upsert = UPSERT_RATIOS.get(bench.name)
        cells_text = [f"{rate[k]:>12,.0f} ({micros[k]:5.1f} µs)" for k in ("connector", "official")]
        print(
            f"{bench.name:<14} {n:>6} {cells_text[0]:>22} {cells_text[1]:>22} {ratio:>5.2f}x {upsert or 0:>12.2f}x"
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
                    "ids_per_s": round(n / c.walls_s[i]),
                    "cpu_us_per_id": round(c.cpus_s[i] / n * 1e6, 2),
                    "wall_s": round(c.walls_s[i], 4),
                    "ids_per_s_each_rep": [round(n / w) for w in c.walls_s],
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
                "cpu_ratio": round(micros["connector"] / micros["official"], 2),
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
