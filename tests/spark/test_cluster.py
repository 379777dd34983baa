"""A standalone cluster on 127.0.0.1 (master + one 1-core worker, started with ``spark-class``), and
zero-config discovery: the driver runs with a regular (non-editable) install and never registers.

A driver needs a process of its own (the shared session holds this one's SparkContext), so the
write runs in ``cluster_driver.py``. The install is ``pip install --no-deps --target`` of a copy of
the project: an editable install with ``package-dir`` mappings is served by an import hook that
``pkgutil.iter_modules()`` does not list, so Spark's lookup would miss it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.spark_cluster import Cluster, standalone_cluster
from tests.servers.fixtures import ServerHandle
from tests.uv import uv_command

from .conftest import ROOT

pytestmark = pytest.mark.slow

START_TIMEOUT_S = 120
PROJECT_FILES = ("pyproject.toml", "README.md", "connector", "spark", "beam")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    pytest.importorskip("pyspark")
    pytest.importorskip("psutil")
    try:
        with standalone_cluster(
            tmp_path_factory.mktemp("spark-worker"), start_timeout_s=START_TIMEOUT_S
        ) as running:
            yield running
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
def regular_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project installed the way users get it (not editable), into a folder for PYTHONPATH."""
    uv = uv_command()
    source = tmp_path_factory.mktemp("source")
    for name in PROJECT_FILES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, source / name)
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            *uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            sys.executable,
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        timeout=300,
    )
    return target


def test_zero_config_write_on_a_standalone_cluster(
    cluster: Cluster, regular_install: Path, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(regular_install),  # the regular install only: no repository on the path
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    driver = Path(__file__).with_name("cluster_driver.py")
    result = subprocess.run(
        [sys.executable, str(driver), cluster.master_url, grpc_server.uri, str(tmp_path)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    said: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert said == {"master": cluster.master_url, "executors": 1, "listed": True}
    (report_file,) = tmp_path.glob("job-*.json")
    report = json.loads(report_file.read_text())
    assert (report["written"], len(report["tasks"])) == (2000, 4)
    arrived = grpc_server.arrived()
    assert arrived.ids() == {f"c{i}" for i in range(2000)}
    assert arrived.vector("c7").values.tolist() == [7.0, 0.5, -1.0]
