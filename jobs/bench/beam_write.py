"""Beam sink throughput on the DirectRunner: ``WriteToVectorDB`` beside the Beam-shipped pattern and the runner's ceiling.

``python -m jobs.bench.beam_write [--quick]`` runs one batch pipeline per cell: N records (default
100,000 × 768, float32, unit length) generated inside the pipeline from shard numbers, written
to a local no-op Pinecone gRPC sink (``jobs/bench/sinks.py``, its own process) that replies at
once or after a fixed 20 ms. Contenders, all on the same source:

- ``connector``: ``WriteToVectorDB("pinecone+grpc://sink", batch_size=b, max_concurrency=c)``; ``b``
  is the connector's Pinecone default (500) unless ``--batch-size`` says otherwise, for both writers.
- ``pattern``: what ``apache_beam.ml.rag`` sinks do (see ``ingestion/qdrant.py``): a ``Map`` that
  converts each item to the vendor client's record, then a DoFn that buffers ``batch_size``
  records and calls the vendor client on them, one batch at a time, waiting for each reply. The
  client is the official ``pinecone`` SDK over gRPC (``PineconeGRPC(...).Index(host=...)``,
  ``index.upsert(vectors=batch)``), made in ``setup`` and closed in ``teardown``.
- ``python_heads``: ``connector`` with the native writer of the vectors' ids and metadata switched
  off (``native.python_heads``: the same bytes, written in Python), not run unless asked for.
- ``ceiling``: the same source, ``BatchElements`` (1600 rows, the sink's default Beam batch), and a
  DoFn that drops its batches: what the runner alone costs.

Input forms (``--inputs``): ``numpy`` (dicts ``{"id", "values": float32 array}``, what an
embedding model gives) and ``chunks`` (``apache_beam.ml.rag`` ``Chunk``s whose embedding is a
list of floats, what ``ml.rag`` pipelines carry, and the pattern's cheapest input). The runner is
the in-memory ``FnApiRunner``, which is what the ``DirectRunner`` runs batch pipelines on here
(``--runner direct`` goes through ``DirectRunner`` itself, which first tries to download Prism).

Each cell is the best (shortest wall time) of ``--reps`` runs; the wall time spans
``pipeline.run()`` to the end of ``wait_until_finish()``, with this process's CPU seconds (the
in-memory runner runs here). Every writing run is checked: the sink must have received exactly
N vectors. Output: a table, one JSON line per cell (``"bench": "beam_write"``) with the machine,
and the ratios that have targets: connector ÷ pattern on each sink (≥ 3) and connector
÷ ceiling on the no-op sink.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import apache_beam as beam
import numpy as np

from vectordb.connector.backends.pinecone import PineconeBackend
from vectordb.connector.transports.base import forget_shared

from .machine import environment
from .native import python_heads
from .sinks import Sink, start_sink

__all__ = ["main"]

CONTENDERS = ("connector", "pattern", "ceiling", "python_heads")
DEFAULT_CONTENDERS = ("connector", "pattern", "ceiling")
INPUTS = ("numpy", "chunks")
API_KEY = "k"
PER_SHARD = 1000
SEED = 20_240_601
TARGET_VS_PATTERN = 3.0


@dataclass(frozen=True, slots=True)
class Settings:
    rows: int
    dim: int
    reps: int
    batch_size: int
    concurrency: int
    rows_per_batch: int | None
    sinks: tuple[tuple[str, float], ...]  # (name, delay ms)
    inputs: tuple[str, ...]
    contenders: tuple[str, ...]
    runner: str


@dataclass(slots=True)
class Cell:
    sink: str
    input: str
    contender: str
    walls_s: list[float] = field(default_factory=list)
    cpus_s: list[float] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)

    @property
    def best(self) -> int:
        return min(range(len(self.walls_s)), key=self.walls_s.__getitem__)

    def per_s(self, rows: int) -> float:
        return rows / self.walls_s[self.best]


# --------------------------------------------------------------------------------------------------
# the source: shard numbers in, records out (the element data never goes through the pipeline graph)


@lru_cache(maxsize=4)
def base_vectors(dim: int) -> np.ndarray:
    """PER_SHARD unit vectors; every shard reuses them under its own ids (cheap, identical for all)."""
    matrix = np.random.default_rng(SEED).standard_normal((PER_SHARD, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


@lru_cache(maxsize=4)
def base_lists(dim: int) -> list[list[float]]:
    return base_vectors(dim).tolist()  # type: ignore[no-any-return]


def numpy_records(shard: int, dim: int) -> Iterator[dict[str, Any]]:
    vectors = base_vectors(dim)
    for i in range(PER_SHARD):
        yield {"id": f"vec-{shard:04d}-{i:04d}", "values": vectors[i]}


def chunk_records(shard: int, dim: int) -> Iterator[Any]:
    from apache_beam.ml.rag.types import Chunk, Content, Embedding

    lists = base_lists(dim)
    for i in range(PER_SHARD):
        yield Chunk(
            id=f"vec-{shard:04d}-{i:04d}",
            content=Content(),
            embedding=Embedding(dense_embedding=lists[i]),
        )


def source(pipeline: beam.Pipeline, settings: Settings, form: str) -> beam.PCollection:
    generate = numpy_records if form == "numpy" else chunk_records
    shards = list(range(settings.rows // PER_SHARD))
    return pipeline | "Shards" >> beam.Create(shards) | "Records" >> beam.FlatMap(generate, settings.dim)


# --------------------------------------------------------------------------------------------------
# the Beam-shipped pattern and the ceiling


def to_sdk_record(element: Any) -> dict[str, Any]:
    """The pattern's converter: the vendor record, as ``ml.rag`` sinks build it per element."""
    if isinstance(element, dict):
        return {"id": element["id"], "values": element["values"].tolist()}  # the SDK takes lists
    return {"id": element.id, "values": element.embedding.dense_embedding}


