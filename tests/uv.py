"""uv, as the README installs it (``python3 -m pip install uv``): for tests that install the project."""

from __future__ import annotations

import shutil
import subprocess

import pytest


def uv_command() -> list[str]:
    """uv on PATH, or as ``python3 -m uv``; the test is skipped, saying why, when there is neither."""
    found = shutil.which("uv")
    if found:
        return [found]
    python3 = shutil.which("python3")
    if python3 and subprocess.run([python3, "-m", "uv", "--version"], capture_output=True).returncode == 0:
        return [python3, "-m", "uv"]
    pytest.skip("uv is needed to install the project (python3 -m pip install uv)")
