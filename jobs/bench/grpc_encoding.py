"""gRPC request framing: µs of CPU a row to encode Pinecone's and Qdrant's upsert requests, beside the copy of
the vectors alone, to tell the Python work per row (ids, metadata, varints) from the floor.

``python -m jobs.bench.grpc_encoding [--rows 100] [--dims 768,1536] [--reps 200]``

For each database, batch of ``--rows`` rows and dimension: the backend's own ``encode_grpc`` (what the engine
calls on every batch), for rows of a string id and a vector (``plain``), and with three metadata fields
(``metadata``: a string, an int, a float). ``copy`` is ``matrix.tobytes()`` of the same batch: the vectors'
bytes, copied once, which any encoder must do. ``per_row_python`` is ``encode - copy``: what framing costs
beyond the copy. One JSON line per case, with the machine; best of ``--reps`` (CPU, ``time.process_time``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vectordb.connector.backends import pinecone, qdrant
from vectordb.connector.client import resolve_options
from vectordb.connector.rows.types import RowBatch

from .machine import code_version, environment

__all__ = ["main"]


def batch_of(rows: int, dim: int, metadata: bool) -> RowBatch:
    matrix = np.random.default_rng(5).standard_normal((rows, dim), dtype=np.float32)
    ids: list[Any] = [f"doc-{i:08d}" for i in range(rows)]
    meta = [{"title": f"title {i}", "page": i, "score": i / 7} for i in range(rows)] if metadata else None
    return RowBatch(ids=ids, vectors=matrix, metadata=meta)


def best_us(run: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.process_time_ns()
        for _ in range(10):
            run()
        best = min(best, (time.process_time_ns() - start) / 10)
    return best / 1000


def encoders() -> dict[str, Callable[[RowBatch], bytes]]:
    options = resolve_options({"uri": "qdrant+grpc://127.0.0.1:6334/docs"})
    return {
        "pinecone+grpc": pinecone.encode_grpc,
        "qdrant+grpc": lambda batch: qdrant.encode_grpc(batch, "docs", options),  # type: ignore[arg-type]
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--dims", default="768,1536")
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args(argv)
    env = environment("vectordb-connector", "numpy")
    code = code_version("connector", "jobs/bench")
    for name, encode in encoders().items():
        for dim in (int(d) for d in args.dims.split(",")):
            for metadata in (False, True):
                batch = batch_of(args.rows, dim, metadata)
                assert batch.vectors is not None
                matrix = batch.vectors
                encode_us = best_us(lambda: encode(batch), args.reps)  # noqa: B023
                copy_us = best_us(matrix.tobytes, args.reps)
                print(
                    json.dumps(
                        {
                            "bench": "grpc_encoding",
                            "target": name,
                            "rows": args.rows,
                            "dim": dim,
                            "rows_have": "id, vector, 3 metadata fields" if metadata else "id, vector",
                            "encode_us_per_row": round(encode_us / args.rows, 3),
                            "copy_us_per_row": round(copy_us / args.rows, 3),
                            "per_row_python_us": round((encode_us - copy_us) / args.rows, 3),
                            "bytes_per_row": round(len(encode(batch)) / args.rows, 1),
                            "env": env,
                            "code": code,
                        }
                    )
                )


if __name__ == "__main__":
    main()
