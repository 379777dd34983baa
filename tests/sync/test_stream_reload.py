"""``writeStream.format("vectordb")`` names a micro-batch's dead letters and report after the micro-batch and
the query (``batch-<n>-<query>``), on real Spark and PostgreSQL (``stream_files_driver.py``).

The README's large loads say to delete the checkpoint (and only it) to load everything again. The files
were named ``batch-<n>`` only, so such a reload, cut into other micro-batches, replaced some of the first
run's files and left the rest beside its own: 56 letter rows for 32 refused rows, reports summing 504
written for 288. A query keeps its id across restarts from its checkpoint, so a micro-batch run again
after the driver was killed must still replace its files, not add a second set.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration.pg_server import PgServer, pg_server_fixture, pg_table_fixture

from .test_delta_feed import driver_env

__all__ = ["pg_server_fixture", "pg_table_fixture"]  # fixtures, used by name

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

DRIVER = Path(__file__).with_name("stream_files_driver.py")
FILES, ROWS = 8, 40
RUN_TIMEOUT_S = 400


def write_input(folder: Path) -> tuple[set[str], set[str]]:
    """``FILES`` Parquet files of ``ROWS`` rows; every tenth row has a vector of the wrong dimension (a dead
    letter). Returns the good ids and the bad ones."""
    folder.mkdir()
    good, bad = set(), set()
    for f in range(FILES):
        ids = [f"f{f}-{i}" for i in range(ROWS)]
        vectors = [[1.0, 2.0] if i % 10 == 3 else [float(f), float(i), 1.0, 0.5] for i in range(ROWS)]
        for i, rid in enumerate(ids):
            (bad if i % 10 == 3 else good).add(rid)
        pq.write_table(pa.table({"id": ids, "values": vectors}), folder / f"part-{f:03d}.parquet")
        time.sleep(0.01)  # distinct modification times: the file source takes them oldest first
    return good, bad


def start(root: Path, name: str, config: dict[str, Any]) -> subprocess.Popen[bytes]:
    where = root / name
    where.mkdir()
    config = {**config, "query_id": str(where / "query_id")}
    (where / "config.json").write_text(json.dumps(config))
    with (where / "driver.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, str(DRIVER), str(where / "config.json")],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=driver_env(Path(sys.executable)),
            start_new_session=True,  # its own process group: the JVM and Python workers die with it
        )


def finish(root: Path, name: str, proc: subprocess.Popen[bytes]) -> str:
    """Waits for a run to end; its query id."""
    try:
        proc.wait(timeout=RUN_TIMEOUT_S)
    finally:
        kill(proc)
    log = (root / name / "driver.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-6000:]
    return (root / name / "query_id").read_text()


def kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def reports_of(folder: Path, query_id: str) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in folder.glob("*.json") if query_id[:8] in p.name}


def letter_ids(folder: Path, query_id: str) -> list[str]:
    files = [p for p in folder.glob("*.parquet") if query_id[:8] in p.name]
    return [i for p in files for i in pq.read_table(p).column("id").to_pylist()]


def commits(checkpoint: Path) -> list[int]:
    folder = checkpoint / "commits"
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.exists() else []


def test_a_reload_without_the_checkpoint_keeps_its_own_files_and_a_restart_replaces_them(
    pg_server: PgServer, pg_table: str, tmp_path: Path
) -> None:
    good, bad = write_input(tmp_path / "input")
    letters, reports, checkpoint = tmp_path / "letters", tmp_path / "reports", tmp_path / "checkpoint"
    config: dict[str, Any] = {
        "input": str(tmp_path / "input"),
        "checkpoint": str(checkpoint),
        "max_files": 1,
        "sink": {
            "uri": pg_server.uri(pg_table),
            "create": "true",
            "dimension": "4",
            "on_error": "dead_letter",
            "dead_letter_path": str(letters),
            "report_path": str(reports),
            "max_rows_per_second": "40",  # about a second a micro-batch: the kill lands mid-run
            "budget_tasks": "1",
        },
    }

    # the first load, killed mid-run, then restarted from its checkpoint
    proc = start(tmp_path, "run-1", config)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while len(list(reports.glob("*.json"))) < 3:
            assert proc.poll() is None, (tmp_path / "run-1" / "driver.log").read_text(errors="replace")[
                -6000:
            ]
            assert time.monotonic() < deadline, "fewer than 3 micro-batches"
            time.sleep(0.05)
    finally:
        kill(proc)
    done = commits(checkpoint)
    assert done, "Spark recorded no micro-batch before the kill"
    # the last micro-batch recorded runs again, as if the kill had come between the sink's commit and Spark's
    # record of it: its report and letters exist, and the run again must replace them
    again = done[-1]
    for name in (str(again), f".{again}.crc"):
        (checkpoint / "commits" / name).unlink()
    first_id = finish(tmp_path, "run-2", start(tmp_path, "run-2", config))
    assert (tmp_path / "run-1" / "query_id").read_text() == first_id  # the query id stays with the checkpoint

    first = reports_of(reports, first_id)
    assert sorted(first) == sorted(f"batch-{n:06d}-{first_id[:8]}.json" for n in range(FILES)), sorted(
        p.name for p in reports.iterdir()
    )
    assert sum(r["written"] for r in first.values()) == len(good)
    assert sum(r["failed"] for r in first.values()) == len(bad)
    first_letters = letter_ids(letters, first_id)
    assert sorted(first_letters) == sorted(bad)  # each refused row once
    with pg_server.connect() as conn:
        assert {r[0] for r in conn.execute(f'SELECT id FROM "{pg_table}"')} == good
    first_files = sorted(p.name for p in [*reports.iterdir(), *letters.glob("*.parquet")])

    # the README's reload: the checkpoint (and only it) deleted, bigger micro-batches
    shutil.rmtree(checkpoint)
    second_id = finish(tmp_path, "run-3", start(tmp_path, "run-3", {**config, "max_files": 4}))
    assert second_id[:8] != first_id[:8]
    second = reports_of(reports, second_id)
    assert sorted(second) == [f"batch-{n:06d}-{second_id[:8]}.json" for n in range(FILES // 4)]
    assert sum(r["written"] for r in second.values()) == len(good)
    assert sum(r["failed"] for r in second.values()) == len(bad)
    assert sorted(letter_ids(letters, second_id)) == sorted(bad)
    # the first load's files are as it left them, and nothing else is there
    assert reports_of(reports, first_id) == first and sorted(letter_ids(letters, first_id)) == sorted(bad)
    every = sorted(p.name for p in [*reports.iterdir(), *letters.glob("*.parquet")])
    assert [n for n in every if second_id[:8] not in n] == first_files
