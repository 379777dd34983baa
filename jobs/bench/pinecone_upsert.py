"""Pinecone upsert throughput, side by side: this client, the official SDK, and a pre-serialized ceiling.

``python -m jobs.bench.pinecone_upsert [--quick]`` writes N random float32 vectors (fixed seed,
unit length like real embeddings) in batches of 100, at each concurrency, over gRPC and REST,
to local no-op sinks (``jobs/bench/sinks.py``, separate processes) that reply at once or after
a fixed 20 ms. Contenders:

- ``connector``: ``connect("pinecone+grpc://…" or "pinecone://…", batch_size, max_concurrency)``
  and ``client.upsert(table)`` of a ``pyarrow.Table`` (``id`` string, ``values`` list<float32>).
  Over REST its vectors are written by the native speedups where they are installed
  (``jsonvec.native_encoder()``, in the JSON lines as ``native_json``).
- ``connector-py`` (REST only): the same with the native JSON writer switched off, orjson formatting the
  floats: the same bytes on the wire, so the two side by side measure what the native writer buys.
- ``sdk-lists`` / ``sdk-numpy``: the ``pinecone`` SDK's batched ``Index.upsert(vectors=…,
  batch_size, max_concurrency)`` given ``(id, list of floats)`` tuples (its fastest input) or
  ``(id, numpy row)`` tuples. Its per-host throttle gate and retry budget are reset before each run.
- ``ceiling``: request bodies encoded once, before timing, by this client's encoder, sent by
  ``c`` threads with raw grpcio ``unary_unary`` or one ``httpx.Client``: about the most any
  client can reach through these libraries, sink and machine (a Python grpcio server spends
  ~1 ms of CPU per 615 KB request, on the same cores), and the check that the sink is not what
  holds back the clients under test.

Every contender's client is built before timing and does one small warm-up upsert; only the
upsert call is timed (``time.perf_counter``), with the client process's CPU seconds
(``time.process_time``, all threads). Each cell is the best of ``--reps`` repetitions, and
repetitions are interleaved across contenders so background load hits all of them alike.
Every run is checked end to end: the client's own count and the sink's count of vectors
received must both equal the rows sent. Inputs are built once and frozen out of the garbage
collector's view, so holding them costs no contender anything.

Output: a table, one JSON line per cell (``"bench": "pinecone_upsert"``, with client CPU µs a vector),
and the ratios the issue sets targets for, per sink: our gRPC ÷ the SDK's best gRPC (≥ 2.5), our REST ÷
the SDK's best REST (≥ 1.5), and ours ÷ the ceiling on each transport (≥ 0.6); each side is its best
over concurrencies (and over input forms for the SDK). Over REST also ``connector-py`` ÷ the SDK and
``connector`` ÷ ``connector-py`` (no targets).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import orjson

from .machine import code_version, environment
from .native import python_json
from .sinks import Sink, start_sink

__all__ = ["main"]

CONTENDERS = ("connector", "connector-py", "sdk-lists", "sdk-numpy", "ceiling")
TRANSPORTS = ("grpc", "rest")
TARGETS = {"grpc_vs_sdk": 2.5, "rest_vs_sdk": 1.5, "grpc_vs_ceiling": 0.6, "rest_vs_ceiling": 0.6}
API_KEY = "k"
GRPC_METHOD = "/VectorService/Upsert"


@dataclass(frozen=True, slots=True)
class Settings:
    rows: int
    dim: int
    reps: int
    batch_size: int
    concurrencies: tuple[int, ...]
    transports: tuple[str, ...]
    sinks: tuple[tuple[str, float], ...]  # (name, delay ms)
    contenders: tuple[str, ...]
    seed: int


@dataclass(slots=True)
class Inputs:
    """Every contender's input, built once before any timing."""

    ids: list[str]
    matrix: np.ndarray  # (rows, dim) float32
    table: Any  # pyarrow.Table: id string, values list<float32>
    lists: list[tuple[str, list[float]]]
    numpy_rows: list[tuple[str, np.ndarray]]


@dataclass(slots=True)
class Cell:
    """All repetitions of one contender at one concurrency against one sink."""

    transport: str
    sink: str
    contender: str
    concurrency: int
    walls_s: list[float] = field(default_factory=list)
    cpus_s: list[float] = field(default_factory=list)
    sink_cpus_s: list[float] = field(default_factory=list)
    peaks: list[int] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)  # as the sink counted them
    loads: list[float] = field(default_factory=list)  # 1-minute load average after each repetition

    @property
    def best(self) -> int:
        return min(range(len(self.walls_s)), key=self.walls_s.__getitem__)

    def vectors_per_s(self, rows: int) -> float:
        return rows / self.walls_s[self.best]


