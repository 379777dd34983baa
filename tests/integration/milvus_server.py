"""Fixtures: one Milvus Lite server for the session, started through ``vectordb.connector.backends.milvus.lite``.

Starting it through the connector's own embedded module is the point: the session proves that
``ensure_server`` starts a server other clients (pymilvus here) can use, and ``stop`` ends it.
Each test gets a fresh collection name, dropped afterwards.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jobs.processes import stop_process
from vectordb.connector.backends.milvus import lite as embedded
from vectordb.connector.transports.base import forget_shared

__all__ = ["LiteProcess", "LiteServer", "collection_name", "kill_embedded", "milvus_lite"]

START_TIMEOUT_S = 60.0
IDLE_TIMEOUT_S = 600.0  # the session server's, as the connector's embedded servers have one


@dataclass
class LiteServer:
    path: str  # the data directory the connector's URIs name
    address: str  # "127.0.0.1:PORT"
    client: Any  # pymilvus.MilvusClient on the same server

    @property
    def uri(self) -> str:
        return f"milvus+lite://{self.path}"


@pytest.fixture(scope="session")
def milvus_lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteServer]:
    pymilvus = pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    path = str(tmp_path_factory.mktemp("milvus") / "vectors.db")
    # an idle timeout, not "never": a test run killed before teardown must not leave a server behind;
    # while the session lives, a call a minute keeps it up however long the tests between its uses take
    # (a loaded machine's run: the server stopped after 600 s idle, and the client stayed on its old port)
    address = embedded.ensure_server(path, idle_timeout_s=IDLE_TIMEOUT_S)
    client = pymilvus.MilvusClient(uri=f"http://{address}")
    done = threading.Event()

    def keep_alive() -> None:
        while not done.wait(IDLE_TIMEOUT_S / 10):
            with contextlib.suppress(Exception):  # a test may be restarting it: the next call counts
                client.has_collection("keep_alive")

    beat = threading.Thread(target=keep_alive, name="milvus-lite-keep-alive", daemon=True)
    beat.start()
    try:
        yield LiteServer(path=path, address=address, client=client)
    finally:
        done.set()
        beat.join()
        client.close()
        assert embedded.stop(path), "the session's Milvus Lite server was not running at teardown"
        forget_shared()  # the channels to the stopped server


@pytest.fixture
def collection_name(request: pytest.FixtureRequest, milvus_lite: LiteServer) -> Iterator[str]:
    """A fresh collection name for this test (not created), dropped afterwards."""
    stem = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:60]
    name = f"t_{stem}_{uuid.uuid4().hex[:6]}"
    yield name
    if milvus_lite.client.has_collection(name):
        milvus_lite.client.drop_collection(name)


def kill_embedded(path: str) -> int:
    """SIGKILL the embedded server for ``path`` (no goodbye: its state file stays, unlocked); its pid."""
    state = embedded.running(path)
    if state is None:
        raise RuntimeError(f"no embedded Milvus Lite server runs for {path}")
    os.kill(state.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while embedded.running(path) is not None and time.monotonic() < deadline:
        time.sleep(0.02)  # the kernel drops the state file's lock when the process is gone
    return state.pid


class LiteProcess:
    """``milvus-lite server`` (Milvus Lite's own gRPC server) on 127.0.0.1, for ``milvus://`` URIs: a fault
    test ``kill``s it (SIGKILL) and ``start``s it again on the same port and data directory.

    One worker thread: that server does not serialise concurrent writes itself, and a crash after
    concurrent upserts leaves a write-ahead log it cannot replay (rows it acknowledged are lost). With
    one worker the server takes one call at a time, as the connector's embedded server does for writes.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = 0  # picked at the first start, then kept
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> str:
        """Start on ``self.port`` (a free one at first); returns the address once ``CheckHealth`` answers."""
        command = Path(sys.executable).with_name("milvus-lite")
        found = str(command) if command.exists() else shutil.which("milvus-lite")
        if found is None:
            pytest.skip("the milvus-lite command is missing: pip install milvus-lite")
        first = not self.port  # only a first start retries: another process may take the probed port
        for _ in range(3 if first else 1):
            if first:
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", 0))
                    self.port = int(probe.getsockname()[1])
            args = [found, "server", "--data-dir", str(self.data_dir), "--host", "127.0.0.1"]
            with (self.data_dir.parent / "milvus-lite.log").open("ab") as log:
                self._proc = subprocess.Popen(
                    [*args, "--port", str(self.port), "--max-workers", "1"],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            if self._answers(START_TIMEOUT_S):
                return self.address
            self.stop()
        pytest.fail(f"milvus-lite server did not answer on {self.address} within {START_TIMEOUT_S} s")

    def _answers(self, timeout_s: float) -> bool:
        import grpc

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                return False
            # a fresh channel each time: a refused channel waits out gRPC's reconnect backoff (1 s and up)
            with grpc.insecure_channel(self.address, options=[("grpc.enable_retries", 0)]) as channel:
                try:
                    channel.unary_unary(embedded.HEALTH_METHOD)(b"", timeout=0.5, wait_for_ready=True)
                    return True
                except grpc.RpcError:
                    time.sleep(0.1)
        return False

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(timeout=15)
        self._proc = None

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc, grace_s=15)
        self._proc = None
