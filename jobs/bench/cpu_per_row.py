"""The client's CPU per row, per database and transport, at 384, 768 and 1536 dimensions.

``python -m jobs.bench.cpu_per_row [--rows 20000] [--dims 384,768,1536] [--targets ...]``

What an executor pays to write a row, whatever the server: the client process's CPU seconds
(``time.process_time``, every thread: reading the Arrow table, checking rows, encoding, the
transport) over the rows written, for ``client.upsert(table)`` of a ``pyarrow.Table`` (``id``
string, ``values`` list<float32>, a small ``title`` metadata column) with the client's defaults
(4 requests in flight, the database's default batch). Servers run in their own processes, so
their CPU is not counted: the no-op Pinecone sinks (gRPC and REST, ``jobs/bench/sinks.py``), the
no-op Qdrant sink (gRPC and REST, ``jobs/bench/qdrant_vs_official.py``; string ids become UUIDv5), the
no-op Weaviate sink (gRPC ``BatchObjects``, ``jobs/bench/weaviate_sink.py``; UUIDv5 ids, the original
id a property), a
Milvus servicer whose ``Upsert`` only counts (``jobs.bench.milvus_upsert --serve-noop``), and
real PostgreSQL + pgvector and Chroma servers. Best of ``--reps``. Each run is checked: the
client's report says every row was written. These are the constants of the README's capacity
model (``jobs/capacity.py``).

JSON bodies (``pinecone``, ``qdrant``) have their vectors written by the native speedups where they are
installed; ``--json-writers native,python`` measures each REST target also with the native writer
switched off (orjson formats the floats; the same bytes), the lines saying which (``json_writer``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vectordb.connector import connect

from .machine import code_version, environment
from .native import python_json

__all__ = ["main"]

TARGETS = ("pinecone+grpc", "pinecone", "milvus", "postgresql", "chroma", "qdrant+grpc", "qdrant", "weaviate")


def table_of(rows: int, dim: int, seed: int = 3) -> Any:
    import pyarrow as pa

    matrix = np.random.default_rng(seed).standard_normal((rows, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    values = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), dim).cast(pa.list_(pa.float32()))
    return pa.table(
        {
            "id": [f"doc-{i}" for i in range(rows)],
            "values": values,
            "title": [f"title {i}" for i in range(rows)],
        }
    )


@contextlib.contextmanager
def target_uri(target: str, dim: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """A uri and options for ``target``, its server running for the block."""
    if target.startswith("pinecone"):
        from .sinks import start_sink

        with start_sink("grpc" if target == "pinecone+grpc" else "rest") as sink:
            yield f"{target}://{sink.address}", {"api_key": "bench"}
    elif target == "milvus":
        from .milvus_upsert import noop_server

        with tempfile.TemporaryDirectory(prefix="cpu-milvus-") as data, noop_server(data) as address:
            yield f"milvus://{address}/bench{dim}", {"create": True}
    elif target == "postgresql":
        from .pgvector_upsert import pg_server

        with pg_server(None) as server:
            yield server.conninfo + f"&table=bench{dim}", {"create": True}
    elif target == "chroma":
        from .chroma_upsert import chroma_server

        with chroma_server(None) as server:
            yield f"chroma://{server.host}:{server.port}/bench{dim}", {"create": True}
    elif target.startswith("qdrant"):
        from .qdrant_vs_official import COLLECTION, Sink

        sink = Sink(dim)
        try:
            port = sink.grpc_port if target == "qdrant+grpc" else sink.rest_port
            yield f"{target}://127.0.0.1:{port}/{COLLECTION}", {}
        finally:
            sink.close()
    elif target == "weaviate":
        from .weaviate_sink import start_sink as start_weaviate_sink

        with start_weaviate_sink() as weaviate:
            yield weaviate.uri(f"Bench{dim}"), {"grpc_port": weaviate.grpc_port, "create": True}
    else:
        raise SystemExit(f"unknown target {target!r}; known: {', '.join(TARGETS)}")


REST_TARGETS = ("pinecone", "qdrant")


def json_writer(name: str | None) -> contextlib.AbstractContextManager[None]:
    """``native``: the native JSON vector writer; ``python``: it switched off (orjson writes the floats);
    ``None``: no JSON body, whatever is installed."""
    from vectordb.connector import jsonvec

    if name is None:
        return contextlib.nullcontext()
    if name == "python":
        return python_json()
    if not jsonvec.native_encoder():
        raise SystemExit("--json-writers native: the native speedups are not installed (./connector/native)")
    return contextlib.nullcontext()


def cpu_per_row(uri: str, options: dict[str, Any], table: Any, reps: int) -> tuple[float, float]:
    """(best µs of client CPU per row, rows/s of that run)."""
    best: tuple[float, float] | None = None
    with connect(uri, **options) as client:
        client.upsert(table.slice(0, 100))  # warm-up: connection, target check, first imports
        for _ in range(reps):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            report = client.upsert(table)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            if report.written != table.num_rows:
                raise AssertionError(f"{uri}: {report.written} of {table.num_rows} rows written")
            run = (1e6 * cpu / table.num_rows, table.num_rows / wall)
            best = run if best is None or run[0] < best[0] else best
    assert best is not None
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--chroma-rows", type=int, default=4_000, help="a local Chroma takes ~1-2k rows/s")
    parser.add_argument("--dims", default="384,768,1536")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json-writers", default="native", help="native and/or python, for REST targets")
    args = parser.parse_args(argv)
    dims = [int(d) for d in args.dims.split(",")]
    env = {**environment("vectordb-connector-speedups", "orjson", "numpy"), "code": code_version("connector")}
    from vectordb.connector import speedups  # here: jobs.bench.versions imports this module with older code

    env["native_speedups"] = speedups.installed()
    print(f"client CPU µs per row (rows/s of that run); best of {args.reps}; {os.cpu_count()} cpus")
    print(f"{'target':<18}" + "".join(f"{d:>22}" for d in dims))
    run: Callable[..., tuple[float, float]] = cpu_per_row
    for target in args.targets.split(","):
        writers: list[str | None] = [*args.json_writers.split(",")] if target in REST_TARGETS else [None]
        for writer in writers:
            cells = []
            for dim in dims:
                rows = args.chroma_rows if target == "chroma" else args.rows
                with target_uri(target, dim) as (uri, options), json_writer(writer):
                    micros, rate = run(uri, options, table_of(rows, dim), args.reps)
                cells.append(f"{micros:>8.1f} µs ({rate:>8,.0f}/s)")
                line = {"bench": "cpu_per_row", "target": target, "dim": dim, "rows": rows}
                if target in REST_TARGETS:
                    line["json_writer"] = writer
                print(
                    json.dumps(
                        {**line, "cpu_us_per_row": round(micros, 2), "rows_per_s": round(rate), "env": env}
                    )
                )
            name = f"{target} ({writer})" if target in REST_TARGETS else target
            print(f"{name:<18}" + "".join(f"{c:>22}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
