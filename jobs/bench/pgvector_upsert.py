"""pgvector upsert throughput, side by side: this client and psycopg ``executemany``, into a real PostgreSQL.

``python -m jobs.bench.pgvector_upsert [--rows 20000] [--dim 768]`` starts a PostgreSQL with
pgvector (the tests' ``tests/integration/pg_server.py``: Debian's, unix socket only, data in a
temporary directory) unless ``--uri`` names a database, and upserts N random unit-length float32 vectors
with one small metadata field. Every run goes into its own table, created beforehand with the
layout the connector creates (``id text PRIMARY KEY, embedding vector(dim), metadata jsonb``,
no ANN index), in two phases: ``insert`` (the table is empty) and ``update`` (the same ids
again with new vectors, so every row takes the ``ON CONFLICT … DO UPDATE`` path). Contenders:

- ``connector``: ``connect("postgresql://…?table=…", batch_size, max_concurrency).write(table)``
  of a ``pyarrow.Table``: binary COPY of bytes built from the numpy matrix into a staging table,
  then ``INSERT … SELECT … ON CONFLICT``, one transaction per batch, ``max_concurrency``
  connections.
- ``executemany``: one psycopg connection, per batch ``cursor.executemany("INSERT … VALUES
  (%s, %s::vector, %s) ON CONFLICT (id) DO UPDATE …")`` and a commit, the vector passed in
  pgvector's text form ``'[0.1,…]'`` (``pgvector.psycopg`` is not installed), metadata as
  ``Jsonb``. psycopg 3 pipelines ``executemany``, so this is its fast path. The text is made
  with ``orjson.dumps(row)`` (shortest float32 digits, ~20 µs a row): ``str(row.tolist())``
  or ``",".join(map(str, …))`` cost ~1 ms a 768-d row here and would make the baseline a straw man.
- ``copy-write_row`` and ``copy-bytes``: one connection, the connector's very SQL (staging
  table, ``INSERT … SELECT``); the COPY stream made by psycopg's ``Copy.write_row`` with binary
  dumpers (``set_types``, a numpy → ``vector`` dumper as ``pgvector.psycopg`` has), or written
  as the bytes ``encode_copy`` builds. The pair isolates the encoder; ``connector`` vs
  ``copy-bytes`` shows what concurrency adds.

Timed: the write only (``time.perf_counter``), with the client's CPU seconds (all threads) and
the server's (the postmaster's own and reaped children's, plus live backends', from psutil).
Every run is checked: the table holds N rows afterwards. Each cell is the best of ``--reps``
runs, interleaved across contenders. Output: one JSON line per cell (``"bench":
"pgvector_upsert"``) with the environment, then one with the ratios connector / executemany.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .machine import environment

__all__ = ["main"]

CONTENDERS = ("connector", "executemany", "copy-write_row", "copy-bytes")
PHASES = ("insert", "update")


@dataclass(frozen=True, slots=True)
class Server:
    conninfo: str  # libpq URI, no table parameter
    pid: int | None  # the postmaster, when this script started it
    origin: str  # where the server's binaries came from ("--uri": not started here)


@dataclass(slots=True)
class Cell:
    contender: str
    phase: str
    batch_size: int
    concurrency: int
    walls_s: list[float] = field(default_factory=list)
    cpus_s: list[float] = field(default_factory=list)
    server_cpus_s: list[float | None] = field(default_factory=list)

    def best(self) -> int:
        return min(range(len(self.walls_s)), key=self.walls_s.__getitem__)


@dataclass(frozen=True, slots=True)
class Inputs:
    ids: list[str]
    titles: list[str]
    matrices: dict[str, np.ndarray]  # phase → (rows, dim) float32
    tables: dict[str, Any]  # phase → pyarrow.Table


# --------------------------------------------------------------------------------------------------
# the server


@contextmanager
def pg_server(uri: str | None) -> Iterator[Server]:
    """The database at ``uri``, or one started here as the tests start theirs, and stopped on exit."""
    if uri:
        yield Server(uri, None, "--uri")
        return
    from tests.integration.pg_server import postgres_server

    with postgres_server() as started:
        conninfo = f"postgresql://postgres@/postgres?host={started.socket_dir}"
        yield Server(conninfo, started.postmaster_pid(), started.install.origin)


def _server_cpu_s(pid: int | None) -> float | None:
    """CPU seconds of the postmaster, its reaped backends and its live ones."""
    if pid is None:
        return None
    import psutil

    try:
        root = psutil.Process(pid)
        t = root.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in root.children(recursive=True):
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.NoSuchProcess:
                pass  # reaped meanwhile: the next reading counts it in children_*
        return total
    except psutil.NoSuchProcess:
        return None


# --------------------------------------------------------------------------------------------------
# contenders: each returns a function that upserts every row of a phase into the named table


def _upsert_sql(table: str) -> str:
    return (
        f'INSERT INTO "{table}" (id, embedding, metadata) VALUES (%s, %s::vector, %s) '
        "ON CONFLICT (id) DO UPDATE SET embedding = EXCLUDED.embedding, metadata = EXCLUDED.metadata"
    )


def connector_writer(
    server: Server, data: Inputs, batch_size: int, concurrency: int
) -> Callable[[str, str], int]:
    from vectordb.connector import connect

    def write(table: str, phase: str) -> int:
        uri = (
            f"{server.conninfo}&table={table}"
            if "?" in server.conninfo
            else f"{server.conninfo}?table={table}"
        )
        with connect(uri, batch_size=batch_size, max_concurrency=concurrency) as client:
            report = client.write(data.tables[phase])
        if not report.ok:
            raise RuntimeError(f"connector: {report!r}")
        return report.written

    return write


def executemany_writer(conn: Any, data: Inputs, batch_size: int) -> Callable[[str, str], int]:
    import orjson
    from psycopg.types.json import Jsonb

    def write(table: str, phase: str) -> int:
        matrix = data.matrices[phase]
        statement = _upsert_sql(table)
        with conn.cursor() as cur:
            for start in range(0, len(data.ids), batch_size):
                stop = min(start + batch_size, len(data.ids))
                params = [
                    (
                        data.ids[i],
                        orjson.dumps(matrix[i], option=orjson.OPT_SERIALIZE_NUMPY).decode(),
                        Jsonb({"title": data.titles[i]}),
                    )
                    for i in range(start, stop)
                ]
                cur.executemany(statement, params)
                conn.commit()
        return len(data.ids)

    return write


def copy_writer(conn: Any, data: Inputs, batch_size: int, *, own_bytes: bool) -> Callable[[str, str], int]:
    """The connector's SQL on one connection; the COPY stream from ``encode_copy`` or ``write_row``."""
    from vectordb.connector.backends.pgvector import PgvectorBackend, PgvectorOptions, encode_copy
    from vectordb.connector.rows import RowBatch

    dim = next(iter(data.matrices.values())).shape[1]
    vector_oid = conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]
    _register_vector_dumper(conn, vector_oid)

    def write(table: str, phase: str) -> int:
        backend = PgvectorBackend(PgvectorOptions(uri=f"postgresql:///x?table={table}", dimension=dim))
        layout = backend.layout
        conn.execute(layout.setup_sql())
        conn.commit()
        matrix = data.matrices[phase]
        with conn.cursor() as cur:
            for start in range(0, len(data.ids), batch_size):
                stop = min(start + batch_size, len(data.ids))
                with cur.copy(layout.copy_sql()) as copy:
                    if own_bytes:
                        metadata = [{"title": t} for t in data.titles[start:stop]]
                        batch = RowBatch(
                            ids=data.ids[start:stop], vectors=matrix[start:stop], metadata=metadata
                        )
                        copy.write(encode_copy(batch, layout))
                    else:
                        from psycopg.types.json import Jsonb

                        copy.set_types([vector_oid, "text", "jsonb"])
                        for i in range(start, stop):
                            copy.write_row((matrix[i], data.ids[i], Jsonb({"title": data.titles[i]})))
                cur.execute(layout.upsert_sql())
                conn.commit()
        return len(data.ids)

    return write


