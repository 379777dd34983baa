"""A Delta table kept in sync with a database through its change data feed, on real servers: Milvus Lite,
PostgreSQL and Weaviate, each read back with its own client.

The table (Delta Lake 4.4.0 on pip ``pyspark`` 4.2.0, in its own environment: ``delta_env.py``) goes
through seven versions: a first load, ``MERGE``s that update, delete and insert (ids deleted and
inserted again, rows updated in two versions running), and an overwrite of the whole table, which the
feed shows as a delete and an insert of every row in one version. A driver process
(``delta_driver.py``) streams the feed through ``vectordb.spark.changes(batch, table=...)`` into
``format("vectordb")`` (``trigger(availableNow=True)``, a checkpoint, at most two files a
micro-batch, so one micro-batch ends between the overwrite's new files and its removed ones). After
every micro-batch that ends where a version ends, before Spark records it as done, the database must
hold exactly the table's rows as of that version: ids, float32 vectors and titles. The first run is SIGKILLed (driver and
JVM) at that point of its second micro-batch, so the batch was written but not recorded; the second
run starts from the checkpoint, runs that batch again, and ends exact.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.integration.pg_server import PgServer, pg_server_fixture, pg_table_fixture
from tests.uv import uv_command
from vectordb.connector.ids import ORIGINAL_ID_KEY

from .delta_env import ensure_delta_env, ivy_dir

__all__ = ["pg_server_fixture", "pg_table_fixture"]  # fixtures, used by name

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

DRIVER = Path(__file__).with_name("delta_driver.py")
DIM = 4
KILL_AT = 1  # the first run dies in its second micro-batch, after writing it, before Spark records it
RUN_TIMEOUT_S = 600

Rows = dict[str, tuple[bytes, str]]  # id → (float32 bytes of the vector, title)


def row(key: int, version: int) -> list[Any]:
    """Row ``r{key}`` as written at ``version``: exact float32s, so every comparison is exact."""
    return [
        f"r{key}",
        [float(version), float(key), float((version * key) % 7), 0.25],
        f"r{key} at v{version}",
    ]


def plan_history() -> tuple[list[dict[str, Any]], list[dict[str, list[Any]]]]:
    """The versions to write (as ``delta_driver.make`` takes them) and the table after each one."""
    plans: list[dict[str, Any]] = []
    states: list[dict[str, list[Any]]] = []
    table: dict[str, list[Any]] = {}

    def commit(version: int, upserts: list[int], deletes: list[int], *, overwrite: bool = False) -> None:
        written = [row(k, version) for k in upserts]
        if overwrite:  # the whole table again: the kept rows unchanged, some changed, some gone
            kept = [r for key, r in table.items() if int(key[1:]) not in set(deletes) | set(upserts)]
            table.clear()
            for r in kept + written:
                table[r[0]] = r
            plans.append({"overwrite": True, "upserts": list(table.values())})
        else:
            for k in deletes:
                table.pop(f"r{k}", None)
            for r in written:
                table[r[0]] = r
            plans.append({"upserts": written, "deletes": [f"r{k}" for k in deletes]})
        states.append({k: list(v) for k, v in table.items()})

    commit(0, list(range(40)), [])
    commit(1, [*range(8), *range(40, 45)], list(range(8, 12)))
    commit(2, [0, 1, 2, 3, 8], [40, 12])  # rows updated again; r8, deleted at v1, back
    commit(3, [*range(16, 20), 45, 46], [13, 14, 15], overwrite=True)
    commit(4, [*range(20, 26), 9], [0, 1, 2])
    commit(5, [9, 47], [16, 99])  # r9 inserted at v4 updated; r99 never existed
    commit(6, [46], [45, 47])
    # an UPDATE of the id itself: the feed holds r20's pre-image and r60's post-image, and r20 must go
    table["r60"] = ["r60", *table.pop("r20")[1:]]
    plans.append({"rename": ["r20", "r60"]})
    states.append({k: list(v) for k, v in table.items()})
    return plans, states


def as_rows(rows: dict[str, list[Any]]) -> Rows:
    return {k: (np.asarray(v[1], dtype="<f4").tobytes(), v[2]) for k, v in rows.items()}


@dataclass(frozen=True)
class History:
    table: Path
    states: list[dict[str, list[Any]]]  # the table after each version
    totals: Path | None = None  # set: the versions are past the table's retention; their change rows


def driver_env(python: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "VIRTUAL_ENV", "SPARK_HOME"))}
    return {**keep, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": str(python)}


def start_driver(python: Path, config: dict[str, Any], where: Path) -> subprocess.Popen[bytes]:
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(config))
    with (where / "driver.log").open("wb") as log:
        return subprocess.Popen(
            [str(python), str(DRIVER), str(where / "config.json")],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=driver_env(python),
            start_new_session=True,  # its own process group: the JVM and Python workers die with it
        )


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def failed_run(where: Path, proc: subprocess.Popen[bytes]) -> str:
    log = (where / "driver.log").read_text(errors="replace")
    return f"the driver ended with {proc.returncode}; its log ends:\n{log[-6000:]}"


@pytest.fixture(scope="module")
def delta_python() -> Path:
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java 17 or later")
    return ensure_delta_env(uv_command())  # skips, saying why, without uv


def make_table(python: Path, root: Path, **extra: Any) -> list[dict[str, list[Any]]]:
    """Writes ``plan_history``'s versions into a Delta table at ``root / "table"`` (``extra``: more of the
    driver's ``make`` config); returns the table after each version."""
    plans, states = plan_history()
    config = {
        "table": str(root / "table"),
        "control": str(root / "make"),
        "ivy": str(ivy_dir(python.parents[1])),
        "make": plans,
        **extra,
    }
    proc = start_driver(python, config, root / "make")
    try:
        proc.wait(timeout=RUN_TIMEOUT_S)
    finally:
        kill_group(proc)
    assert proc.returncode == 0 and (root / "make" / "done").exists(), failed_run(root / "make", proc)
    return states


