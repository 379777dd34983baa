"""``changes(batch, table=...)`` on real Delta after a column was added (``ALTER TABLE ADD COLUMNS``) to the
table (``added_column_driver.py``): a query started after it reads the versions before it with the column
(null), which the table as of those versions lacks. The micro-batches of those versions were refused
("the table has no column 'lang' of the change feed") on every restart, a batch of plain inserts
included; now every micro-batch is written and PostgreSQL ends holding exactly the table's rows, with a
table's path and with a function from a version to the table (whose lookup of ids deleted at v2, before
the column, fills it with nulls)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.integration.pg_server import PgServer, pg_server_fixture, pg_table_fixture

from .delta_env import ivy_dir
from .test_delta_feed import delta_python, driver_env

__all__ = ["delta_python", "pg_server_fixture", "pg_table_fixture"]  # fixtures, used by name

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DRIVER = Path(__file__).with_name("added_column_driver.py")

# the table after v6: a updated at v5 (with lang), b as v2's overwrite left it (lang null), d inserted at v4
FINAL = {
    "a": ([1.0, 2.0], {"title": "a5", "lang": "en"}),
    "b": ([2.0, 3.0], {"title": "b2"}),  # a null lang is no metadata key
    "d": ([4.0, 4.0], {"title": "d4", "lang": "fr"}),
}


def stored(pg_server: PgServer, table: str) -> dict[str, tuple[bytes, dict[str, Any]]]:
    with pg_server.connect() as conn:
        rows = conn.execute(f'SELECT id, embedding::real[], metadata FROM "{table}"').fetchall()
    return {i: (np.asarray(v, dtype="<f4").tobytes(), meta) for i, v, meta in rows}


def test_micro_batches_before_an_added_column_are_written(
    delta_python: Path, pg_server: PgServer, pg_table: str, tmp_path: Path
) -> None:
    tables = {"path": pg_table, "function": f"{pg_table}_fn"}
    config = {
        "ivy": str(ivy_dir(delta_python.parents[1])),
        "table": str(tmp_path / "table"),
        "checkpoint": str(tmp_path / "checkpoint"),
        "out": str(tmp_path / "out.json"),
        "sink": {name: pg_server.uri(table) for name, table in tables.items()},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    try:
        run = subprocess.run(
            [str(delta_python), str(DRIVER), str(tmp_path / "config.json")],
            cwd=DRIVER.parent,
            env=driver_env(delta_python),
            capture_output=True,
            timeout=800,
        )
        out = json.loads((tmp_path / "out.json").read_text()) if (tmp_path / "out.json").exists() else None
        assert out is not None, run.stdout.decode(errors="replace")[-4000:]
        want = {i: (np.asarray(v, dtype="<f4").tobytes(), meta) for i, (v, meta) in FINAL.items()}
        for name, table in tables.items():
            batches = out[name]
            failed = [b for b in batches if "error" in b or "query" in b]
            assert failed == [], (name, failed)
            seen = [{tuple(c) for c in b["changes"]} for b in batches]
            assert seen[0] == {(1, "insert")}, batches  # the first micro-batch: plain inserts
            # v2's overwrite was cut: a micro-batch held some of its deletes and none of its inserts
            assert any((2, "delete") in s and (2, "insert") not in s for s in seen), batches
            assert stored(pg_server, table) == want, name
    finally:
        with pg_server.connect() as conn:
            conn.execute(f'DROP TABLE IF EXISTS "{tables["function"]}"')