class PineconeSdkWriteFn(beam.DoFn):  # type: ignore[misc]
    """Buffers ``batch_size`` records per bundle and upserts each batch with the SDK, waiting for it."""

    def __init__(self, address: str, batch_size: int) -> None:
        self._address, self._batch_size = address, batch_size

    def setup(self) -> None:
        from pinecone.grpc import PineconeGRPC

        self._index = PineconeGRPC(api_key=API_KEY, grpc_scheme="http").Index(host=self._address)

    def start_bundle(self) -> None:
        self._batch: list[dict[str, Any]] = []

    def process(self, record: dict[str, Any]) -> None:
        self._batch.append(record)
        if len(self._batch) >= self._batch_size:
            self._flush()

    def finish_bundle(self) -> None:
        self._flush()

    def teardown(self) -> None:
        self._index.close()

    def _flush(self) -> None:
        if not self._batch:
            return
        for attempt in range(4):  # as ml.rag's sinks: a few retries with exponential sleeps
            try:
                reply = self._index.upsert(vectors=self._batch, show_progress=False)
                break
            except Exception:
                if attempt == 3:
                    raise
                time.sleep(2**attempt)
        if reply.upserted_count != len(self._batch):
            raise RuntimeError(f"pinecone SDK upserted {reply.upserted_count} of {len(self._batch)}")
        self._batch = []


class DropFn(beam.DoFn):  # type: ignore[misc]
    def process(self, batch: Any) -> list[Any]:
        return []  # nothing out (returning None makes Beam log a warning per batch)


def build(pipeline: beam.Pipeline, contender: str, form: str, settings: Settings, sink: Sink) -> None:
    records = source(pipeline, settings, form)
    if contender in ("connector", "python_heads"):
        from vectordb.beam import WriteToVectorDB

        _ = records | WriteToVectorDB(
            f"pinecone+grpc://{sink.address}",
            api_key=API_KEY,
            batch_size=settings.batch_size,
            max_concurrency=settings.concurrency,
            rows_per_batch=settings.rows_per_batch,
            verify=False,  # the no-op sink has no describe_index_stats; the SDK does not call it either
        )
    elif contender == "pattern":
        _ = (
            records
            | "Convert to records" >> beam.Map(to_sdk_record)
            | "Write" >> beam.ParDo(PineconeSdkWriteFn(sink.address, settings.batch_size))
        )
    else:
        _ = records | beam.BatchElements(1600, 1600, record_metrics=False) | beam.ParDo(DropFn())


# --------------------------------------------------------------------------------------------------
# measuring


