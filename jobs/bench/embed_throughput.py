"""Embedding throughput, side by side: this client vs ``AsyncOpenAI`` vs Baseten's Performance Client.

``python -m jobs.bench.embed_throughput [--rows 20000] [--batch 64] [--concurrency 32]
[--delays-ms 0,50] [--reps 1] [--no-pipeline]`` embeds ROWS short texts (about 20 words each) with a
768-dimensional model served by the project's OpenAI-compatible server (``tests/servers/embeddings.py``),
started in its own process (an asyncio loop, uvloop where installed) for each added latency, so its
CPU is not the client's. Contenders, at the same batch size and requests in flight:

- ``connector``: ``vectordb.connector.embed(texts, url, model, batch_size, max_concurrency)``: base64
  replies decoded into one float32 matrix, sender threads; the native decoder where it is installed
  (Python's lock released, several replies at once);
- ``connector-msgspec``: the same with the native decoder switched off (msgspec, one reply at a time);
- ``async-openai``: ``AsyncOpenAI.embeddings.create`` per batch, ``asyncio.gather`` under a semaphore of
  the same concurrency (the pattern Baseten's article measures against); the client asks for base64
  and hands back lists of floats, made into one float32 matrix at the end (timed: it is what an upsert
  needs);
- ``baseten``: ``PerformanceClient.embed`` with ``RequestProcessingPreference(batch_size,
  max_concurrent_requests)`` (and no character limit below the batch's: the same requests), float
  replies decoded in Rust, then ``.numpy()`` (timed).

Each is timed with ``perf_counter`` and the client process's CPU seconds (``getrusage``: every thread,
Rust's included), reported per embedding; every result is checked against the vectors the server must
derive (a sample of rows, exactly). The server's own CPU over the run is reported too: near one core
means the server, not the client, was the bound (it says so).

First, decoding alone: ``--batch``-input replies decoded on one thread and on two, with the native
decoder (Python's lock released: two threads should take about half the wall time) and with msgspec.

``--pipeline`` (on by default) then runs text into Milvus Lite at each latency: the embedding alone (the
connector), the upsert of the same vectors alone, and the two together through ``client.upsert`` with
the embedding options; the ratio of the end-to-end rate to the slower stage says whether the overlap
works (1.0: as fast as the slower stage alone). Each phase also counts the CPU seconds of all three
processes (this one, the embeddings server, Milvus Lite's server): on a small machine the overlapped run
cannot beat (embedding CPU + upsert CPU) / cores, and the output gives the end-to-end rate against the
best this machine allows, the larger of that floor and the slower stage.

The full size is 100,000 texts (``--rows 100000``, the README's figures); the default is 20,000 so that a run with both latencies, three
clients and the pipeline fits a shared 2-core machine in a few minutes (the output says so). One JSON
line per measurement, with the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..processes import stop_process
from .machine import environment, process_cpu_s

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[2]
MODEL = "test-embed-768"
KEY = "sk-bench-0123456789"
FULL_ROWS = 100_000


def texts_of(n: int) -> list[str]:
    """``n`` different texts of 20 words (about 140 characters, 35 tokens by the server's count)."""
    return [" ".join(f"w{(i * 7919 + k * 104729) % 100_003}" for k in range(19)) + f" n{i}" for i in range(n)]


@contextmanager
def server(delay_ms: float) -> Iterator[str]:
    """The embeddings server in its own process; its base URL."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [sys.executable, "-m", "tests.servers.embeddings", "--port", "0", "--api-key", KEY]
    process = subprocess.Popen(
        [*command, "--delay-ms", str(delay_ms)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the embeddings server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        stop_process(process)
        if process.stdout is not None:
            process.stdout.close()


def server_cpu_s(url: str) -> float:
    with urllib.request.urlopen(f"{url}/_stats", timeout=10) as reply:
        return float(json.loads(reply.read())["cpu_s"])


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # microseconds, every thread (os.times: 10 ms ticks)
    return usage.ru_utime + usage.ru_stime


# -- contenders: texts -> (n, 768) float32 ------------------------------------------------------------


def run_connector(url: str, texts: list[str], batch: int, concurrency: int) -> np.ndarray:
    from vectordb.connector import embed

    return embed(texts, url=url, model=MODEL, api_key=KEY, batch_size=batch, max_concurrency=concurrency)


def run_async_openai(url: str, texts: list[str], batch: int, concurrency: int) -> np.ndarray:
    from openai import AsyncOpenAI

    async def run() -> list[list[float]]:
        # its own connection pool (up to 1,000 connections): the semaphore is what bounds the requests
        async with AsyncOpenAI(base_url=f"{url}/v1", api_key=KEY, timeout=60) as client:
            semaphore = asyncio.Semaphore(concurrency)

            async def one(part: list[str]) -> list[list[float]]:
                async with semaphore:
                    reply = await client.embeddings.create(input=part, model=MODEL)
                    return [item.embedding for item in reply.data]

            parts = await asyncio.gather(*(one(texts[i : i + batch]) for i in range(0, len(texts), batch)))
        return [vector for part in parts for vector in part]

    return np.asarray(asyncio.run(run()), dtype=np.float32)


def run_baseten(url: str, texts: list[str], batch: int, concurrency: int) -> np.ndarray:
    from baseten_performance_client import PerformanceClient, RequestProcessingPreference

    client = PerformanceClient(base_url=url, api_key=KEY)
    preference = RequestProcessingPreference(
        batch_size=batch,
        max_concurrent_requests=concurrency,
        max_chars_per_request=1 << 20,  # its default (8,000 characters) would cut 64 texts into two requests
        timeout_s=60.0,
    )
    return np.asarray(client.embed(input=texts, model=MODEL, preference=preference).numpy(), dtype=np.float32)


def run_connector_msgspec(url: str, texts: list[str], batch: int, concurrency: int) -> np.ndarray:
    """The connector with its native decoder switched off: msgspec decodes, one reply at a time."""
    from vectordb.connector.embedding import wire

    saved, wire._native_decode = wire._native_decode, None
    try:
        return run_connector(url, texts, batch, concurrency)
    finally:
        wire._native_decode = saved


CONTENDERS: dict[str, Callable[[str, list[str], int, int], np.ndarray]] = {
    "connector": run_connector,
    "connector-msgspec": run_connector_msgspec,
    "async-openai": run_async_openai,
    "baseten": run_baseten,
}


def check(vectors: np.ndarray, texts: list[str], name: str) -> None:
    """The vectors the server must derive from the texts, on a sample of rows, exactly."""
    from tests.servers.embeddings import vectors_for

    rows = np.linspace(0, len(texts) - 1, 50).astype(int)
    expected = vectors_for([texts[i] for i in rows], 768, MODEL)
    if vectors.shape != (len(texts), 768) or not np.array_equal(vectors[rows], expected):
        raise AssertionError(f"{name}: the vectors are not the server's ({vectors.shape})")


def measure(url: str, name: str, texts: list[str], batch: int, concurrency: int) -> dict[str, Any]:
    server_before, cpu_before, started = server_cpu_s(url), cpu_s(), time.perf_counter()
    vectors = CONTENDERS[name](url, texts, batch, concurrency)
    wall, cpu = time.perf_counter() - started, cpu_s() - cpu_before
    server = server_cpu_s(url) - server_before
    check(vectors, texts, name)
    return {
        "contender": name,
        "rows_per_s": round(len(texts) / wall),
        "wall_s": round(wall, 3),
        "client_cpu_us_per_row": round(cpu / len(texts) * 1e6, 2),
        "client_cores": round(cpu / wall, 2),
        "server_cores": round(server / wall, 2),
    }


# -- decoding alone, on one thread and on two ----------------------------------------------------------


def decode_scaling(batch: int, rounds: int = 400) -> dict[str, Any]:
    """µs of wall time per embedding to decode ``batch``-input replies on one thread and on two, with
    the native decoder and with msgspec: the native decoder releases Python's lock, so two threads
    should take about half the time; msgspec holds it."""
    import base64
    import threading

    import orjson

    from vectordb.connector.embedding import wire
    from vectordb.connector.redaction import Secrets

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((batch, 768)).astype(np.float32)
    items = [
        {"object": "embedding", "index": i, "embedding": base64.b64encode(v.tobytes()).decode()}
        for i, v in enumerate(vectors)
    ]
    body = orjson.dumps({"object": "list", "data": items, "model": MODEL})

    def decode_all(count: int) -> None:
        for _ in range(count):
            wire.decode_reply(body, batch, "bench", secrets=Secrets())

    def wall_us(threads: int) -> float:
        workers = [threading.Thread(target=decode_all, args=(rounds // threads,)) for _ in range(threads)]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return (time.perf_counter() - started) / (rounds // threads * threads * batch) * 1e6

    native, result = wire._native_decode, {}
    for name, decoder in (("native", native), ("msgspec", None)):
        if name == "native" and native is None:
            continue
        wire._native_decode = decoder
        try:
            wall_us(2)  # warm: the allocator's arenas for both threads
            best = {threads: min(wall_us(threads) for _ in range(3)) for threads in (1, 2)}
        finally:
            wire._native_decode = native
        result[name] = {
            "one_thread_us": round(best[1], 2),
            "two_threads_us": round(best[2], 2),
            "speedup": round(best[1] / best[2], 2),
        }
    return result


# -- text -> Milvus Lite -------------------------------------------------------------------------------


def pipeline(
    url: str, texts: list[str], batch: int, concurrency: int, folder: str, tag: str
) -> dict[str, Any]:
    """Embedding alone, upserting alone, and both through one ``client.upsert``; rows/s each."""
    import pyarrow as pa

    from vectordb.connector import connect, embed
    from vectordb.connector.backends.milvus import lite

    n = len(texts)
    ids = pa.array([f"r{i}" for i in range(n)])
    # one database each: Milvus Lite goes on working on a collection (flushing, indexing) after a write,
    # which would slow whichever write came second in a shared one
    alone_path, together_path = (
        str(Path(folder) / f"alone-{tag}.db"),
        str(Path(folder) / f"together-{tag}.db"),
    )

    def machine_cpu_s(path: str | None) -> float:
        """CPU seconds so far of the three processes at work: this one, the embeddings server, Milvus Lite."""
        state = lite.running(path) if path else None
        return cpu_s() + server_cpu_s(url) + (process_cpu_s(state.pid) if state else 0.0)

    cpu0, started = machine_cpu_s(None), time.perf_counter()
    vectors = embed(texts, url=url, model=MODEL, api_key=KEY, batch_size=batch, max_concurrency=concurrency)
    embed_s, embed_cpu = time.perf_counter() - started, machine_cpu_s(None) - cpu0

    table = pa.table(
        {"id": ids, "values": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), 768)}
    )
    warm = pa.table({"id": ["warm"], "values": pa.array([vectors[0]], type=pa.list_(pa.float32()))})
    with connect(alone_path, collection=f"vectors_{tag}", create=True, dimension=768) as client:
        client.upsert(warm)  # the server started, the collection made and loaded: not timed
        cpu0, started = machine_cpu_s(alone_path), time.perf_counter()
        client.upsert(table)
        upsert_s, upsert_cpu = time.perf_counter() - started, machine_cpu_s(alone_path) - cpu0
    # that server goes on flushing and indexing after the write: stopped, so that it does not take CPU from
    # the run measured next
    lite.stop(alone_path)

    text_table = pa.table({"id": ids, "text": texts})
    options: dict[str, Any] = {
        "text_column": "text",
        "embed_url": url,
        "embed_model": MODEL,
        "embed_api_key": KEY,
    }
    options |= {"embed_batch_size": batch, "embed_max_concurrency": concurrency, "metadata_columns": []}
    with connect(together_path, collection=f"texts_{tag}", create=True, dimension=768, **options) as client:
        client.upsert(pa.table({"id": ["warm"], "text": ["warm"]}))
        cpu0, started = machine_cpu_s(together_path), time.perf_counter()
        report = client.upsert(text_table)
        both_s, both_cpu = time.perf_counter() - started, machine_cpu_s(together_path) - cpu0
    if report.written != n:
        raise AssertionError(f"end to end wrote {report.written} of {n}")
    slower = max(embed_s, upsert_s)
    # the overlapped run still has both stages' CPU to spend: on C cores it cannot take less than
    # (embedding CPU + upsert CPU) / C, whatever the overlap
    cpu_floor_s = (embed_cpu + upsert_cpu) / (os.cpu_count() or 1)
    return {
        "embed_rows_per_s": round(n / embed_s),
        "upsert_rows_per_s": round(n / upsert_s),
        "end_to_end_rows_per_s": round(n / both_s),
        "end_to_end_vs_slower_stage": round(slower / both_s, 3),
        "serial_would_be_rows_per_s": round(n / (embed_s + upsert_s)),
        "machine_cores_busy": {
            "embed": round(embed_cpu / embed_s, 2),
            "upsert": round(upsert_cpu / upsert_s, 2),
            "together": round(both_cpu / both_s, 2),
        },
        "cpu_bound_rows_per_s": round(n / cpu_floor_s),
        "end_to_end_vs_best_possible_here": round(max(slower, cpu_floor_s) / both_s, 3),
    }


# -- main ----------------------------------------------------------------------------------------------


def run_environment(args: argparse.Namespace) -> dict[str, Any]:
    packages = (
        "openai",
        "baseten-performance-client",
        "numpy",
        "msgspec",
        "vectordb-connector-speedups",
        "uvloop",
    )
    return {
        **environment(*packages),
        "rows": args.rows,
        "full_rows": FULL_ROWS,
        "dim": 768,
        "batch": args.batch,
        "concurrency": args.concurrency,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--delays-ms", default="0,50", help="latency the server adds per request, comma-separated"
    )
    parser.add_argument("--reps", type=int, default=1, help="repetitions per cell; the best is kept")
    parser.add_argument("--no-pipeline", action="store_true", help="skip the text -> Milvus Lite runs")
    args = parser.parse_args(argv)
    env = run_environment(args)
    if args.rows < FULL_ROWS:
        print(
            f"note: {args.rows:,} texts per run, not the full {FULL_ROWS:,}: scaled down so that every "
            f"cell fits a {os.cpu_count()}-core machine in a few minutes (--rows {FULL_ROWS} for the full size)",
            flush=True,
        )
    scaling = decode_scaling(args.batch)
    for name, cell in scaling.items():
        print(
            f"decoding {args.batch}-input replies, {name}: {cell['one_thread_us']:.2f} µs an embedding on one "
            f"thread, {cell['two_threads_us']:.2f} on two ({cell['speedup']:.2f}x)"
        )
    print(
        json.dumps({"bench": "embed_decode_scaling", "batch": args.batch, **scaling, "env": env}), flush=True
    )
    texts = texts_of(args.rows)
    for delay in [float(d) for d in args.delays_ms.split(",") if d.strip()]:
        with server(delay) as url:
            run_connector(url, texts[:2000], args.batch, args.concurrency)  # warm: imports, connections
            best: dict[str, dict[str, Any]] = {}
            for _ in range(args.reps):
                for name in CONTENDERS:  # interleaved, so a noisy moment does not hit one contender only
                    cell = measure(url, name, texts, args.batch, args.concurrency)
                    if name not in best or cell["rows_per_s"] > best[name]["rows_per_s"]:
                        best[name] = cell
            print(f"\nadded latency {delay:g} ms per request")
            print(
                f"{'contender':14} {'rows/s':>9} {'wall s':>8} {'client CPU µs/row':>18} {'client cores':>13} {'server cores':>13}"
            )
            for name, cell in best.items():
                print(
                    f"{name:14} {cell['rows_per_s']:>9,} {cell['wall_s']:>8.2f} {cell['client_cpu_us_per_row']:>18.2f} "
                    f"{cell['client_cores']:>13.2f} {cell['server_cores']:>13.2f}"
                    + ("   <- the server was the bound" if cell["server_cores"] >= 0.9 else "")
                )
                print(
                    json.dumps({"bench": "embed_throughput", "delay_ms": delay, **cell, "env": env}),
                    flush=True,
                )
            ours, openai_, baseten = (best[k] for k in ("connector", "async-openai", "baseten"))
            plain = best["connector-msgspec"]
            ratios = {
                "native_vs_msgspec_rows_per_s": round(ours["rows_per_s"] / plain["rows_per_s"], 2),
                "native_vs_msgspec_cpu_per_row": round(
                    ours["client_cpu_us_per_row"] / plain["client_cpu_us_per_row"], 2
                ),
                "vs_async_openai_rows_per_s": round(ours["rows_per_s"] / openai_["rows_per_s"], 2),
                "vs_baseten_rows_per_s": round(ours["rows_per_s"] / baseten["rows_per_s"], 2),
                "vs_baseten_cpu_per_row": round(
                    ours["client_cpu_us_per_row"] / baseten["client_cpu_us_per_row"], 2
                ),
            }
            print(
                json.dumps({"bench": "embed_throughput_ratios", "delay_ms": delay, **ratios, "env": env}),
                flush=True,
            )
            if not args.no_pipeline:
                with tempfile.TemporaryDirectory(prefix="embed-bench-") as folder:
                    try:
                        result = pipeline(url, texts, args.batch, args.concurrency, folder, f"d{int(delay)}")
                    finally:
                        from vectordb.connector.backends.milvus import lite

                        for database in Path(folder).glob("*.db"):
                            lite.stop(str(database))
                print(
                    f"text -> Milvus Lite: embedding alone {result['embed_rows_per_s']:,} rows/s, upsert alone "
                    f"{result['upsert_rows_per_s']:,} rows/s, together {result['end_to_end_rows_per_s']:,} rows/s "
                    f"= {result['end_to_end_vs_slower_stage']:.0%} of the slower stage "
                    f"(one after the other: {result['serial_would_be_rows_per_s']:,} rows/s); the machine's "
                    f"cores could do both stages' CPU at {result['cpu_bound_rows_per_s']:,} rows/s at most, "
                    f"so together = {result['end_to_end_vs_best_possible_here']:.0%} of the best possible here "
                    f"(cores busy: {result['machine_cores_busy']})"
                )
                print(
                    json.dumps({"bench": "embed_pipeline", "delay_ms": delay, **result, "env": env}),
                    flush=True,
                )


if __name__ == "__main__":
    main()
