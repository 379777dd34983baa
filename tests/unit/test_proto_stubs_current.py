"""The checked-in stubs in proto/gen are what proto/generate.sh makes from the .proto sources today."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_stubs_are_current(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "proto", tmp_path / "proto", ignore=shutil.ignore_patterns("gen", "__pycache__"))
    env = {**os.environ, "PYTHON": sys.executable}
    subprocess.run(
        ["bash", str(tmp_path / "proto" / "generate.sh")], check=True, env=env, capture_output=True
    )
    fresh = sorted(p.name for p in (tmp_path / "proto" / "gen").iterdir() if p.is_file())
    kept = sorted(p.name for p in (ROOT / "proto" / "gen").iterdir() if p.is_file())
    assert fresh == kept
    for name in fresh:
        assert (tmp_path / "proto" / "gen" / name).read_bytes() == (
            ROOT / "proto" / "gen" / name
        ).read_bytes(), f"proto/gen/{name} is stale: run proto/generate.sh"