def new_pipeline(settings: Settings) -> beam.Pipeline:
    if settings.runner == "direct":
        return beam.Pipeline(runner="DirectRunner")
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    return beam.Pipeline(runner=FnApiRunner())


def reset_sdk() -> None:
    """The SDK keeps a per-host throttle gate and retry budget across calls: start every run fresh."""
    from pinecone._internal.bulk import get_registry
    from pinecone._internal.http_client import get_budget_registry

    get_registry()._reset()
    get_budget_registry()._reset()


def run_once(cell: Cell, settings: Settings, sink: Sink) -> None:
    if cell.contender == "pattern":
        reset_sdk()
    pipeline = new_pipeline(settings)
    build(pipeline, cell.contender, cell.input, settings, sink)
    before = sink.stats()
    heads = python_heads() if cell.contender == "python_heads" else contextlib.nullcontext()
    with heads:  # the in-memory runner runs the DoFns in this process
        wall, cpu = time.perf_counter(), time.process_time()
        pipeline.run().wait_until_finish()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    got = sink.stats() - before
    expected = 0 if cell.contender == "ceiling" else settings.rows
    if got.vectors != expected:
        raise RuntimeError(f"{cell.contender}: the sink received {got.vectors} vectors, expected {expected}")
    cell.walls_s.append(wall)
    cell.cpus_s.append(cpu)
    cell.requests.append(got.requests)