class Runner(Protocol):
    """One contender at one concurrency, its client already built."""

    def warm_up(self) -> None: ...

    def prepare(self) -> None: ...  # untimed, before every run

    def run(self) -> int: ...  # the timed upsert; returns the vectors the client says were written

    def close(self) -> None: ...


# --------------------------------------------------------------------------------------------------
# inputs


def build_inputs(rows: int, dim: int, seed: int) -> Inputs:
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)  # unit length, as embeddings are
    ids = [f"vec-{i:07d}" for i in range(rows)]
    offsets = pa.array(np.arange(0, (rows + 1) * dim, dim, dtype=np.int32))
    values = pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))
    table = pa.table({"id": pa.array(ids, pa.string()), "values": values})
    lists = list(zip(ids, matrix.tolist(), strict=True))
    numpy_rows = [(ids[i], matrix[i]) for i in range(rows)]
    return Inputs(ids, matrix, table, lists, numpy_rows)


# --------------------------------------------------------------------------------------------------
# contenders


class ConnectorRunner:
    def __init__(
        self,
        transport: str,
        sink: Sink,
        concurrency: int,
        inputs: Inputs,
        batch_size: int,
        *,
        native_json: bool = True,
    ) -> None:
        from vectordb.connector import connect

        scheme = "pinecone+grpc" if transport == "grpc" else "pinecone"
        self._client = connect(
            f"{scheme}://{sink.address}", api_key=API_KEY, batch_size=batch_size, max_concurrency=concurrency
        )
        self._inputs, self._batch_size = inputs, batch_size
        self._json = contextlib.nullcontext if native_json else python_json

    def warm_up(self) -> None:
        with self._json():
            self._client.upsert(self._inputs.table.slice(0, self._batch_size))

    def prepare(self) -> None:
        pass

    def run(self) -> int:
        with self._json():
            report = self._client.upsert(self._inputs.table)
        if report.written != len(self._inputs.ids):
            raise RuntimeError(f"connector wrote {report.written} of {len(self._inputs.ids)}: {report!r}")
        return report.written

    def close(self) -> None:
        self._client.close()


class SdkRunner:
    def __init__(self, index: Any, vectors: Sequence[Any], concurrency: int, batch_size: int) -> None:
        self._index, self._vectors = index, vectors
        self._concurrency, self._batch_size = concurrency, batch_size

    def warm_up(self) -> None:
        self.prepare()
        self._upsert(self._vectors[: self._batch_size])

    def prepare(self) -> None:
        # The SDK adapts a per-host gate and spends a per-host retry budget across calls;
        # reset both so no run inherits state from the previous one.
        from pinecone._internal.bulk import get_registry
        from pinecone._internal.http_client import get_budget_registry

        get_registry()._reset()
        get_budget_registry()._reset()

    def run(self) -> int:
        return self._upsert(self._vectors)

    def _upsert(self, vectors: Sequence[Any]) -> int:
        reply = self._index.upsert(
            vectors=vectors,
            batch_size=self._batch_size,
            max_concurrency=self._concurrency,
            show_progress=False,
        )
        if reply.has_errors or reply.upserted_count != len(vectors):
            raise RuntimeError(
                f"pinecone SDK upserted {reply.upserted_count} of {len(vectors)}: {reply.errors}"
            )
        return int(reply.upserted_count)

    def close(self) -> None:
        pass  # the index is shared by the SDK runners of one sink; closed with it


