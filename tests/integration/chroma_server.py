"""Fixtures for a real Chroma server: ``chroma run`` on 127.0.0.1, one per test session, and a fresh collection per test.

The server is the ``chroma`` command of the installed chromadb package (its Rust server, REST
API v2), with its data in a session temporary directory. It is ready when ``/api/v2/heartbeat``
answers, and is stopped with SIGTERM at the end of the session. Chroma ingests a few hundred to
a few thousand vectors per second here: tests keep their data small.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jobs.processes import stop_process
from jobs.spark_cluster import free_port
from tests.net import answers_200
from vectordb.connector.transports.base import forget_shared

__all__ = ["ChromaProcess", "ChromaServer", "chroma_client", "chroma_collection", "chroma_server"]

START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ChromaServer:
    host: str
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def uri(self, collection: str) -> str:
        return f"chroma://{self.host}:{self.port}/{collection}"


def chroma_command() -> str:
    """The ``chroma`` CLI beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("chroma")
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if found is None:
        pytest.fail("the chroma command is missing: pip install chromadb")
    return found


def _wait_ready(proc: subprocess.Popen[bytes], url: str, log_path: Path) -> bool:
    """True once the heartbeat answers; False if the process exited (e.g. the port was taken)."""
    ready = answers_200(proc, f"{url}/api/v2/heartbeat", START_TIMEOUT_S)
    if ready is not None:
        return ready
    tail = log_path.read_text(errors="replace")[-2000:]
    pytest.fail(f"chroma did not answer {url}/api/v2/heartbeat within {START_TIMEOUT_S} s; log:\n{tail}")


class ChromaProcess:
    """A ``chroma run`` a fault test owns: ``kill`` it (SIGKILL, no goodbye) and ``start`` it again on the
    same port and data directory. ``stop`` at the end (SIGTERM)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = 0  # picked at the first start, then kept
        self._proc: subprocess.Popen[bytes] | None = None
        self._starts = 0

    @property
    def server(self) -> ChromaServer:
        return ChromaServer("127.0.0.1", self.port, self.root / f"server-{self._starts - 1}.log")

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> ChromaServer:
        """Start on ``self.port`` (a free one at first) with the data in ``root/data``; wait until it answers."""
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "NO_COLOR": "1"}
        for _ in range(3):  # only a first start retries: another process may take the probed port
            port = self.port or free_port()
            log_path = self.root / f"server-{self._starts}.log"
            self._starts += 1
            args = [chroma_command(), "run", "--path", str(self.root / "data")]
            with log_path.open("wb") as log:
                self._proc = subprocess.Popen(
                    [*args, "--host", "127.0.0.1", "--port", str(port)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                )
            if _wait_ready(self._proc, f"http://127.0.0.1:{port}", log_path):
                self.port = port
                return self.server
            if self.port:
                break
        tail = log_path.read_text(errors="replace")[-2000:]
        pytest.fail(f"chroma run exited at start on port {port}; log:\n{tail}")

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(timeout=15)
        self._proc = None

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc, grace_s=15)
        self._proc = None


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    pytest.importorskip("chromadb")
    command = chroma_command()
    root = tmp_path_factory.mktemp("chroma")
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "NO_COLOR": "1"}
    for attempt in range(3):  # another process may take the probed port before the server binds it
        port = free_port()
        log_path = root / f"server-{attempt}.log"
        args = [command, "run", "--path", str(root / "data"), "--host", "127.0.0.1", "--port", str(port)]
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        server = ChromaServer("127.0.0.1", port, log_path)
        try:
            if _wait_ready(proc, server.url, log_path):
                yield server
                forget_shared()  # the connector's pooled connections, before the server goes away
                return
        finally:
            stop_process(proc, grace_s=15)
    pytest.fail(
        f"chroma run exited at start three times; last log:\n{log_path.read_text(errors='replace')[-2000:]}"
    )


@pytest.fixture(scope="session")
def chroma_client(chroma_server: ChromaServer) -> Iterator[Any]:
    """chromadb's own ``HttpClient``: the independent reader tests compare against."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.HttpClient(
        host=chroma_server.host, port=chroma_server.port, settings=Settings(anonymized_telemetry=False)
    )
    yield client
    # chromadb 1.5's close() releases its System but never closes the httpx sessions of the client and
    # of its admin client: close them too, or their sockets are reported as unclosed at exit.
    sessions = [
        getattr(getattr(c, "_server", None), "_session", None)
        for c in (client, getattr(client, "_admin_client", None))
    ]
    client.close()
    for session in sessions:
        if session is not None:
            session.close()


def collection_name(test_name: str) -> str:
    """A valid, unique Chroma collection name from a test's name (3–512 of [a-zA-Z0-9._-])."""
    stem = re.sub(r"[^a-zA-Z0-9._-]+", "-", test_name).strip("-._")[:60]
    return f"{stem or 'test'}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def chroma_collection(request: pytest.FixtureRequest, chroma_client: Any) -> Iterator[str]:
    """The name of a collection no one has used: not created (tests decide how), dropped afterwards."""
    name = collection_name(request.node.name)
    yield name
    with contextlib.suppress(Exception):  # never created (a ConfigError test), or already dropped
        chroma_client.delete_collection(name)
