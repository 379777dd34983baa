"""``changes(batch, table=..., namespace_column=...)`` on real Delta, for rows whose namespace is null (the
write's own namespace, as the sink reads a null ``namespace_column``): a micro-batch holding only the deletes
of an overwrite must upsert the ids the table still holds, as it does for a namespace that is set. The lookups
joined on (id, namespace) with ``=``, under which null never matches null, so every such id left as a delete
while the table held it (``null_namespace_driver.py``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .delta_env import ensure_delta_env, ivy_dir
from .test_delta_feed import driver_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DRIVER = Path(__file__).with_name("null_namespace_driver.py")


def test_ids_of_the_null_namespace_the_table_still_holds_are_upserted(tmp_path: Path) -> None:
    python = ensure_delta_env()
    config = {
        "ivy": str(ivy_dir(python.parents[1])),
        "table": str(tmp_path / "table"),
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
    out_file = tmp_path / "out.json"
    assert out_file.exists(), (
        run.stdout.decode(errors="replace")[-3000:] + run.stderr.decode(errors="replace")[-3000:]
    )
    out = json.loads(out_file.read_text())
    # the feed of v1 (by path, and by the SQL name, which was quoted again as a path and failed), the table as of v1
    for source in ("path", "sql name", "function"):
        got = {(i, tenant): (op == "delete", values) for i, tenant, op, values in out[source]}
        assert got == {
            ("a", None): (False, [1.0, 2.0]),  # kept by the overwrite
            ("b", None): (False, [3.5, 4.5]),  # changed by it
            ("c", None): (True, [5.0, 6.0]),  # gone: the delete stays
            ("d", "t1"): (False, [7.0, 8.0]),
        }, (source, out[source])