class CeilingRunner:
    """Pre-encoded bodies, ``concurrency`` threads, the bare library call: no batching, no accounting."""

    def __init__(self, transport: str, sink: Sink, concurrency: int, inputs: Inputs, batch_size: int) -> None:
        from vectordb.connector import connect
        from vectordb.connector.rows import RowBatch

        scheme = "pinecone+grpc" if transport == "grpc" else "pinecone"
        with connect(f"{scheme}://{sink.address}") as encoder:
            self._bodies = [
                encoder.backend.request_for(
                    RowBatch(ids=inputs.ids[i : i + batch_size], vectors=inputs.matrix[i : i + batch_size])
                ).body
                for i in range(0, len(inputs.ids), batch_size)
            ]
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="ceiling")
        self._send: Callable[[bytes], int]
        if transport == "grpc":
            import grpc

            size = 128 * 1024 * 1024
            options = [("grpc.max_send_message_length", size), ("grpc.max_receive_message_length", size)]
            self._channel = grpc.insecure_channel(sink.address, options=options)
            call = self._channel.unary_unary(GRPC_METHOD)
            metadata = (("api-key", API_KEY),)
            self._send = lambda body: _upserted_count(call(body, timeout=30, metadata=metadata))
        else:
            import httpx

            limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
            self._http = httpx.Client(limits=limits)
            url = sink.url + "/vectors/upsert"
            headers = {"Api-Key": API_KEY, "Content-Type": "application/json"}

            def post(body: bytes) -> int:
                reply = self._http.post(url, content=body, headers=headers, timeout=30)
                reply.raise_for_status()
                return int(orjson.loads(reply.content)["upsertedCount"])

            self._send = post
        self._transport = transport

    def warm_up(self) -> None:
        list(self._pool.map(self._send, self._bodies[:1]))

    def prepare(self) -> None:
        pass

    def run(self) -> int:
        return sum(self._pool.map(self._send, self._bodies))

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self._transport == "grpc":
            self._channel.close()
        else:
            self._http.close()


def _upserted_count(reply: bytes) -> int:
    """``UpsertResponse.upserted_count`` (field 1, varint): the only field the sink sends."""
    if not reply:
        return 0
    value = shift = 0
    for byte in reply[1:]:
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
    return value


@contextmanager
def sdk_index(transport: str, sink: Sink) -> Iterator[Any]:
    index: Any
    if transport == "grpc":
        from pinecone.grpc import PineconeGRPC

        index = PineconeGRPC(api_key=API_KEY, grpc_scheme="http").Index(host=sink.address)
    else:
        from pinecone import Pinecone

        index = Pinecone(api_key=API_KEY).Index(host=sink.url)
    try:
        yield index
    finally:
        index.close()


def build_runners(
    stack: ExitStack, transport: str, sink: Sink, settings: Settings, inputs: Inputs
) -> list[tuple[str, int, Runner]]:
    """Every (contender, concurrency) for one sink; each closes with ``stack``."""
    runners: list[tuple[str, int, Runner]] = []
    index = None
    for contender in settings.contenders:
        if contender.startswith("sdk-") and index is None:
            index = stack.enter_context(sdk_index(transport, sink))
        for c in settings.concurrencies:
            runner: Runner
            if contender == "connector-py" and transport == "grpc":
                continue  # no JSON over gRPC: it would be "connector" again
            if contender in ("connector", "connector-py"):
                native_json = contender == "connector"
                runner = ConnectorRunner(
                    transport, sink, c, inputs, settings.batch_size, native_json=native_json
                )
            elif contender == "ceiling":
                runner = CeilingRunner(transport, sink, c, inputs, settings.batch_size)
            else:
                vectors = inputs.lists if contender == "sdk-lists" else inputs.numpy_rows
                runner = SdkRunner(index, vectors, c, settings.batch_size)
            stack.callback(runner.close)
            runners.append((contender, c, runner))
    return runners


# --------------------------------------------------------------------------------------------------
# measuring


def measure_sink(
    transport: str, sink_name: str, delay_ms: float, settings: Settings, inputs: Inputs
) -> list[Cell]:
    """All contenders and concurrencies against one fresh sink process, repetitions interleaved."""
    from vectordb.connector.transports.base import forget_shared

    rows = len(inputs.ids)
    with start_sink(transport, delay_ms) as sink, ExitStack() as stack:
        stack.callback(forget_shared)  # this client's shared channel/pool, before the sink stops
        runners = build_runners(stack, transport, sink, settings, inputs)
        # Highest concurrency first: this client's HTTP pool is shared per host and sized by the
        # first client that opens it, so opening it at c=1 would cap the c=16 client at 8
        # connections. Warming up in this order measures each concurrency as a fresh process would.
        for _, _, runner in sorted(runners, key=lambda r: -r[1]):
            runner.warm_up()
        cells = [Cell(transport, sink_name, contender, c) for contender, c, _ in runners]
        for rep in range(settings.reps):
            for cell, (_, _, runner) in zip(cells, runners, strict=True):
                runner.prepare()
                gc.collect()
                before = sink.stats()
                wall0, cpu0 = time.perf_counter(), time.process_time()
                acknowledged = runner.run()
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                seen = sink.stats() - before
                if acknowledged != rows or seen.vectors != rows:
                    raise RuntimeError(
                        f"{cell.contender} c={cell.concurrency} ({transport}, {sink_name}): {rows} sent, "
                        f"{acknowledged} acknowledged by the client, {seen.vectors} received by the sink"
                    )
                cell.walls_s.append(wall)
                cell.cpus_s.append(cpu)
                cell.sink_cpus_s.append(seen.cpu_s)
                cell.peaks.append(seen.peak_in_flight)
                cell.requests.append(seen.requests)
                cell.loads.append(os.getloadavg()[0])
                print(
                    f"  rep {rep + 1}/{settings.reps} {transport:<4} {sink_name:<5} {cell.contender:<10} "
                    f"c={cell.concurrency:<3} {rows / wall:>9,.0f} vectors/s  cpu {cpu:5.2f} s  "
                    f"sink cpu {seen.cpu_s:5.2f} s  peak in flight {seen.peak_in_flight}",
                    file=sys.stderr,
                    flush=True,
                )
    return cells


