"""Where a benchmark ran, for its JSON lines (the machine, its load, the packages' versions), the CPU
seconds of another process, for benchmarks that put a server's cost beside the client's, and a process's
resident memory, for soak runs, and which code ran (the commit, and the files changed since)."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["code_version", "environment", "process_cpu_s", "process_rss_bytes"]

TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``; 10 ms ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def process_rss_bytes(pid: int | None = None) -> int:
    """Resident memory of a process (this one by default): ``VmRSS`` of Linux ``/proc/PID/status``."""
    status = Path(f"/proc/{pid or 'self'}/status").read_text()
    line = next((line for line in status.splitlines() if line.startswith("VmRSS:")), None)
    if line is None:  # a zombie: exited, not yet reaped
        raise ProcessLookupError(f"process {pid} has exited")
    return int(line.split()[1]) * 1024  # "VmRSS:   123456 kB"


def environment(*packages: str) -> dict[str, Any]:
    """The machine, its load now, and each package's version (``None``: not installed)."""
    versions: dict[str, str | None] = {}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_model": _cpu_model(),
        "load_1m": round(os.getloadavg()[0], 2),
        "versions": versions,
    }


def code_version(*paths: str) -> dict[str, Any]:
    """The commit checked out and the files under ``paths`` that differ from it: a run of a working tree
    with changes not committed yet measured that code, not the commit's."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        changed = git("status", "--porcelain", "--untracked-files=no", "--", *paths).splitlines()
    except (OSError, subprocess.CalledProcessError):  # no git, or not a checkout
        return {"commit": None, "uncommitted": None}
    return {"commit": commit, "uncommitted": sorted(line[3:] for line in changed)}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        return ""