def _register_vector_dumper(conn: Any, oid: int) -> None:
    """numpy → pgvector binary, as ``pgvector.psycopg`` does it: int16 dim, int16 unused, >f4 values."""
    import struct

    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class VectorBinaryDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return struct.pack(">HH", obj.shape[0], 0) + obj.astype(">f4").tobytes()

    VectorBinaryDumper.oid = oid
    conn.adapters.register_dumper(np.ndarray, VectorBinaryDumper)


# --------------------------------------------------------------------------------------------------
# the run


def build_inputs(rows: int, dim: int, seed: int) -> Inputs:
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    ids = [f"vec-{i:07d}" for i in range(rows)]
    titles = [f"document {i}" for i in range(rows)]
    matrices, tables = {}, {}
    for phase in PHASES:
        matrix = rng.standard_normal((rows, dim), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)  # unit length, as embeddings are
        offsets = pa.array(np.arange(0, (rows + 1) * dim, dim, dtype=np.int32))
        values = pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))
        matrices[phase] = matrix
        tables[phase] = pa.table({"id": ids, "values": values, "title": titles})
    return Inputs(ids, titles, matrices, tables)


def timed_run(
    admin: Any, server: Server, write: Callable[[str, str], int], rows: int, dim: int
) -> dict[str, tuple[float, float, float | None]]:
    """Per phase: (wall s, client CPU s, server CPU s) of one write, into a fresh table checked by count."""
    table = f"bench_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE TABLE "{table}" (id text PRIMARY KEY, embedding vector({dim}), metadata jsonb)')
    out = {}
    try:
        for phase in PHASES:
            cpu0, server0, t0 = time.process_time(), _server_cpu_s(server.pid), time.perf_counter()
            written = write(table, phase)
            wall = time.perf_counter() - t0
            cpu, server1 = time.process_time() - cpu0, _server_cpu_s(server.pid)
            stored = admin.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
            if written != rows or stored != rows:
                raise RuntimeError(f"{phase}: wrote {written}, the table holds {stored}; expected {rows}")
            out[phase] = (wall, cpu, None if server0 is None or server1 is None else server1 - server0)
    finally:
        admin.execute(f'DROP TABLE "{table}"')
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--batch-sizes", default="1000")
    parser.add_argument(
        "--concurrencies", default="2,4", help="for this client; the others use one connection"
    )
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--uri", help="an existing database, postgresql://user@host/db (else one is started)")
    args = parser.parse_args(argv)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    concurrencies = [int(c) for c in args.concurrencies.split(",")]
    data = build_inputs(args.rows, args.dim, args.seed)
    env = environment("psycopg", "numpy")

    import psycopg

    with pg_server(args.uri) as server, psycopg.connect(server.conninfo, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
        db = admin.execute("SELECT current_setting('server_version')").fetchone()[0]
        env["postgres"] = db
        env["postgres_from"] = server.origin
        env["pgvector"] = admin.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()[0]
        with psycopg.connect(server.conninfo) as single:
            writers: list[tuple[list[Cell], Callable[[str, str], int]]] = []
            for batch in batch_sizes:
                for c in concurrencies:
                    writers.append((_cells("connector", batch, c), connector_writer(server, data, batch, c)))
                writers.append((_cells("executemany", batch, 1), executemany_writer(single, data, batch)))
                writers.append(
                    (_cells("copy-write_row", batch, 1), copy_writer(single, data, batch, own_bytes=False))
                )
                writers.append(
                    (_cells("copy-bytes", batch, 1), copy_writer(single, data, batch, own_bytes=True))
                )
            # warm-up, untimed: connections, imports, the server's caches
            for _, writer in writers:
                timed_run(admin, server, writer, args.rows, args.dim)
            for _ in range(args.reps):  # interleaved, so background load hits every contender alike
                for cells, writer in writers:
                    for cell, (wall, cpu, server_cpu) in zip(
                        cells, timed_run(admin, server, writer, args.rows, args.dim).values(), strict=True
                    ):
                        cell.walls_s.append(wall)
                        cell.cpus_s.append(cpu)
                        cell.server_cpus_s.append(server_cpu)
    _report([cell for cells, _ in writers for cell in cells], args, env)


def _cells(contender: str, batch_size: int, concurrency: int) -> list[Cell]:
    return [Cell(contender, phase, batch_size, concurrency) for phase in PHASES]


def _report(cells: list[Cell], args: argparse.Namespace, env: dict[str, Any]) -> None:
    best: dict[tuple[str, str], float] = {}
    for cell in cells:
        i = cell.best()
        rate = args.rows / cell.walls_s[i]
        server_cpu = cell.server_cpus_s[i]
        line = {
            "bench": "pgvector_upsert",
            "contender": cell.contender,
            "phase": cell.phase,
            "rows": args.rows,
            "dim": args.dim,
            "batch_size": cell.batch_size,
            "concurrency": cell.concurrency,
            "vectors_per_s": round(rate),
            "wall_s": round(cell.walls_s[i], 3),
            "client_cpu_per_wall": round(cell.cpus_s[i] / cell.walls_s[i], 2),
            "server_cpu_per_wall": None if server_cpu is None else round(server_cpu / cell.walls_s[i], 2),
            "runs_s": [round(w, 3) for w in cell.walls_s],
            "env": env,
        }
        print(json.dumps(line), flush=True)
        key = (cell.contender, cell.phase)
        best[key] = max(best.get(key, 0.0), rate)
    ratios = {
        phase: round(best[("connector", phase)] / best[("executemany", phase)], 2)
        for phase in PHASES
        if ("connector", phase) in best and ("executemany", phase) in best
    }
    encoder = {
        phase: round(best[("copy-bytes", phase)] / best[("copy-write_row", phase)], 2)
        for phase in PHASES
        if ("copy-bytes", phase) in best and ("copy-write_row", phase) in best
    }
    print(
        json.dumps(
            {
                "bench": "pgvector_upsert",
                "ratio_connector_vs_executemany": ratios,
                "ratio_copy_bytes_vs_write_row": encoder,
            }
        )
    )


if __name__ == "__main__":
    main()
