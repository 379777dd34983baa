"""Shared test set-up: the generated protobuf classes (the oracle) on sys.path, and shared fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "proto" / "gen"
if str(GENERATED) not in sys.path:
    sys.path.insert(0, str(GENERATED))

# Server fixtures used across test folders, registered once here (a module that names one in its own
# pytest_plugins would import it after another folder's conftest did, which pytest refuses)
pytest_plugins = [
    "tests.servers.fixtures",
    "tests.integration.milvus_server",  # milvus_lite (session), collection_name
    "tests.integration.chroma_server",  # chroma_server, chroma_client, chroma_collection
    "tests.integration.weaviate_server",  # weaviate_server, weaviate_key_server, weaviate_collection
]

# No per-example deadline: one example that a full run's garbage collection or a loaded machine paused past
# Hypothesis's 200 ms failed the test as "unreliable timings" (tests that time something bound it themselves)
settings.register_profile("suite", deadline=None)
# A clean clone's run (CI) draws the same examples every time, so a red run can be replayed and a new
# example's failure is found by a local run, which draws new ones each time
settings.register_profile(
    "ci", settings.get_profile("suite"), derandomize=True, database=None, print_blob=True
)
settings.load_profile("ci" if os.environ.get("CI") else "suite")