@pytest.fixture(scope="module")
def history(delta_python: Path, tmp_path_factory: pytest.TempPathFactory) -> History:
    """The Delta table, written once for every database's test (they only read it)."""
    root = tmp_path_factory.mktemp("delta")
    return History(root / "table", make_table(delta_python, root))


@pytest.fixture(scope="module")
def old_history(delta_python: Path, tmp_path_factory: pytest.TempPathFactory) -> History:
    """The same versions, then past the table's retention: ``delta.deletedFileRetentionDuration`` set to one
    second after them (each version's change rows recorded before), which Delta 4.1 and later enforce on
    reads of a version as they do on a table left at its 7 days."""
    root = tmp_path_factory.mktemp("old-delta")
    totals = root / "totals.json"
    states = make_table(delta_python, root, retention="interval 1 seconds", totals=str(totals))
    return History(root / "table", states, totals=totals)


def run_stream(
    python: Path,
    history: History,
    sink: dict[str, str],
    where: Path,
    checkpoint: Path,
    read_back: Callable[[], Rows],
    seen: dict[int, dict[str, int]],
    *,
    kill_at: int | None = None,
) -> list[dict[str, Any]]:
    """One run of the sync, each micro-batch checked against the database; killed in batch ``kill_at``.

    ``seen``: the change rows per version of every micro-batch so far (a batch run again replaces its
    count). A batch that ends where its last version ends must leave the database exactly as the
    table is at that version; one that ends inside a commit (``exact`` false) is checked at the next."""
    config = {
        "table": str(history.table),
        "checkpoint": str(checkpoint),
        "control": str(where),
        "ivy": str(ivy_dir(python.parents[1])),
        "sink": sink,
        "max_files": 2,
    }
    if history.totals is not None:  # Delta reads no earlier version: no rows as of a batch's version
        config["totals"] = str(history.totals)
    proc = start_driver(python, config, where)
    batches: list[dict[str, Any]] = []
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while True:
            said = sorted(where.glob("batch-*.json"), key=lambda p: int(p.stem.split("-")[1]))[len(batches) :]
            if not said:
                if proc.poll() is not None:
                    assert proc.returncode == 0 and (where / "done").exists(), failed_run(where, proc)
                    return batches
                assert time.monotonic() < deadline, (
                    f"no micro-batch in {RUN_TIMEOUT_S} s\n{failed_run(where, proc)}"
                )
                time.sleep(0.1)
                continue
            batch = json.loads(said[0].read_text())
            batches.append(batch)
            seen[batch["batch"]] = batch["counts"]
            last = str(batch["versions"][-1]) if batch["versions"] else None
            batch["exact"] = (
                last is not None and sum(c.get(last, 0) for c in seen.values()) == batch["totals"][last]
            )
            if batch["exact"] and batch["rows"] is not None:
                table = as_rows(batch["rows"])
                assert table == as_rows(history.states[batch["versions"][-1]])  # Delta holds what we wrote
                stored = read_back()
                assert stored == table, (
                    f"after micro-batch {batch['batch']} (versions {batch['versions']}): "
                    f"missing {sorted(set(table) - set(stored))}, left behind {sorted(set(stored) - set(table))}, "
                    f"different {sorted(k for k in set(stored) & set(table) if stored[k] != table[k])}"
                )
            if batch["batch"] == kill_at:
                kill_group(proc)
                return batches
            (where / f"go-{batch['batch']}").write_text("go")
    finally:
        kill_group(proc)


