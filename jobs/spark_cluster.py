"""A Spark standalone cluster on 127.0.0.1 (a master and its workers), for the scaling benchmark and the
cluster test: started from pyspark's own Spark, stopped with everything it started."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Cluster:
    master_url: str
    work_dir: Path
    daemons: list[subprocess.Popen[bytes]]

    @property
    def worker_pids(self) -> list[int]:
        return [p.pid for p in self.daemons[1:]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spark_class() -> str:
    from pyspark.find_spark_home import _find_spark_home

    return os.path.join(_find_spark_home(), "bin", "spark-class")


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as reply:
            return int(json.loads(reply.read()).get("aliveworkers", 0))
    except OSError:
        return 0


@contextlib.contextmanager
def standalone_cluster(
    work_dir: Path, *, workers: int = 1, cores: int = 1, memory: str = "1g", start_timeout_s: float = 120
) -> Iterator[Cluster]:
    """Master and ``workers`` workers; ``RuntimeError`` with the daemons' log when they do not come up."""
    port, ui_port = free_port(), free_port()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    url = f"spark://127.0.0.1:{port}"
    logs = work_dir / "daemons.log"
    with open(logs, "wb") as log:  # the children keep their own copies of the descriptor
        master = [spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        master += ["--port", str(port), "--webui-port", str(ui_port)]
        daemons = [subprocess.Popen(master, env=env, stdout=log, stderr=subprocess.STDOUT)]
        for i in range(workers):
            worker = [spark_class(), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1"]
            worker += ["--cores", str(cores), "--memory", memory, "--webui-port", str(free_port())]
            worker += ["--work-dir", str(work_dir / f"worker-{i}"), url]
            daemons.append(subprocess.Popen(worker, env=env, stdout=log, stderr=subprocess.STDOUT))
    try:
        deadline = time.monotonic() + start_timeout_s
        while alive_workers(ui_port) < workers:
            if time.monotonic() > deadline or any(d.poll() is not None for d in daemons):
                raise RuntimeError(
                    f"{workers} standalone worker(s) did not register in {start_timeout_s} s:\n"
                    + logs.read_text(errors="replace")[-3000:]
                )
            time.sleep(0.5)
        yield Cluster(url, work_dir, daemons)
    finally:
        for daemon in reversed(daemons):
            stop(daemon)


def stop(daemon: subprocess.Popen[bytes]) -> None:
    """SIGTERM the daemon and whatever it started (a worker's executors), then make sure they are gone."""
    import psutil

    try:
        family = [psutil.Process(daemon.pid), *psutil.Process(daemon.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for proc in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(family, timeout=20)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    daemon.wait()
