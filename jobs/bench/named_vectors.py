"""Named dense vectors (two a row), side by side: this client against pymilvus into Milvus, and against psycopg's
COPY into PostgreSQL.

``python -m jobs.bench.named_vectors [--rows 20000 --dim 768 --batch-size 1000 --reps 3]`` writes N rows, each
with an id and two named float32 vectors (``title`` and ``body``, unit length, fixed seed), with the
client's rows a second and CPU microseconds a row (the client process's CPU seconds, all threads, over the
rows) for each contender:

- Milvus: the no-op servicer of ``jobs.bench.milvus_upsert`` (Milvus Lite's servicer, ``Upsert`` only
  counts: the real control plane, a free data plane), so the clients are what is measured. One collection per
  run, made by pymilvus with a VarChar key and FloatVector fields ``title`` and ``body``. Contenders:
  ``connector-c1``/``connector-c4`` (``connect("milvus://…", vector_columns="title:title,body:body")`` and
  ``client.upsert(table)`` of a ``pyarrow.Table``, one and four requests in flight), ``pymilvus-lists``
  (``MilvusClient.upsert(name, data=batch)`` of ``{"id", "title": list, "body": list}`` rows, built before
  timing) and ``pymilvus-numpy`` (the same rows with numpy vectors).
- PostgreSQL: a real server (``jobs.bench.pgvector_upsert.pg_server``: the tests' Debian PostgreSQL with
  pgvector, or ``--pg-uri``), one table per run, ``id text PRIMARY KEY, title vector(dim), body vector(dim),
  metadata jsonb``, two phases: ``insert`` (empty table) and ``update`` (the same ids, new vectors: every row
  takes ``ON CONFLICT … DO UPDATE``). Contenders: ``connector-c1``/``connector-c2``
  (``connect("postgresql://…?table=…", vector_columns=…)``), and ``psycopg-copy``: one psycopg connection
  doing what the connector does in SQL (a staging table, ``COPY … FROM STDIN (FORMAT BINARY)`` with
  ``Copy.write_row`` and a numpy → ``vector`` binary dumper as ``pgvector.psycopg`` has, then ``INSERT …
  SELECT … ON CONFLICT``, a commit per batch).

Each run is checked (the no-op server's count, the table's row count). Each cell is the best of ``--reps``
runs, interleaved across contenders, after one untimed warm-up of each. Output: one JSON line per cell
(``"bench": "named_vectors"``) with the environment, then one line of ratios connector ÷ official client per
database (throughput, and their CPU a row over ours); ``--out FILE`` appends the lines to ``FILE`` too.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .machine import environment
from .milvus_upsert import noop_server
from .pgvector_upsert import Server, _register_vector_dumper, _server_cpu_s, pg_server

__all__ = ["main"]

NAMES = ("title", "body")
MILVUS = ("connector-c1", "connector-c4", "pymilvus-lists", "pymilvus-numpy")
POSTGRES = ("connector-c1", "connector-c2", "psycopg-copy")
PHASES = ("insert", "update")


@dataclass(slots=True)
class Cell:
    database: str
    contender: str
    phase: str
    walls_s: list[float] = field(default_factory=list)
    cpus_s: list[float] = field(default_factory=list)
    server_cpus_s: list[float | None] = field(default_factory=list)

    def best(self) -> int:
        return min(range(len(self.walls_s)), key=self.walls_s.__getitem__)


@dataclass(frozen=True, slots=True)
class Inputs:
    ids: list[str]
    matrices: dict[str, dict[str, np.ndarray]]  # phase -> name -> (rows, dim) float32
    tables: dict[str, Any]  # phase -> pyarrow.Table: id, title, body (list<float>), n


def build_inputs(rows: int, dim: int, seed: int) -> Inputs:
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    ids = [f"vec-{i:07d}" for i in range(rows)]
    offsets = pa.array(np.arange(0, (rows + 1) * dim, dim, dtype=np.int32))
    matrices, tables = {}, {}
    for phase in PHASES:
        matrices[phase] = {}
        columns: dict[str, Any] = {"id": ids}
        for name in NAMES:
            matrix = rng.standard_normal((rows, dim), dtype=np.float32)
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
            matrices[phase][name] = matrix
            columns[name] = pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))
        columns["n"] = pa.array(np.arange(rows, dtype=np.int64))
        tables[phase] = pa.table(columns)
    return Inputs(ids, matrices, tables)


# --------------------------------------------------------------------------------------------------
# Milvus: the no-op servicer


def milvus_collection(address: str, dim: int) -> str:
    from pymilvus import DataType, MilvusClient

    name = f"bench_named_{uuid.uuid4().hex[:10]}"
    admin = MilvusClient(uri=f"http://{address}")
    try:
        schema = admin.create_schema(auto_id=False, enable_dynamic_field=True)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        for vector in NAMES:
            schema.add_field(vector, DataType.FLOAT_VECTOR, dim=dim)
        index = admin.prepare_index_params()
        for vector in NAMES:
            index.add_index(vector, index_type="AUTOINDEX", metric_type="COSINE")
        admin.create_collection(name, schema=schema, index_params=index)
    finally:
        admin.close()
    return name


def milvus_writer(address: str, contender: str, data: Inputs, batch_size: int) -> Callable[[str], int]:
    """A function that upserts every row of a phase into a fresh collection; what it builds before is untimed."""
    if contender.startswith("connector"):
        from vectordb.connector import connect

        concurrency = int(contender.rsplit("c", 1)[1])

        def connector(phase: str) -> int:
            name = milvus_collection(address, data.matrices[phase]["title"].shape[1])
            options = {"vector_columns": {n: n for n in NAMES}, "batch_size": batch_size}
            with connect(f"milvus://{address}/{name}", max_concurrency=concurrency, **options) as client:
                client.upsert(data.tables[phase].slice(0, 1))  # warm-up: channel, check_named_target
                start_cpu, start = time.process_time(), time.perf_counter()
                written = client.upsert(data.tables[phase]).written
                _mark(start, start_cpu)
            return written

        return connector

    from pymilvus import MilvusClient

    rows: dict[str, list[dict[str, Any]]] = {}
    for phase in PHASES:
        m = data.matrices[phase]
        if contender == "pymilvus-lists":
            lists = {n: m[n].tolist() for n in NAMES}
            rows[phase] = [
                {"id": i, **{n: lists[n][k] for n in NAMES}, "n": k} for k, i in enumerate(data.ids)
            ]
        else:
            rows[phase] = [{"id": i, **{n: m[n][k] for n in NAMES}, "n": k} for k, i in enumerate(data.ids)]

    def official(phase: str) -> int:
        name = milvus_collection(address, data.matrices[phase]["title"].shape[1])
        client = MilvusClient(uri=f"http://{address}")
        try:
            client.upsert(name, data=rows[phase][:1])  # warm-up: channel, schema cache
            start_cpu, start = time.process_time(), time.perf_counter()
            written = 0
            for k in range(0, len(rows[phase]), batch_size):
                written += client.upsert(name, data=rows[phase][k : k + batch_size])["upsert_count"]
            _mark(start, start_cpu)
        finally:
            client.close()
        return written

    return official


# --------------------------------------------------------------------------------------------------
# PostgreSQL


def pg_table(admin: Any, dim: int) -> str:
    table = f"bench_named_{uuid.uuid4().hex[:10]}"
    admin.execute(
        f'CREATE TABLE "{table}" (id text PRIMARY KEY, title vector({dim}), body vector({dim}), metadata jsonb)'
    )
    return table


def pg_writer(
    server: Server, conn: Any, contender: str, data: Inputs, batch_size: int
) -> Callable[[str, str], int]:
    if contender.startswith("connector"):
        from vectordb.connector import connect

        concurrency = int(contender.rsplit("c", 1)[1])

        def connector(table: str, phase: str) -> int:
            sep = "&" if "?" in server.conninfo else "?"
            uri = f"{server.conninfo}{sep}table={table}"
            options = {"vector_columns": {n: n for n in NAMES}, "batch_size": batch_size}
            with connect(uri, max_concurrency=concurrency, **options) as client:
                report = client.write(data.tables[phase])
            if not report.ok:
                raise RuntimeError(f"connector: {report!r}")
            return report.written

        return connector

    from psycopg.types.json import Jsonb

    vector_oid = conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]
    _register_vector_dumper(conn, vector_oid)

    def official(table: str, phase: str) -> int:
        stage = f"stage_{table}"
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {stage} (v0 vector, v1 vector, id text, m jsonb) ON COMMIT DELETE ROWS"
        )
        conn.commit()
        apply = (
            f'INSERT INTO "{table}" (id, title, body, metadata) SELECT id, v0, v1, m FROM pg_temp.{stage} '
            "ORDER BY id ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title, body = EXCLUDED.body, "
            "metadata = EXCLUDED.metadata"
        )
        title, body = (data.matrices[phase][n] for n in NAMES)
        with conn.cursor() as cur:
            for start in range(0, len(data.ids), batch_size):
                stop = min(start + batch_size, len(data.ids))
                with cur.copy(f"COPY pg_temp.{stage} (v0, v1, id, m) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types([vector_oid, vector_oid, "text", "jsonb"])
                    for i in range(start, stop):
                        copy.write_row((title[i], body[i], data.ids[i], Jsonb({"n": i})))
                cur.execute(apply)
                conn.commit()
        return len(data.ids)

    return official


# --------------------------------------------------------------------------------------------------
# timing: a writer marks where its timed part starts (the Milvus ones build their collection first)

_MARK: list[tuple[float, float]] = []


def _mark(start: float, start_cpu: float) -> None:
    _MARK.append((time.perf_counter() - start, time.process_time() - start_cpu))


def timed_milvus(write: Callable[[str], int], phase: str, rows: int) -> tuple[float, float]:
    """(wall s, client CPU s) of the timed part of one write, checked by the rows the server counted."""
    _MARK.clear()
    written = write(phase)
    if written != rows or len(_MARK) != 1:
        raise RuntimeError(f"milvus {phase}: wrote {written} of {rows}")
    return _MARK[0]


def timed_pg(
    admin: Any, server: Server, write: Callable[[str, str], int], rows: int, dim: int
) -> dict[str, tuple[float, float, float | None]]:
    table = pg_table(admin, dim)
    out = {}
    try:
        for phase in PHASES:
            cpu0, server0, t0 = time.process_time(), _server_cpu_s(server.pid), time.perf_counter()
            written = write(table, phase)
            wall = time.perf_counter() - t0
            cpu, server1 = time.process_time() - cpu0, _server_cpu_s(server.pid)
            stored = admin.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
            if written != rows or stored != rows:
                raise RuntimeError(
                    f"postgres {phase}: wrote {written}, the table holds {stored}; expected {rows}"
                )
            out[phase] = (wall, cpu, None if server0 is None or server1 is None else server1 - server0)
    finally:
        admin.execute(f'DROP TABLE "{table}"')
    return out


def run_milvus(args: argparse.Namespace, data: Inputs) -> list[Cell]:
    contenders = [c for c in args.milvus.split(",") if c]
    if not contenders:
        return []
    with (
        tempfile.TemporaryDirectory(prefix="named-bench-") as tmp,
        noop_server(str(Path(tmp) / "noop.db")) as addr,
    ):
        writers = {c: milvus_writer(addr, c, data, args.batch_size) for c in contenders}
        cells = {c: Cell("milvus", c, "insert") for c in contenders}
        for c in contenders:  # warm-up, untimed
            timed_milvus(writers[c], "insert", args.rows)
        for _ in range(args.reps):
            for c in contenders:
                wall, cpu = timed_milvus(writers[c], "insert", args.rows)
                cells[c].walls_s.append(wall)
                cells[c].cpus_s.append(cpu)
                cells[c].server_cpus_s.append(None)
                print(f"milvus {c}: {args.rows / wall:,.0f} rows/s", file=sys.stderr)
    return list(cells.values())


def run_postgres(args: argparse.Namespace, data: Inputs, env: dict[str, Any]) -> list[Cell]:
    contenders = [c for c in args.postgres.split(",") if c]
    if not contenders:
        return []
    import psycopg

    with pg_server(args.pg_uri) as server, psycopg.connect(server.conninfo, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
        env["postgres"] = admin.execute("SELECT current_setting('server_version')").fetchone()[0]
        env["pgvector"] = admin.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()[0]
        with psycopg.connect(server.conninfo) as single:
            writers = {c: pg_writer(server, single, c, data, args.batch_size) for c in contenders}
            cells = {(c, p): Cell("postgresql", c, p) for c in contenders for p in PHASES}
            for c in contenders:  # warm-up, untimed
                timed_pg(admin, server, writers[c], args.rows, args.dim)
            for _ in range(args.reps):
                for c in contenders:
                    for phase, (wall, cpu, server_cpu) in timed_pg(
                        admin, server, writers[c], args.rows, args.dim
                    ).items():
                        cell = cells[(c, phase)]
                        cell.walls_s.append(wall)
                        cell.cpus_s.append(cpu)
                        cell.server_cpus_s.append(server_cpu)
                        print(f"postgresql {c} {phase}: {args.rows / wall:,.0f} rows/s", file=sys.stderr)
    return list(cells.values())


def report(cells: list[Cell], args: argparse.Namespace, env: dict[str, Any]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    best: dict[tuple[str, str, str], tuple[float, float]] = {}
    for cell in cells:
        i = cell.best()
        rate = args.rows / cell.walls_s[i]
        cpu_us = cell.cpus_s[i] / args.rows * 1e6
        server_cpu = cell.server_cpus_s[i]
        lines.append(
            {
                "bench": "named_vectors",
                "database": cell.database,
                "server": "noop" if cell.database == "milvus" else "postgresql",
                "contender": cell.contender,
                "phase": cell.phase,
                "rows": args.rows,
                "vectors_a_row": len(NAMES),
                "dim": args.dim,
                "batch_size": args.batch_size,
                "rows_per_s": round(rate),
                "client_cpu_us_per_row": round(cpu_us, 1),
                "server_cpu_per_wall": None if server_cpu is None else round(server_cpu / cell.walls_s[i], 2),
                "runs_s": [round(w, 3) for w in cell.walls_s],
                "env": env,
            }
        )
        best[(cell.database, cell.phase, cell.contender)] = (rate, cpu_us)
    ratios: dict[str, Any] = {}
    for database, phase in sorted({(d, p) for d, p, _ in best}):
        ours = [
            v for (d, p, c), v in best.items() if (d, p) == (database, phase) and c.startswith("connector")
        ]
        theirs = [
            v
            for (d, p, c), v in best.items()
            if (d, p) == (database, phase) and not c.startswith("connector")
        ]
        if ours and theirs:
            top, their_top = max(ours), max(theirs)
            ratios[f"{database}/{phase}"] = {
                "throughput_x": round(top[0] / their_top[0], 2),
                "their_cpu_per_row_over_ours": round(min(t[1] for t in theirs) / min(o[1] for o in ours), 2),
            }
    lines.append({"bench": "named_vectors", "ratios_connector_vs_official": ratios, "env": env})
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3, help="best of N, interleaved")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--milvus", default=",".join(MILVUS), help="contenders ('' to skip)")
    parser.add_argument("--postgres", default=",".join(POSTGRES), help="contenders ('' to skip)")
    parser.add_argument(
        "--pg-uri", help="an existing database, postgresql://user@host/db (else one is started)"
    )
    parser.add_argument("--out", help="also append the JSON lines to this file")
    args = parser.parse_args(argv)
    data = build_inputs(args.rows, args.dim, args.seed)
    env = environment("pymilvus", "milvus-lite", "psycopg", "grpcio", "numpy", "pyarrow")
    cells = run_milvus(args, data) + run_postgres(args, data, env)
    lines = report(cells, args, env)
    for line in lines:
        print(json.dumps(line), flush=True)
    if args.out:
        with open(args.out, "a") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