# --------------------------------------------------------------------------------------------------
# reporting


def cell_json(cell: Cell, settings: Settings, rows: int, env: dict[str, Any]) -> dict[str, Any]:
    best = cell.best
    return {
        "bench": "pinecone_upsert",
        "transport": cell.transport,
        "sink": cell.sink,
        "contender": cell.contender,
        "concurrency": cell.concurrency,
        "vectors_per_s": round(cell.vectors_per_s(rows), 1),
        "cpu_s": round(cell.cpus_s[best], 3),
        "cpu_us_per_vector": round(cell.cpus_s[best] / rows * 1e6, 1),
        "wall_s": round(cell.walls_s[best], 4),
        "sink_cpu_s": round(cell.sink_cpus_s[best], 3),
        "sink_peak_in_flight": cell.peaks[best],
        "sink_requests": cell.requests[best],
        "reps": len(cell.walls_s),
        "vectors_per_s_each_rep": [round(rows / w, 1) for w in cell.walls_s],
        "loadavg_1m": round(cell.loads[best], 2),
        "statistic": "best of reps (shortest wall time); cpu_s of that repetition",
        "rows": rows,
        "dim": settings.dim,
        "batch_size": settings.batch_size,
        "env": env,
    }


def print_table(cells: list[Cell], settings: Settings, rows: int) -> None:
    concurrencies = settings.concurrencies
    print(
        f"\npinecone upsert: {rows:,} x {settings.dim} float32, batch {settings.batch_size}; "
        f"vectors/s, best of {settings.reps} repetition(s) (client CPU seconds of that run)"
    )
    head = f"{'transport':<9} {'sink':<5} {'contender':<10} " + " ".join(
        f"{'c=' + str(c):>17}" for c in concurrencies
    )
    print(head)
    print("-" * len(head))
    by_key = {(c.transport, c.sink, c.contender, c.concurrency): c for c in cells}
    for transport in settings.transports:
        for sink, _ in settings.sinks:
            for contender in settings.contenders:
                parts = []
                for conc in concurrencies:
                    cell = by_key.get((transport, sink, contender, conc))
                    text = (
                        ""
                        if cell is None
                        else f"{cell.vectors_per_s(rows):,.0f} ({cell.cpus_s[cell.best]:.2f})"
                    )
                    parts.append(f"{text:>17}")
                print(f"{transport:<9} {sink:<5} {contender:<10} " + " ".join(parts))


def ratios(cells: list[Cell], settings: Settings, rows: int) -> list[dict[str, Any]]:
    """Best-over-concurrency figures compared per sink, as the targets are stated (per sink)."""

    def best(transport: str, sink: str, contenders: tuple[str, ...]) -> Cell | None:
        found = [
            c for c in cells if c.transport == transport and c.sink == sink and c.contender in contenders
        ]
        return max(found, key=lambda c: c.vectors_per_s(rows)) if found else None

    out = []
    for sink, _ in settings.sinks:
        for transport in TRANSPORTS:
            mine = best(transport, sink, ("connector",))
            sdk, ceiling = (
                best(transport, sink, ("sdk-lists", "sdk-numpy")),
                best(transport, sink, ("ceiling",)),
            )
            if mine and sdk:
                out.append(_ratio(f"{transport}_vs_sdk", sink, mine, sdk, rows))
            python = best(transport, sink, ("connector-py",))
            if python and sdk:  # not a target: where this client was before the native JSON writer
                out.append(_ratio(f"{transport}_python_json_vs_sdk", sink, python, sdk, rows))
            if mine and python:
                out.append(_ratio(f"{transport}_native_vs_python_json", sink, mine, python, rows))
            if mine and ceiling:
                out.append(_ratio(f"{transport}_vs_ceiling", sink, mine, ceiling, rows))
            if ceiling and sdk:
                # not a target: the most any client could show over the SDK through this sink and machine
                out.append(_ratio(f"{transport}_ceiling_vs_sdk", sink, ceiling, sdk, rows))
    return out