def measure(settings: Settings) -> list[Cell]:
    cells: list[Cell] = []
    for name, delay_ms in settings.sinks:
        with start_sink("grpc", delay_ms) as sink:
            for form in settings.inputs:
                for contender in settings.contenders:
                    if contender == "ceiling" and delay_ms:
                        continue  # drops its batches: no sink involved
                    cells.append(Cell(name, form, contender))
            group = [c for c in cells if c.sink == name]
            warm_up(group, settings, sink)
            for rep in range(settings.reps):  # interleaved, so background load hits every contender
                for cell in group:
                    run_once(cell, settings, sink)
                    print(
                        f"  {name:>5} {cell.input:>6} {cell.contender:>9} rep {rep + 1}: "
                        f"{settings.rows / cell.walls_s[-1]:>9,.0f}/s ({cell.walls_s[-1]:.2f} s, "
                        f"cpu {cell.cpus_s[-1]:.2f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
        forget_shared()  # the connector's channel to this sink, before it stops
    return cells


def warm_up(cells: list[Cell], settings: Settings, sink: Sink) -> None:
    """One small run per contender: imports, channels, caches; not timed."""
    small = Settings(**{**settings_dict(settings), "rows": PER_SHARD})
    for cell in cells:
        run_once(Cell(cell.sink, cell.input, cell.contender), small, sink)


def settings_dict(settings: Settings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in Settings.__slots__}


# --------------------------------------------------------------------------------------------------
# reporting


def cell_json(cell: Cell, settings: Settings, env: dict[str, Any]) -> dict[str, Any]:
    best = cell.best
    return {
        "bench": "beam_write",
        "sink": cell.sink,
        "input": cell.input,
        "contender": cell.contender,
        "elements_per_s": round(cell.per_s(settings.rows), 1),
        "wall_s": round(cell.walls_s[best], 3),
        "cpu_s": round(cell.cpus_s[best], 3),
        "cpu_us_per_row": round(cell.cpus_s[best] / settings.rows * 1e6, 2),
        "cpu_us_per_row_min": round(min(cell.cpus_s) / settings.rows * 1e6, 2),
        "sink_requests": cell.requests[best],
        "reps": len(cell.walls_s),
        "statistic": "best of reps (shortest wall time); cpu_s of that run, this process",
        "rows": settings.rows,
        "dim": settings.dim,
        "batch_size": settings.batch_size,
        "max_concurrency": settings.concurrency,
        "runner": "DirectRunner" if settings.runner == "direct" else "FnApiRunner (in-memory)",
        "env": env,
    }


def ratios(cells: list[Cell], settings: Settings) -> list[dict[str, Any]]:
    found = {(c.sink, c.input, c.contender): c for c in cells}
    out = []
    for (sink, form, contender), cell in found.items():
        if contender not in ("connector", "python_heads"):
            continue
        versus = [("pattern", TARGET_VS_PATTERN, found.get((sink, form, "pattern")))]
        versus.append(("ceiling", None, found.get(("noop", form, "ceiling")) if sink == "noop" else None))
        for name, target, other in versus:
            if other is None:
                continue
            value = cell.per_s(settings.rows) / other.per_s(settings.rows)
            out.append(
                {
                    "bench": "beam_write",
                    "ratio": f"{contender}_vs_{name}",
                    "sink": sink,
                    "input": form,
                    "value": round(value, 2),
                    # CPU a row, least of the reps each: the steadier figure on a shared machine
                    "cpu_per_row_ratio": round(min(cell.cpus_s) / min(other.cpus_s), 2),
                    "target": target,
                    "met": None if target is None else value >= target,
                }
            )
    return out


def print_table(cells: list[Cell], settings: Settings) -> None:
    print(
        f"\n{settings.rows:,} × {settings.dim} float32, batch {settings.batch_size}, c={settings.concurrency}"
    )
    print(
        f"{'sink':>6} {'input':>7} {'contender':>10} {'elements/s':>11} {'wall s':>7} {'cpu s':>6} {'cpu us/row':>10} {'requests':>9}"
    )
    for cell in cells:
        best = cell.best
        print(
            f"{cell.sink:>6} {cell.input:>7} {cell.contender:>10} {cell.per_s(settings.rows):>11,.0f} "
            f"{cell.walls_s[best]:>7.2f} {cell.cpus_s[best]:>6.2f} "
            f"{min(cell.cpus_s) / settings.rows * 1e6:>10.2f} {cell.requests[best]:>9}"
        )


# --------------------------------------------------------------------------------------------------
# command line


def parse_args(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.bench.beam_write", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rows", type=int, default=100_000, help=f"a multiple of {PER_SHARD}")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--reps", type=int, default=1, help="runs per cell; the best is reported")
    parser.add_argument("--quick", action="store_true", help="smoke check: 5000 rows, 1 run")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=PineconeBackend.limits.default_rows,
        help="rows per request, both writers (default: the connector's Pinecone default)",
    )
    parser.add_argument("--concurrency", type=int, default=4, help="the connector's max_concurrency")
    parser.add_argument("--rows-per-batch", type=int, default=None, help="the connector's Beam batch")
    parser.add_argument("--sinks", default="noop,20ms", help="noop and/or <N>ms (a fixed reply delay)")
    parser.add_argument("--inputs", default=",".join(INPUTS))
    parser.add_argument("--contenders", default=",".join(DEFAULT_CONTENDERS), help=", ".join(CONTENDERS))
    parser.add_argument("--runner", choices=("fnapi", "direct"), default="fnapi")
    args = parser.parse_args(argv)
    rows = 5000 if args.quick else args.rows
    if rows % PER_SHARD or rows <= 0:
        parser.error(f"--rows must be a positive multiple of {PER_SHARD}")
    inputs, contenders = _split(args.inputs), _split(args.contenders)
    unknown = (set(inputs) - set(INPUTS)) | (set(contenders) - set(CONTENDERS))
    if unknown:
        parser.error(f"unknown {', '.join(sorted(unknown))}")
    return Settings(
        rows=rows,
        dim=args.dim,
        reps=1 if args.quick else max(1, args.reps),
        batch_size=args.batch_size,
        concurrency=args.concurrency,
        rows_per_batch=args.rows_per_batch,
        sinks=tuple((s, 0.0 if s == "noop" else float(s.removesuffix("ms"))) for s in _split(args.sinks)),
        inputs=inputs,
        contenders=contenders,
        runner=args.runner,
    )


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def main(argv: Sequence[str] | None = None) -> None:
    settings = parse_args(argv)
    env = environment("vectordb-connector", "apache-beam", "pinecone", "grpcio", "numpy", "pyarrow")
    started = time.perf_counter()
    cells = measure(settings)
    env["loadavg_at_end"] = os.getloadavg()[0]
    env["total_s"] = round(time.perf_counter() - started, 1)
    print_table(cells, settings)
    for cell in cells:
        print(json.dumps(cell_json(cell, settings, env)))
    for ratio in ratios(cells, settings):
        print(json.dumps(ratio))


if __name__ == "__main__":
    main()
