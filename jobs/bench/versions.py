"""One workload on two commits of the client, side by side in one run: what a change to the write path cost.

``python -m jobs.bench.versions [--base REV] [--head REV] [--targets pinecone+grpc,pinecone,embed]
[--dim 768] [--rows 20000] [--rounds 3] [--concurrency 4] [--batch 0]``

Each commit's ``connector/`` is taken from git (``git archive``; ``--head`` defaults to the working
tree) and put first on ``PYTHONPATH`` as ``vectordb.connector`` of a process that runs one
measurement; the servers and the workload are this checkout's (``jobs/bench``), the same for both.
The two versions alternate, round after round, so the machine's load falls on both alike; each
reports its best round. A measurement checks which code it ran (the module's file) and that every
row was written (the report says so) or embedded (the vectors are the server's).

Targets: ``spark`` (``df.write.format("vectordb")`` on ``local[2]``) and ``beam`` (``WriteToVectorDB``
on the in-memory runner), both into the no-op Pinecone gRPC sink, with the CPU of every process of
the engine; the no-op sinks of ``cpu_per_row`` (``pinecone+grpc``, ``pinecone``, ``qdrant+grpc``,
``qdrant``, ``weaviate``, ``milvus``: ``client.upsert`` of an Arrow table) and ``embed``
(``vectordb.connector.embed`` of ROWS short texts against the project's embeddings server, with
``--embed-delay-ms`` added to each reply, so requests in flight matter).

The default ``--base`` is the commit before the one dispatcher (``connector/dispatch.py``), which the
upsert engine and the embedding client now share.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from .machine import environment

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BASE = "4865d94^"  # before "One dispatcher for anything sent in batches"


def export(rev: str, into: Path) -> Path:
    """The client of ``rev`` (``connector/``, ``spark/``, ``beam/``) as ``into/vectordb/...`` (and
    ``into/pyspark_vectordb``); ``into`` goes first on ``PYTHONPATH``. The path of its ``connector``."""
    archive = subprocess.run(
        ["git", "archive", rev, "connector", "spark", "beam"], cwd=ROOT, capture_output=True, check=True
    )
    package = into / "vectordb"
    package.mkdir(parents=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(package, filter="data")
    if (package / "spark" / "pyspark_vectordb").is_dir():
        (package / "spark" / "pyspark_vectordb").rename(into / "pyspark_vectordb")
    return package / "connector"


def commit_of(rev: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def run_one(code: Path | None, args: argparse.Namespace, target: str) -> dict[str, Any]:
    """One measurement in its own process, on the client in ``code`` (``None``: the working tree)."""
    path = [str(code.parent.parent)] if code else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT)])}
    command = [sys.executable, "-m", "jobs.bench.versions", "--measure", target]
    command += ["--dim", str(args.dim), "--rows", str(args.rows), "--concurrency", str(args.concurrency)]
    command += ["--batch", str(args.batch), "--embed-delay-ms", str(args.embed_delay_ms)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{target} on {code or 'the working tree'} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    expected = str(code.resolve()) if code else str(ROOT / "connector")
    if not result["code"].startswith(expected):
        raise AssertionError(f"ran the client in {result['code']}, not in {expected}")
    return result


def measure(target: str, args: argparse.Namespace) -> dict[str, Any]:
    """Runs in the child: one upsert (or embedding) of the workload, after a warm-up, timed."""
    import vectordb.connector

    code = str(
        Path(vectordb.connector.__file__).resolve().parent
    )  # the link tree of an editable install: its files
    if target == "embed":
        return {"code": code, **measure_embed(args)}
    if target == "beam":
        return {"code": code, **measure_beam(args)}
    if target == "spark":
        return measure_spark(args)
    from .cpu_per_row import table_of, target_uri

    table = table_of(args.rows, args.dim)
    with target_uri(target, args.dim) as (uri, options):
        options = {**options, "max_concurrency": args.concurrency}
        if args.batch:
            options["batch_size"] = args.batch
        with vectordb.connector.connect(uri, **options) as client:
            client.upsert(table.slice(0, 100))  # warm-up: connection, target check, first imports
            cpu0, wall0 = time.process_time(), time.perf_counter()
            report = client.upsert(table)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if report.written != table.num_rows:
        raise AssertionError(f"{target}: {report.written} of {table.num_rows} rows written")
    return {"code": code, "cpu_us_per_row": 1e6 * cpu / table.num_rows, "rows_per_s": table.num_rows / wall}


def measure_embed(args: argparse.Namespace) -> dict[str, Any]:
    from vectordb.connector import embed

    from .embed_throughput import KEY, MODEL, check, server, texts_of

    texts = texts_of(args.rows)
    with server(args.embed_delay_ms) as url:
        batch = args.batch or 64
        embed(texts[:batch], url=url, model=MODEL, api_key=KEY, batch_size=batch)  # warm-up
        cpu0, wall0 = time.process_time(), time.perf_counter()
        vectors = embed(
            texts, url=url, model=MODEL, api_key=KEY, batch_size=batch, max_concurrency=args.concurrency
        )
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    check(vectors, texts, "connector")
    return {"cpu_us_per_row": 1e6 * cpu / len(texts), "rows_per_s": len(texts) / wall}


def measure_beam(args: argparse.Namespace) -> dict[str, Any]:
    """``WriteToVectorDB`` of numpy rows on the in-memory runner into the no-op Pinecone gRPC sink
    (``beam_write``'s connector cell); this process's CPU is the runner's and the sink's client's."""
    from .beam_write import PER_SHARD, Cell, Settings, run_once
    from .sinks import start_sink

    rows = max(PER_SHARD, args.rows // PER_SHARD * PER_SHARD)
    batch = args.batch or 500
    settings = Settings(
        rows,
        args.dim,
        1,
        batch,
        args.concurrency,
        None,
        (("noop", 0.0),),
        ("numpy",),
        ("connector",),
        "fnapi",
    )
    cell = Cell("noop", "numpy", "connector")
    with start_sink("grpc", 0.0) as sink:
        run_once(cell, settings, sink)  # warm-up: the runner's and the client's first imports
        run_once(cell, settings, sink)
    return {"cpu_us_per_row": 1e6 * cell.cpus_s[-1] / rows, "rows_per_s": rows / cell.walls_s[-1]}


def measure_spark(args: argparse.Namespace) -> dict[str, Any]:
    """``df.write.format("vectordb")`` on ``local[2]`` into the no-op Pinecone gRPC sink
    (``spark_write``'s cell); CPU of the driver's JVM and every Python worker. The client that ran is
    the executors' (checked: a task reports the file of its ``vectordb.connector``)."""
    from .sinks import start_sink
    from .spark_write import SinkTarget, cached_input, run_cell, start_session

    spark = start_session(2)
    try:
        code = spark.sparkContext.parallelize([0], 1).map(lambda _: _connector_dir()).collect()[0]
        df = cached_input(spark, args.rows, args.dim, 2)
        with start_sink("grpc", 0.0) as sink:
            target = SinkTarget("noop", sink)
            extra = {"max_concurrency": str(args.concurrency)}
            run_cell(spark, target, "vectordb", df, args.rows, args.dim, extra)  # warm-up: workers, imports
            cell = run_cell(spark, target, "vectordb", df, args.rows, args.dim, extra)
    finally:
        spark.stop()
    return {
        "code": code,
        "cpu_us_per_row": 1e6 * cell.cpu_s / args.rows,
        "rows_per_s": args.rows / cell.wall_s,
    }


def _connector_dir() -> str:
    import vectordb.connector

    return str(Path(vectordb.connector.__file__).resolve().parent)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--base", default=DEFAULT_BASE)
    parser.add_argument("--head", default=None, help="a commit; default: the working tree")
    parser.add_argument("--targets", default="pinecone+grpc,pinecone,qdrant+grpc,embed")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--batch", type=int, default=0, help="0: the database's default (64 for embed)")
    parser.add_argument("--embed-delay-ms", type=float, default=5.0)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-versions-") as tmp:
        base = export(args.base, Path(tmp) / "base")
        head = export(args.head, Path(tmp) / "head") if args.head else None
        names = {"base": commit_of(args.base), "head": commit_of(args.head) if args.head else "working tree"}
        print(
            f"base {names['base']} vs head {names['head']}: {args.rows} rows, {args.dim}-d, "
            f"{args.concurrency} in flight, best of {args.rounds} alternating rounds"
        )
        print(
            f"{'target':<15}{'base rows/s':>13}{'head rows/s':>13}{'ratio':>7}"
            f"{'base µs/row':>13}{'head µs/row':>13}{'ratio':>7}"
        )
        env = environment("vectordb-connector-speedups", "grpcio", "httpx", "numpy")
        for target in args.targets.split(","):
            best: dict[str, dict[str, Any]] = {}
            for _ in range(args.rounds):
                for name, code in (("base", base), ("head", head)):
                    run = run_one(code, args, target)
                    if name not in best or run["cpu_us_per_row"] < best[name]["cpu_us_per_row"]:
                        best[name] = run
            b, h = best["base"], best["head"]
            print(
                f"{target:<15}{b['rows_per_s']:>13,.0f}{h['rows_per_s']:>13,.0f}"
                f"{h['rows_per_s'] / b['rows_per_s']:>7.2f}{b['cpu_us_per_row']:>13.1f}"
                f"{h['cpu_us_per_row']:>13.1f}{h['cpu_us_per_row'] / b['cpu_us_per_row']:>7.2f}",
                flush=True,
            )
            line = {
                "bench": "versions",
                "target": target,
                "dim": args.dim,
                "rows": args.rows,
                "concurrency": args.concurrency,
                **{f"{k}_commit": v for k, v in names.items()},
                **{f"{k}_{m}": round(best[k][m], 2) for k in best for m in ("rows_per_s", "cpu_us_per_row")},
                "env": env,
            }
            print(json.dumps(line))


if __name__ == "__main__":
    main()
