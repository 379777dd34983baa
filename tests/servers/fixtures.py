"""Pytest fixtures and a process launcher for the Pinecone-protocol test servers.

``ServerHandle`` is what a test holds, the same for a server in this process and one in
another (Spark executors and Beam workers run elsewhere, so the test must ask the server
what arrived): ``.uri`` for the connector, ``.host`` for the official SDK, ``.arrived()``,
``.script(...)`` and ``.reset()``. An in-thread handle reads the state directly; a process
handle goes through the control API, and both return the same ``Arrived``.

Register with ``pytest_plugins = ["tests.servers.fixtures"]`` (in the root conftest).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import pytest

from .script import Arrived, FaultScript, ServerState, decode_arrived, decode_script, encode_script

__all__ = [
    "ServerHandle",
    "pinecone_grpc_server",
    "pinecone_rest_server",
    "start_server",
    "start_server_process",
]

Kind = Literal["rest", "grpc"]
REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30.0


class ServerHandle:
    """A running test server: where it listens, and its record and script."""

    def __init__(
        self,
        kind: Kind,
        port: int,
        control_port: int,
        state: ServerState | None = None,
        pid: int | None = None,
    ) -> None:
        self.kind = kind
        self.port = port
        self.control_url = f"http://127.0.0.1:{control_port}/_control"
        self.pid = pid  # set for a server in another process
        self._state = state  # set for a server in this process

    def __repr__(self) -> str:
        where = f"pid {self.pid}" if self.pid is not None else "in-thread"
        return f"ServerHandle({self.uri}, {where})"

    @property
    def uri(self) -> str:
        """The connector's URI: ``pinecone://127.0.0.1:P`` or ``pinecone+grpc://127.0.0.1:P``."""
        return f"{'pinecone+grpc' if self.kind == 'grpc' else 'pinecone'}://127.0.0.1:{self.port}"

    @property
    def host(self) -> str:
        """``127.0.0.1:P``: the official SDK's ``host`` (REST wants ``http://`` in front: ``.url``)."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def arrived(self) -> Arrived:
        """A snapshot of every upsert request and the final vectors so far."""
        if self._state is not None:
            return self._state.snapshot()
        return decode_arrived(self._call("GET", "arrived"))

    def script(self, script: FaultScript | None = None, **fields: Any) -> FaultScript:
        """Set the fault script (a ``FaultScript`` or its fields); its countdowns start now."""
        if script is None:
            script = FaultScript(**fields)
        elif fields:
            raise TypeError("give a FaultScript or its fields, not both")
        if self._state is not None:
            self._state.set_script(script)
            return script
        return decode_script(self._call("POST", "script", encode_script(script)))

    def reset(self) -> None:
        """Forget what arrived and go back to the default script."""
        if self._state is not None:
            self._state.reset()
        else:
            self._call("POST", "reset", b"")

    def _call(self, verb: str, name: str, body: bytes | None = None) -> bytes:
        request = urllib.request.Request(f"{self.control_url}/{name}", data=body, method=verb)
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.read()


@contextmanager
def start_server(kind: Kind) -> Iterator[ServerHandle]:
    """A server in a thread of this process, with fresh state; stopped on exit."""
    state = ServerState()
    if kind == "rest":
        from .pinecone_rest import PineconeRestServer

        with PineconeRestServer(0, state) as rest:
            yield ServerHandle("rest", rest.port, rest.port, state)
    else:
        from .pinecone_grpc import PineconeGrpcServer

        with PineconeGrpcServer(0, state) as grpc_server:
            yield ServerHandle("grpc", grpc_server.port, grpc_server.control_port, state)


@contextmanager
def start_server_process(kind: Kind) -> Iterator[ServerHandle]:
    """A server in its own Python process (for Spark executors and Beam workers); SIGTERM on exit."""
    module = f"tests.servers.pinecone_{kind}"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", module, "--port", "0"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ports = _read_ports(process)
        yield ServerHandle(kind, ports["PORT"], ports["CONTROL"], pid=process.pid)
    finally:
        _stop(process)


def _read_ports(process: subprocess.Popen[str]) -> dict[str, int]:
    """The ports the server announces ("PORT <n>", then "CONTROL <n>"), read in a thread to bound the wait."""
    ports: dict[str, int] = {}

    def read() -> None:
        for line in process.stdout or ():
            name, _, value = line.strip().partition(" ")
            if name in ("PORT", "CONTROL"):
                ports[name] = int(value)
            if len(ports) == 2:
                return

    reader = threading.Thread(target=read, name=f"ports-{process.pid}", daemon=True)
    reader.start()
    reader.join(START_TIMEOUT_S)
    if len(ports) < 2:
        _stop(process)  # also ends a reader still blocked on the pipe
        reader.join()
        raise RuntimeError(
            f"test server (exit code {process.returncode}) announced {ports}, not PORT and CONTROL"
        )
    return ports


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


@pytest.fixture
def pinecone_rest_server() -> Iterator[ServerHandle]:
    """A fresh Pinecone REST server in this process."""
    with start_server("rest") as handle:
        yield handle


@pytest.fixture
def pinecone_grpc_server() -> Iterator[ServerHandle]:
    """A fresh Pinecone gRPC server in this process."""
    with start_server("grpc") as handle:
        yield handle