def sync_and_kill(
    python: Path, history: History, sink: dict[str, str], tmp_path: Path, read_back: Callable[[], Rows]
) -> None:
    checkpoint, seen = tmp_path / "checkpoint", {}
    first = run_stream(
        python, history, sink, tmp_path / "run-1", checkpoint, read_back, seen, kill_at=KILL_AT
    )
    assert [b["batch"] for b in first] == list(range(KILL_AT + 1))
    second = run_stream(python, history, sink, tmp_path / "run-2", checkpoint, read_back, seen)
    # the batch the kill interrupted runs again, over the same versions, then the rest
    assert second[0]["batch"] == KILL_AT and second[0]["counts"] == first[KILL_AT]["counts"]
    assert len(second) >= 2, "the kill came after the last micro-batch: nothing was left to resume"
    done = first[:KILL_AT] + second
    versions = [v for b in done for v in b["versions"]]
    assert versions == sorted(versions) and set(versions) == set(range(len(history.states))), versions
    # at least one micro-batch ended inside a commit (the overwrite's new files, not its removed ones)
    assert not all(b["exact"] for b in done) and sum(b["exact"] for b in done) >= 3, done
    assert done[-1]["exact"] and read_back() == as_rows(history.states[-1])


def test_milvus_lite_follows_the_table(
    delta_python: Path, history: History, milvus_lite: Any, collection_name: str, tmp_path: Path
) -> None:
    def read_back() -> Rows:
        client = milvus_lite.client
        if not client.has_collection(collection_name):
            return {}
        client.load_collection(collection_name)
        rows = client.query(
            collection_name, filter='id != ""', output_fields=["*"], limit=16384, consistency_level="Strong"
        )
        return {r["id"]: (np.asarray(r["vector"], dtype="<f4").tobytes(), r["title"]) for r in rows}

    sink = {"uri": milvus_lite.uri, "collection": collection_name, "create": "true", "dimension": str(DIM)}
    sync_and_kill(delta_python, history, sink, tmp_path, read_back)


def pg_rows(pg_server: PgServer, pg_table: str) -> Rows:
    with pg_server.connect() as conn:
        exists = conn.execute("SELECT to_regclass(%s)", (f'"{pg_table}"',)).fetchone()
        if exists is None or exists[0] is None:
            return {}
        rows = conn.execute(f'SELECT id, embedding::real[], metadata FROM "{pg_table}"').fetchall()
    return {i: (np.asarray(v, dtype="<f4").tobytes(), meta["title"]) for i, v, meta in rows}


def test_postgresql_follows_the_table(
    delta_python: Path, history: History, pg_server: PgServer, pg_table: str, tmp_path: Path
) -> None:
    sink = {"uri": pg_server.uri(pg_table), "create": "true", "dimension": str(DIM)}
    sync_and_kill(delta_python, history, sink, tmp_path, lambda: pg_rows(pg_server, pg_table))


def test_a_backfill_past_the_retention_ends_exact(
    delta_python: Path, old_history: History, pg_server: PgServer, pg_table: str, tmp_path: Path
) -> None:
    """Delta refuses to read the versions (a change-feed read or ``VERSION AS OF``: both once failed the
    query), while its streaming source still streams them; ``changes(table=...)`` looks the ids they delete
    up in the current table, and the query runs through and ends exact, the overwrite cut between
    micro-batches included."""
    time.sleep(1.5)  # past the one second, whatever the driver's start-up takes
    sink = {"uri": pg_server.uri(pg_table), "create": "true", "dimension": str(DIM)}
    done = run_stream(
        delta_python, old_history, sink, tmp_path / "run", tmp_path / "checkpoint", lambda: {}, {}
    )
    versions = [v for b in done for v in b["versions"]]
    assert versions == sorted(versions) and set(versions) == set(range(len(old_history.states))), versions
    assert not all(b["exact"] for b in done), done  # a micro-batch ended inside the overwrite
    assert pg_rows(pg_server, pg_table) == as_rows(old_history.states[-1])
    # the lookup in the current table is what ran: Delta refused the versions, and the driver was told once
    log = (tmp_path / "run" / "driver.log").read_text(errors="replace")
    assert log.count("Delta refuses to read version") == 1, log[-4000:]


def test_weaviate_follows_the_table(
    delta_python: Path, history: History, weaviate_server: Any, weaviate_collection: str, tmp_path: Path
) -> None:
    def read_back() -> Rows:
        client = weaviate_server.client()
        try:
            if not client.collections.exists(weaviate_collection):
                return {}
            found: Rows = {}
            for obj in client.collections.get(weaviate_collection).iterator(include_vector=True):
                vector = np.asarray(obj.vector["default"], dtype="<f4").tobytes()
                found[obj.properties[ORIGINAL_ID_KEY]] = (vector, obj.properties["title"])
            return found
        finally:
            client.close()

    sink = {
        "uri": weaviate_server.uri(weaviate_collection),
        "grpc_port": str(weaviate_server.grpc_port),
        "create": "true",
        "dimension": str(DIM),
    }
    sync_and_kill(delta_python, history, sink, tmp_path, read_back)
