"""The Delta Lake environment of the change-feed tests: pip ``pyspark==4.2.0`` + ``delta-spark==4.4.0``.

Delta's newest releases do not support the project's Spark (``delta-spark`` 4.4 wants
``pyspark<=4.2.0``; its jars are ``io.delta:delta-spark_4.2_2.13``, and 4.4.1's were not on Maven Central
on 2026-11-26), so the change-feed tests run their Spark driver in an environment of its own, with the
newest pins that work (DESIGN §7), a Delta that enforces the retention of deleted files on reads of old
versions (4.1 and later), as Databricks' does: the connector from
this checkout (an editable install, so it always runs the current code) with its Milvus and
PostgreSQL extras, under the project's other pins (``.ci/constraints.txt`` without its ``pyspark``).
Delta's jars come from Maven Central on first use (``configure_spark_with_delta_pip``) into the
environment's own Ivy cache.

It lives in ``$VECTORDB_DELTA_ENV`` or ``~/.cache/vectordb-connector/delta-spark-4.4.0-CHECKOUT``
(one for each checkout, named by a hash of its path) and is made once: ``.ci/run`` makes it
(``python -m tests.sync.delta_env``), and a test makes it if it is missing (about 30 s from uv's
cache). A marker file records the pins and the checkout; other pins make it again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["DELTA_SPARK", "PYSPARK", "delta_env", "ensure_delta_env", "ivy_dir"]

PYSPARK = "4.2.0"
DELTA_SPARK = "4.4.0"
EXTRAS = "milvus,pgvector"
ROOT = Path(__file__).resolve().parents[2]
MARKER = "vectordb-delta-env.json"


def delta_env() -> Path:
    """Where the environment is (made or not)."""
    given = os.environ.get("VECTORDB_DELTA_ENV")
    if given:
        return Path(given)
    # one a checkout: the connector is installed editable from it, and a checkout that made the one
    # environment again for itself would pull it from under another checkout's running tests
    checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    return Path.home() / ".cache" / "vectordb-connector" / f"delta-spark-{DELTA_SPARK}-{checkout}"


def ivy_dir(env: Path) -> Path:
    """Ivy's cache for Delta's jars (``spark.jars.ivy``): beside the environment, made once with it."""
    return env / "ivy"


def _wanted() -> dict[str, str]:
    constraints = (ROOT / ".ci" / "constraints.txt").read_text()
    return {
        "pyspark": PYSPARK,
        "delta-spark": DELTA_SPARK,
        "extras": EXTRAS,
        "checkout": str(ROOT),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "constraints": hashlib.sha256(constraints.encode()).hexdigest()[:16],
        # the extras' requirements: a dependency added to one is installed (hpack, for gRPC)
        "pyproject": hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16],
    }


def _uv() -> list[str]:
    """uv on PATH, else ``python3 -m uv`` (as the README installs it)."""
    found = shutil.which("uv")
    if found:
        return [found]
    return [shutil.which("python3") or sys.executable, "-m", "uv"]


def ensure_delta_env(uv: list[str] | None = None) -> Path:
    """The environment's Python, made first if missing or made for other pins or another checkout.

    Raises:
        subprocess.CalledProcessError: uv could not make it (its output says why).
    """
    env = delta_env()
    python = env / "bin" / "python"
    env.parent.mkdir(parents=True, exist_ok=True)
    with (env.parent / f"{env.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes must not make it at once
        marker = env / MARKER
        if python.exists() and marker.exists() and json.loads(marker.read_text()) == _wanted():
            return python
        shutil.rmtree(env, ignore_errors=True)
        uv = uv or _uv()
        subprocess.run(
            [*uv, "venv", "--quiet", "--python", sys.executable, str(env)], check=True, timeout=300
        )
        with tempfile.TemporaryDirectory() as tmp:
            constraints = Path(tmp) / "constraints.txt"
            pins = (ROOT / ".ci" / "constraints.txt").read_text().splitlines()
            constraints.write_text("\n".join(p for p in pins if not p.startswith("pyspark==")) + "\n")
            install = [
                *uv, "pip", "install", "--quiet", "--python", str(python), "-c", str(constraints),
                f"pyspark=={PYSPARK}", f"delta-spark=={DELTA_SPARK}", "-e", f"{ROOT}[{EXTRAS}]",
            ]  # fmt: skip
            # from uv's cache when it holds everything, else from the index
            if subprocess.run([*install, "--offline"], capture_output=True, timeout=900).returncode != 0:
                subprocess.run(install, check=True, timeout=1800)
        marker.write_text(json.dumps(_wanted()))
        return python


if __name__ == "__main__":
    print(ensure_delta_env())
