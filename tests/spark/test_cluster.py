"""A standalone cluster on 127.0.0.1 (master + one 1-core worker, started with ``spark-class``), and
zero-config discovery: the driver runs with a regular (non-editable) install and never registers.

A driver needs a process of its own (the shared session holds this one's SparkContext), so the
write runs in ``cluster_driver.py``. The install is ``pip install --no-deps --target`` of a copy of
the project: an editable install with ``package-dir`` mappings is served by an import hook that
``pkgutil.iter_modules()`` does not list, so Spark's lookup would miss it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle
from tests.uv import uv_command

from .conftest import ROOT, free_port

pytestmark = pytest.mark.slow

START_TIMEOUT_S = 120
PROJECT_FILES = ("pyproject.toml", "README.md", "connector", "spark", "beam")


@dataclass
class Cluster:
    master_url: str
    work_dir: Path


def spark_class() -> str:
    from pyspark.find_spark_home import _find_spark_home

    return os.path.join(_find_spark_home(), "bin", "spark-class")


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as reply:
            return int(json.loads(reply.read()).get("aliveworkers", 0))
    except OSError:
        return 0


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the daemon and whatever it started (the worker's executor), then make sure they are gone."""
    psutil = pytest.importorskip("psutil")
    try:
        family = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for proc in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(family, timeout=15)
    for proc in alive:
        proc.kill()
    process.wait()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    pytest.importorskip("pyspark")
    port, ui_port = free_port(), free_port()
    work_dir = tmp_path_factory.mktemp("spark-worker")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    master_url = f"spark://127.0.0.1:{port}"
    logs = work_dir / "daemons.log"
    with open(logs, "wb") as log:
        master = subprocess.Popen(
            [
                spark_class(),
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        worker = subprocess.Popen(
            [
                spark_class(),
                "org.apache.spark.deploy.worker.Worker",
                *("--host", "127.0.0.1", "--cores", "1"),
                *("--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(work_dir)),
                master_url,
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while alive_workers(ui_port) < 1:
            if time.monotonic() > deadline or master.poll() is not None or worker.poll() is not None:
                pytest.fail(
                    f"no standalone worker registered in {START_TIMEOUT_S} s:\n{logs.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield Cluster(master_url, work_dir)
    finally:
        stop(worker)
        stop(master)


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