def _ratio(name: str, sink: str, mine: Cell, other: Cell, rows: int) -> dict[str, Any]:
    value = mine.vectors_per_s(rows) / other.vectors_per_s(rows)
    target = TARGETS.get(name)
    return {
        "bench": "pinecone_upsert_ratio",
        "ratio": name,
        "sink": sink,
        "value": round(value, 2),
        "target": target,
        "met": None if target is None else value >= target,
        "ours": _describe(mine, rows),
        "versus": _describe(other, rows),
    }


def _describe(cell: Cell, rows: int) -> str:
    cpu_us = cell.cpus_s[cell.best] / rows * 1e6
    return (
        f"{cell.transport} {cell.contender} c={cell.concurrency}: {cell.vectors_per_s(rows):,.0f}/s, "
        f"{cpu_us:.1f} µs CPU a vector"
    )


# --------------------------------------------------------------------------------------------------
# command line


def parse_args(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.bench.pinecone_upsert", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--reps", type=int, default=3, help="repetitions per cell; the best is reported")
    parser.add_argument("--quick", action="store_true", help="smoke check: 2000 rows, 1 repetition")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--concurrency", default="1,4,16", help="comma-separated")
    parser.add_argument("--transports", default=",".join(TRANSPORTS))
    parser.add_argument("--sinks", default="noop,20ms", help="noop and/or <N>ms (a fixed reply delay)")
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--seed", type=int, default=20_240_601)
    args = parser.parse_args(argv)
    rows, reps = (min(args.rows, 2000), 1) if args.quick else (args.rows, args.reps)
    sinks = tuple(
        (name, 0.0 if name == "noop" else float(name.removesuffix("ms"))) for name in _split(args.sinks)
    )
    contenders = _split(args.contenders)
    unknown = set(contenders) - set(CONTENDERS) or set(_split(args.transports)) - set(TRANSPORTS)
    if unknown:
        parser.error(f"unknown {', '.join(sorted(unknown))}")
    return Settings(
        rows=rows,
        dim=args.dim,
        reps=max(1, reps),
        batch_size=args.batch_size,
        concurrencies=tuple(int(c) for c in _split(args.concurrency)),
        transports=_split(args.transports),
        sinks=sinks,
        contenders=contenders,
        seed=args.seed,
    )


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def main(argv: Sequence[str] | None = None) -> None:
    from vectordb.connector import jsonvec

    settings = parse_args(argv)
    env = environment(
        "vectordb-connector",
        "vectordb-connector-speedups",
        "pinecone",
        "grpcio",
        "httpx",
        "orjson",
        "numpy",
        "pyarrow",
    )
    env["native_json"] = jsonvec.native_encoder()
    env["code"] = code_version("connector")
    started = time.perf_counter()
    inputs = build_inputs(settings.rows, settings.dim, settings.seed)
    gc.collect()
    gc.freeze()  # the inputs are not garbage: keep every collection from walking 15M list slots
    cells: list[Cell] = []
    for sink_name, delay_ms in settings.sinks:
        for transport in settings.transports:
            cells += measure_sink(transport, sink_name, delay_ms, settings, inputs)
    env["loadavg_at_end"] = os.getloadavg()[0]
    env["total_s"] = round(time.perf_counter() - started, 1)
    print_table(cells, settings, settings.rows)
    print()
    for cell in cells:
        print(json.dumps(cell_json(cell, settings, settings.rows, env)))
    print("\nratios (best over concurrency on both sides; measured in this run):")
    for ratio in ratios(cells, settings, settings.rows):
        name, value, target = ratio["ratio"], ratio["value"], ratio["target"]
        verdict = (
            "(headroom, no target)"
            if target is None
            else f"target ≥ {target}  " + ("met" if ratio["met"] else "MISSED")
        )
        print(f"  {ratio['sink']:<5} {name:<20} {value:>6.2f}  {verdict}")
        print(f"        {ratio['ours']}  vs  {ratio['versus']}")
    for ratio in ratios(cells, settings, settings.rows):
        print(json.dumps(ratio))


if __name__ == "__main__":
    main()
