"""``changes(batch, table=path)`` on real Delta when the table's schema changed after the versions a
micro-batch holds (``schema_driver.py``): the feed of those versions, read as a batch, no longer fits the
micro-batch, and ``changes()`` falls back to the table as of the batch's version instead of failing on
every micro-batch."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .delta_env import ensure_delta_env, ivy_dir
from .test_delta_feed import driver_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DRIVER = Path(__file__).with_name("schema_driver.py")


def test_a_later_schema_change_does_not_stop_the_micro_batches_before_it(tmp_path: Path) -> None:
    python = ensure_delta_env()
    config = {
        "ivy": str(ivy_dir(python.parents[1])),
        "table": str(tmp_path / "table"),
        "checkpoint": str(tmp_path / "checkpoint"),
        "out": str(tmp_path / "out.json"),
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    run = subprocess.run(
        [str(python), str(DRIVER), str(tmp_path / "config.json")],
        cwd=DRIVER.parent,
        env=driver_env(python),
        capture_output=True,
        timeout=800,
    )
    # the stream itself stops at the schema change (Delta's rule); every micro-batch before it is written
    out = json.loads((tmp_path / "out.json").read_text()) if (tmp_path / "out.json").exists() else None
    assert out is not None, run.stdout.decode(errors="replace")[-3000:]
    failed = [o for o in out["outcomes"] if not o["ok"]]
    assert failed == [], failed
    assert any(1 in o["versions"] for o in out["outcomes"]), "the stream read v1, the cut overwrite"
    assert out["index"] == out["table_v1"]
