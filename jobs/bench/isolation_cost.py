"""What isolating refused rows costs: requests per write for k bad rows per batch, and an all-bad write.

``python -m jobs.bench.isolation_cost [--rows 50000] [--batch-size 500]`` writes through the
connector's own engine to a scripted in-process server that refuses any request holding a bad
id with one message that names no row (the hard case: only splitting can find the rows), and
prints one JSON line per case: requests sent, extra requests per bad row, rows re-sent per row,
and whether the report is exact: every bad row failed, a good row only as ``NotIsolated`` (the budget
ran out: ``not_isolated_rows``), each row counted once. The command exits with 1 when a case is not
exact, since its figures then measure a miscount. Request counts do not depend on the
network, so no socket is involved; the budget is the default one.

``--table`` (default 20,000 rows) measures the stated bound instead, over bad-row fractions 1, 10
and 50 % (placed at random), batch sizes 7, 100 and 1,000 and ``max_concurrency`` 1, 8 and 32: per
cell one JSON line (``"bench": "isolation_table"``), then a table. Each cell says how many good rows
failed (``NotIsolated``: the budget was spent, or the write stopped), how many bad rows were reported
and how many of them one by one, the requests sent, the isolation requests (requests less first
sends: a first send is a request none of whose rows the server saw before, an isolation probe one
whose rows it did), the bound the README states (1,000 + ``isolation_budget`` × rows first sent),
whether the budget ran out, whether a ``SystemicRejection`` stopped the write, and ``exact``: every bad
row failed, and good rows only as ``NotIsolated``. The client reads
dicts 4,096 at a time and cuts each chunk into batches, so 20,000 rows in batches of 1,000 are 24 first
sends (four of 96 rows, one of 616), not 20.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from vectordb.connector import Rejected, WriteReport, connect
from vectordb.connector.engine import Engine
from vectordb.connector.errors import SystemicRejection
from vectordb.connector.protowire import FieldReader, varint_field
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

from .machine import environment

DIM = 8
STATED_RESERVE = 1000  # the README's bound: 1,000 requests + isolation_budget per row sent
FRACTIONS = (0.01, 0.10, 0.50)
BATCH_SIZES = (7, 100, 1000)
CONCURRENCIES = (1, 8, 32)
TABLE_ROWS = 20_000


class Refuser:
    """Refuses a request holding a bad id with one message; counts rows re-sent and first sends."""

    def __init__(self, bad: set[str]) -> None:
        self.bad = bad
        self.rows_sent = 0
        self.first_sends = 0  # requests whose rows had not arrived before: batches, not isolation probes
        self.rows_first_sent = 0
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, request: WireRequest) -> WireReply:
        # UpsertRequest{vectors=1 [Vector{id=1}]}
        ids = [FieldReader(v).str(1) for v in FieldReader(request.body).fields.get(1, [])]
        with self._lock:
            self.rows_sent += len(ids)
            # a probe holds rows of a request answered before it; a batch's rows are all new (ids are unique)
            if ids and ids[0] not in self._seen:
                self.first_sends += 1
                self.rows_first_sent += len(ids)
                self._seen.update(ids)
        if not self.bad.isdisjoint(ids):
            raise Rejected("INVALID_ARGUMENT: invalid vector", status="INVALID_ARGUMENT")
        # UpsertResponse{upserted_count=1}: an empty reply reads as 0 upserted, a short count (retried, failed)
        return WireReply(varint_field(1, len(ids)))


@dataclass(frozen=True, slots=True)
class Written:
    """One write through a ``Refuser``: its report (up to the stop, if one), what the server counted."""

    report: WriteReport
    stopped: str | None  # the SystemicRejection's message
    requests: int
    server: Refuser
    isolation_budget: float
    seconds: float


def write_refused(ids: list[str], bad: set[str], batch_size: int, concurrency: int) -> Written:
    """Write ``ids`` (8-d rows) with ``on_error="report"`` and the default budget to a ``Refuser``."""
    server = Refuser(bad)
    client = connect(
        "pinecone+grpc://127.0.0.1:1",
        verify=False,
        on_error="report",
        batch_size=batch_size,
        max_concurrency=concurrency,
    )
    transport = MockTransport(server)
    client._engine = Engine(client.backend, transport, client.options, sleep=lambda s: None)
    data = [{"id": i, "values": [0.5] * DIM} for i in ids]
    stopped = None
    started = time.perf_counter()
    try:
        report = client.write(data)
    except SystemicRejection as exc:
        stopped, report = str(exc), exc.report or WriteReport()
    finally:
        client.close()
    seconds = time.perf_counter() - started
    return Written(report, stopped, len(transport.requests), server, client.options.isolation_budget, seconds)


def run_case(rows: int, batch_size: int, bad_per_batch: int | None, concurrency: int) -> dict[str, object]:
    rng = random.Random(1)
    ids = [f"r{i}" for i in range(rows)]
    if bad_per_batch is None:
        bad = set(ids)
    else:
        bad = set()
        for start in range(0, rows, batch_size):
            bad |= {ids[start + k] for k in rng.sample(range(min(batch_size, rows - start)), bad_per_batch)}
    written = write_refused(ids, bad, batch_size, concurrency)
    report, stopped = written.report, written.stopped
    exact: bool | None = None
    unisolated: int | None = None
    if stopped is None:
        failed = set(report.failed_ids)
        not_isolated = {i for f in report.failures if f.error_type == "NotIsolated" for i in f.ids}
        # every bad row failed, a good one only where the budget ran out, and every row is counted once
        exact = failed >= bad and failed - bad <= not_isolated and report.written + len(failed) == rows
        unisolated = len(not_isolated)
    requests = written.requests
    batches = -(-rows // batch_size)
    return {
        "case": "all bad" if bad_per_batch is None else f"{bad_per_batch} bad per batch",
        "rows": rows,
        "batch_size": batch_size,
        "bad_rows": len(bad),
        "requests": requests,
        "extra_requests_per_bad_row": None if stopped else round((requests - batches) / max(1, len(bad)), 2),
        "rows_sent_per_row": round(written.server.rows_sent / rows, 2),
        "exact": exact,
        "not_isolated_rows": unisolated,
        "systemic_stop": stopped[:120] if stopped else None,
    }


def run_cell(rows: int, fraction: float, batch_size: int, concurrency: int, seed: int) -> dict[str, Any]:
    """One cell of the table: ``fraction`` of ``rows`` bad, placed at random with ``seed``."""
    ids = [f"r{i}" for i in range(rows)]
    bad = set(random.Random(seed).sample(ids, round(fraction * rows)))
    written = write_refused(ids, bad, batch_size, concurrency)
    report, server = written.report, written.server
    by_type: dict[str, set[str]] = {}
    for failure in report.failures:
        by_type.setdefault(failure.error_type, set()).update(i for i in failure.ids if i is not None)
    failed = set().union(*by_type.values()) if by_type else set()
    not_isolated = by_type.get("NotIsolated", set())
    isolation_requests = written.requests - server.first_sends
    bound = STATED_RESERVE + written.isolation_budget * server.rows_first_sent
    return {
        "bench": "isolation_table",
        "rows": rows,
        "bad_fraction": fraction,
        "batch_size": batch_size,
        "max_concurrency": concurrency,
        "seed": seed,
        "bad_rows": len(bad),
        "good_failed": len(failed - bad),  # a good row can fail only as NotIsolated here
        "good_refused": len(by_type.get("Rejected", set()) - bad),  # refused one by one: never for good rows
        "bad_reported": len(failed & bad),
        "bad_isolated": len(by_type.get("Rejected", set()) & bad),
        "bad_not_isolated": len(not_isolated & bad),
        # every bad row failed, and a good row only as NotIsolated: anything else is a miscounting bench
        "exact": failed >= bad and failed - bad <= not_isolated,
        "written": report.written,
        "unaccounted": rows - report.written - report.failed,  # rows a stopped write never sent
        "requests": written.requests,
        "first_sends": server.first_sends,
        "rows_first_sent": server.rows_first_sent,
        "isolation_requests": isolation_requests,
        "bound": bound,
        "within_bound": isolation_requests <= bound,
        "budget_spent": any(f.error_type == "NotIsolated" and "budget" in f.error for f in report.failures),
        "systemic_stop": written.stopped,
        "seconds": round(written.seconds, 2),
    }


def print_table(cells: list[dict[str, Any]]) -> None:
    head = (
        f"{'bad':>4} {'batch':>5} {'conc':>4} {'good failed':>11} {'bad reported':>14} {'one by one':>10} "
        f"{'requests':>8} {'isolation':>9} {'bound':>6} {'spent':>5} {'systemic':>8}"
    )
    print(head)
    for c in cells:
        reported = f"{c['bad_reported']:,}/{c['bad_rows']:,}"
        print(
            f"{c['bad_fraction']:>4.0%} {c['batch_size']:>5} {c['max_concurrency']:>4} {c['good_failed']:>11,} "
            f"{reported:>14} {c['bad_isolated']:>10,} {c['requests']:>8,} "
            f"{c['isolation_requests']:>9,} {c['bound']:>6,.0f} {'yes' if c['budget_spent'] else 'no':>5} "
            f"{'stopped' if c['systemic_stop'] else 'no':>8}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, help="default 50,000; with --table 20,000")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--table", action="store_true", help="the bound over fractions, batch sizes, concurrency"
    )
    parser.add_argument("--seed", type=int, default=1, help="where --table places the bad rows")
    args = parser.parse_args(argv)
    env = environment()
    inexact = 0  # cases whose report is not exactly the bad rows: their figures measure nothing
    if not args.table:
        for bad_per_batch in (1, 2, 10, 50, None):
            result = run_case(args.rows or 50_000, args.batch_size, bad_per_batch, args.concurrency)
            print(json.dumps({**result, "env": env}), flush=True)
            inexact += result["exact"] is False
        return _status(inexact)
    cells = []
    for fraction in FRACTIONS:
        for batch_size in BATCH_SIZES:
            for concurrency in CONCURRENCIES:
                cell = run_cell(args.rows or TABLE_ROWS, fraction, batch_size, concurrency, args.seed)
                print(json.dumps({**cell, "env": env}), flush=True)
                cells.append(cell)
                inexact += not cell["exact"]
    print()
    print_table(cells)
    return _status(inexact)


def _status(inexact: int) -> int:
    if inexact:
        print(f"{inexact} case(s) not exact: the report is not the bad rows", file=sys.stderr)
    return 1 if inexact else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
