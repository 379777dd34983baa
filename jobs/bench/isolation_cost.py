"""What isolating refused rows costs: requests per write for k bad rows per batch, and an all-bad write.

``python -m jobs.bench.isolation_cost [--rows 50000] [--batch-size 500]`` writes through the
connector's own engine to a scripted in-process server that refuses any request holding a bad
id with one message that names no row (the hard case: only splitting can find the rows), and
prints one JSON line per case: requests sent, extra requests per bad row, rows re-sent per row,
and whether every bad row (and only those) failed. Request counts do not depend on the
network, so no socket is involved; the budget is the default one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import threading

from vectordb.connector import Rejected, connect
from vectordb.connector.engine import Engine
from vectordb.connector.errors import SystemicRejection
from vectordb.connector.protowire import FieldReader
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

DIM = 8
OK = WireReply(b"")


class Refuser:
    """Refuses a request holding a bad id with one message; counts rows re-sent."""

    def __init__(self, bad: set[str]) -> None:
        self.bad = bad
        self.rows_sent = 0
        self._lock = threading.Lock()

    def __call__(self, request: WireRequest) -> WireReply:
        # UpsertRequest{vectors=1 [Vector{id=1}]}
        ids = [FieldReader(v).str(1) for v in FieldReader(request.body).fields.get(1, [])]
        with self._lock:
            self.rows_sent += len(ids)
        if not self.bad.isdisjoint(ids):
            raise Rejected("INVALID_ARGUMENT: invalid vector", status="INVALID_ARGUMENT")
        return OK


def run_case(rows: int, batch_size: int, bad_per_batch: int | None, concurrency: int) -> dict[str, object]:
    rng = random.Random(1)
    ids = [f"r{i}" for i in range(rows)]
    if bad_per_batch is None:
        bad = set(ids)
    else:
        bad = set()
        for start in range(0, rows, batch_size):
            bad |= {ids[start + k] for k in rng.sample(range(min(batch_size, rows - start)), bad_per_batch)}
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
    try:
        report = client.write(data)
        exact = set(report.failed_ids) == bad and report.written == rows - len(bad)
        unisolated = sum(len(f.ids) for f in report.failures if f.error_type == "NotIsolated")
    except SystemicRejection as exc:
        stopped, exact, unisolated = str(exc)[:120], None, None
    requests = len(transport.requests)
    batches = -(-rows // batch_size)
    return {
        "case": "all bad" if bad_per_batch is None else f"{bad_per_batch} bad per batch",
        "rows": rows,
        "batch_size": batch_size,
        "bad_rows": len(bad),
        "requests": requests,
        "extra_requests_per_bad_row": None if stopped else round((requests - batches) / max(1, len(bad)), 2),
        "rows_sent_per_row": round(server.rows_sent / rows, 2),
        "exact": exact,
        "not_isolated_rows": unisolated,
        "systemic_stop": stopped,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    env = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    for bad_per_batch in (1, 2, 10, 50, None):
        result = run_case(args.rows, args.batch_size, bad_per_batch, args.concurrency)
        print(json.dumps({**result, "env": env}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
