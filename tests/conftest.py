"""Shared test set-up: the generated protobuf classes (the oracle) on sys.path, and shared fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "proto" / "gen"
if str(GENERATED) not in sys.path:
    sys.path.insert(0, str(GENERATED))

pytest_plugins = ["tests.servers.fixtures"]
