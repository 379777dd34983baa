"""``jobs.bench.isolation_cost`` measures what isolating refused rows costs. Its scripted server answered an
accepted request with an empty reply, which a Pinecone gRPC client reads as ``upserted_count`` 0: every
accepted request was counted short, every row failed, and the bench printed its figures with ``"exact":
false`` and exit status 0. It runs here as a user runs it, small."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str) -> tuple[int, list[dict[str, object]]]:
    run = subprocess.run(
        [sys.executable, "-m", "jobs.bench.isolation_cost", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, run.stderr[-2000:]
    return run.returncode, lines


def test_the_cases_report_exactly_the_bad_rows() -> None:
    status, cases = bench("--rows", "2000", "--batch-size", "100")
    assert [c["exact"] for c in cases if c["systemic_stop"] is None] == [True] * 4, cases
    one_bad = cases[0]
    assert one_bad["case"] == "1 bad per batch" and one_bad["bad_rows"] == 20
    assert 1 < float(one_bad["extra_requests_per_bad_row"]) < 20  # about log2(batch size), not every row
    assert status == 0


def test_the_table_cells_are_exact() -> None:
    status, cells = bench("--table", "--rows", "700")
    assert len(cells) == 27
    low = [c for c in cells if c["bad_fraction"] == 0.01]  # the budget holds: every good row is written
    assert [c["written"] for c in low] == [c["rows"] - c["bad_rows"] for c in low], low
    assert all(c.get("exact") for c in cells), [c for c in cells if not c.get("exact")]
    assert status == 0
