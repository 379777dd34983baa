"""Python lists of floats into float32: µs of CPU a row, the Python path (``struct``) and the native speedups
side by side in one run.

``python -m jobs.bench.python_floats [--rows 2000] [--dim 768] [--reps 5]``

Each stage reads the same rows, whose vectors are lists of Python floats, with either path, alternating
between the two every repetition (best of ``--reps`` each):

- ``convert``: ``rows.floats.float32_vector`` alone, a row's list into a float32 array;
- ``dict_row``: ``DictReader.read_record`` of a dict row (id, vector, a title);
- ``prepare_dicts``: the client's whole reading and checking of those dicts (``prepare_dicts``, one chunk);
- ``beam_chunk``, ``beam_row``: the Beam sink's reading of an ``apache_beam.ml.rag`` ``Chunk`` and of a
  ``beam.Row`` (skipped without Beam);
- ``numpy``: ``np.asarray(list, dtype=float32)``, for scale (no path uses it for lists of floats).

CPU is ``time.process_time`` over the stage (one thread: the same as its wall time, on a quiet machine).
One JSON line: per stage, µs a row for each path and python / native; the machine and the commit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Callable, Sequence

import numpy as np

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, floats, prepare_dicts
from vectordb.connector.rows.dicts import DictReader

from .machine import code_version, environment
from .native import python_floats

__all__ = ["main"]

PATHS = ("python", "native")
RULES = RowRules(max_id_length=512, max_metadata_bytes=40_960)


def stages(rows: int, dim: int) -> dict[str, Callable[[], object]]:
    """Each stage: a function that reads all ``rows`` once."""
    rng = np.random.default_rng(7)
    vectors = [rng.standard_normal(dim, dtype=np.float32).tolist() for _ in range(rows)]
    dicts = [{"id": f"doc-{i}", "values": v, "title": f"title {i}"} for i, v in enumerate(vectors)]
    reader = DictReader()
    convert = floats.float32_vector
    found: dict[str, Callable[[], object]] = {
        "convert": lambda: [convert(v) for v in vectors],
        "dict_row": lambda: [reader.read_record(d) for d in dicts],
        "prepare_dicts": lambda: prepare_dicts(dicts, ColumnSpec(), RULES, DimensionState(dim)),
        "numpy": lambda: [np.asarray(v, dtype=np.float32) for v in vectors],
    }
    try:
        import apache_beam as beam
        from apache_beam.ml.rag.types import Chunk, Content, Embedding

        from vectordb.beam.elements import ElementReader
        from vectordb.connector.options import BackendOptions
    except ImportError:
        return found
    elements = ElementReader.from_options(BackendOptions(uri="pinecone://bench.svc.pinecone.io"))
    chunks = [
        Chunk(id=f"doc-{i}", content=Content(text=f"title {i}"), embedding=Embedding(dense_embedding=v))
        for i, v in enumerate(vectors)
    ]
    beam_rows = [beam.Row(id=f"doc-{i}", values=v, title=f"title {i}") for i, v in enumerate(vectors)]
    found["beam_chunk"] = lambda: [elements.read(c) for c in chunks]
    found["beam_row"] = lambda: [elements.read(r) for r in beam_rows]
    return found


def measure(rows: int, dim: int, reps: int) -> dict[str, dict[str, float]]:
    """Best µs of CPU a row, per stage and path."""
    runs = stages(rows, dim)
    best: dict[str, dict[str, float]] = {name: {} for name in runs}
    for _ in range(reps):
        for name, run in runs.items():
            for path in PATHS if name != "numpy" else ("python",):
                if path == "native" and not floats.native_floats():
                    continue
                with python_floats() if path == "python" else contextlib.nullcontext():
                    start = time.process_time()
                    run()
                    spent = time.process_time() - start
                us = spent / rows * 1e6
                best[name][path] = min(best[name].get(path, us), us)
    return best


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    best = measure(args.rows, args.dim, args.reps)
    cells = {
        name: {f"{path}_us": round(us, 2) for path, us in paths.items()}
        | ({"python_over_native": round(paths["python"] / paths["native"], 2)} if len(paths) == 2 else {})
        for name, paths in best.items()
    }
    print(
        json.dumps(
            {
                "bench": "python_floats",
                "rows": args.rows,
                "dim": args.dim,
                "reps": args.reps,
                "cpu_us_per_row": cells,
                "native_installed": floats.native_floats(),
                "env": environment(
                    "vectordb-connector", "vectordb-connector-speedups", "numpy", "apache-beam"
                ),
                "code": code_version("connector", "beam", "jobs/bench"),
            }
        )
    )


if __name__ == "__main__":
    main()
