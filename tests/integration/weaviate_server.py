"""Fixtures for a real Weaviate: ``weaviate-server`` (built from its Go module) on 127.0.0.1, one per session.

The binary is what ``go install github.com/weaviate/weaviate/cmd/weaviate-server@v1.35.2`` leaves in
``$(go env GOPATH)/bin`` (``.ci/run`` builds it once; where Go is present and it is not there, the first
Weaviate test builds it), or one on PATH; without Go the tests skip and
say why. Each server gets free ports and its own data directory, a single-node Raft with short
timeouts (ready in about 2 s instead of 10), no modules, no telemetry and no profiling listener;
it is ready when ``/v1/.well-known/ready`` answers 200 and is stopped with SIGTERM when the session
ends. ``weaviate_server`` allows anonymous access; ``weaviate_key_server`` (started only when a test
asks for it) takes API keys only. Weaviate 1.35 has no setting for the address of its gRPC and
cluster-data listeners: they listen on every interface (on free ports); the rest is on 127.0.0.1.

Each test gets a fresh collection name (``weaviate_collection``); the collection is dropped afterwards.

``WeaviateProcess`` is one server a fault test owns (tests/faults): it SIGKILLs it and starts it again
on the same ports and ``PERSISTENCE_DATA_PATH``; a restart of a small data set is ready in about 2.3 s.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from jobs.processes import stop_process
from tests.net import answers_200
from vectordb.connector.transports.base import forget_shared

__all__ = [
    "API_KEY",
    "MODULE",
    "WeaviateProcess",
    "WeaviateServer",
    "start_weaviate",
    "weaviate_binary",
    "weaviate_collection",
    "weaviate_key_server",
    "weaviate_server",
]

MODULE = "github.com/weaviate/weaviate/cmd/weaviate-server@v1.35.2"
API_KEY = "wv-test-key-3c9e51"  # the key the key server takes (a test secret, not a credential)
START_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class WeaviateServer:
    host: str
    port: int
    grpc_port: int
    log_path: Path
    api_key: str | None = None
    pid: int | None = None  # the server process (benchmarks read its CPU time)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def uri(self, collection: str) -> str:
        return f"weaviate://{self.host}:{self.port}/{collection}"

    def options(self) -> dict[str, Any]:
        """The connector options that reach this server: its gRPC port and, for the key server, the key."""
        found: dict[str, Any] = {"grpc_port": self.grpc_port}
        if self.api_key:
            found["api_key"] = self.api_key
        return found

    def client(self) -> Any:
        """The official weaviate-client v4, connected here (no start-up checks: they ask PyPI for news)."""
        import weaviate
        from weaviate.classes.init import Auth

        return weaviate.connect_to_custom(
            http_host=self.host,
            http_port=self.port,
            http_secure=False,
            grpc_host=self.host,
            grpc_port=self.grpc_port,
            grpc_secure=False,
            auth_credentials=Auth.api_key(self.api_key) if self.api_key else None,
            skip_init_checks=True,
        )

    def rest(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        with httpx.Client(timeout=30.0, headers=headers) as client:
            return client.request(method, self.url + path, **kwargs)


def weaviate_binary() -> str | None:
    """``weaviate-server`` where ``go install`` puts it (``$(go env GOPATH)/bin``), else on PATH."""
    gopath = os.environ.get("GOPATH")
    if gopath is None and shutil.which("go"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            gopath = subprocess.run(
                ["go", "env", "GOPATH"], capture_output=True, text=True, timeout=30, check=True
            ).stdout.strip()
    for root in filter(None, (*(gopath or "").split(os.pathsep), str(Path.home() / "go"))):
        built = Path(root) / "bin" / "weaviate-server"
        if built.exists():
            return str(built)
    return shutil.which("weaviate-server")


def _skip_without_binary() -> str:
    """The binary; where Go is present and it is not built yet, built here once (``go install``, as
    ``.ci/run`` does: about 7 minutes on one core the first time, then kept in GOPATH/bin), so the
    README's test command alone runs the Weaviate tests too; without Go, a skip that says so."""
    binary = weaviate_binary()
    if binary is None and shutil.which("go"):
        binary = _go_install()
    if binary is None:
        how = (
            f"`go install {MODULE}` did not build it"
            if shutil.which("go")
            else f"Go is missing, so it cannot be built (`go install {MODULE}`)"
        )
        pytest.skip(f"no weaviate-server binary in $(go env GOPATH)/bin or on PATH: {how}")
    return binary


def _go_install() -> str | None:
    """``go install MODULE`` once for every test process on this machine (a lock: parallel runs wait for
    the one build); the binary, or ``None`` if the build failed (its last lines go to stderr)."""
    lock_path = Path(tempfile.gettempdir()) / "vectordb-connector-weaviate-build.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: its binary will do
        built = weaviate_binary()
        if built is not None:
            return built
        print(f"building weaviate-server for the Weaviate tests: go install {MODULE}", file=sys.stderr)
        done = subprocess.run(
            ["go", "install", MODULE], capture_output=True, text=True, timeout=3600, check=False
        )
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return None
    return weaviate_binary()


def _free_ports(n: int) -> list[int]:
    """``n`` distinct free ports (held open together while picked, so they differ)."""
    socks = []
    try:
        for _ in range(n):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for sock in socks:
            sock.close()


def _environment(root: Path, ports: list[int], api_key: str | None) -> dict[str, str]:
    grpc, gossip, data, raft, raft_rpc = ports[1:]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(root),
        "PERSISTENCE_DATA_PATH": str(root / "data"),
        "DEFAULT_VECTORIZER_MODULE": "none",
        "ENABLE_MODULES": "",
        "CLUSTER_HOSTNAME": "node1",
        "CLUSTER_ADVERTISE_ADDR": "127.0.0.1",
        "CLUSTER_BIND_ADDR": "127.0.0.1",
        "CLUSTER_GOSSIP_BIND_PORT": str(gossip),
        "CLUSTER_DATA_BIND_PORT": str(data),
        "RAFT_PORT": str(raft),
        "RAFT_INTERNAL_RPC_PORT": str(raft_rpc),
        "RAFT_BOOTSTRAP_EXPECT": "1",
        "RAFT_TIMEOUTS_MULTIPLIER": "1",  # one node: no reason to wait 5 s heartbeats for a leader
        "GRPC_PORT": str(grpc),
        "DISABLE_TELEMETRY": "true",
        "GO_PROFILING_DISABLE": "true",  # else it listens on :6060, the same port for every server
        "LOG_LEVEL": "warning",
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "false" if api_key else "true",
    }
    if api_key:
        env.update(
            {
                "AUTHENTICATION_APIKEY_ENABLED": "true",
                "AUTHENTICATION_APIKEY_ALLOWED_KEYS": api_key,
                "AUTHENTICATION_APIKEY_USERS": "loader",
            }
        )
    return env


def _ready(proc: subprocess.Popen[bytes], url: str) -> bool:
    """True once ``/v1/.well-known/ready`` answers 200; False if the process ended (a port was taken)."""
    return bool(answers_200(proc, f"{url}/v1/.well-known/ready", START_TIMEOUT_S))


class WeaviateProcess:
    """A ``weaviate-server`` a test owns: ``kill`` it (SIGKILL, no goodbye) and ``start`` it again on the
    same REST, gRPC, gossip, data and Raft ports and the same ``PERSISTENCE_DATA_PATH``; ``stop`` at the
    end (SIGTERM). Ready when ``/v1/.well-known/ready`` answers 200.

    Only a first start retries, on fresh ports (another process may take a probed port before the server
    binds it); a restart keeps its ports, which the clients and the Raft configuration know.
    """

    def __init__(self, root: Path, *, api_key: str | None = None) -> None:
        self.root, self.api_key = root, api_key
        self.ports: list[int] = []  # REST, gRPC, gossip, data, Raft, Raft RPC: picked at the first start
        self._proc: subprocess.Popen[bytes] | None = None
        self._starts = 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def server(self) -> WeaviateServer:
        if not self.ports:
            raise RuntimeError("the server has not been started")
        log_path = self.root / f"weaviate-{max(0, self._starts - 1)}.log"
        return WeaviateServer("127.0.0.1", self.ports[0], self.ports[1], log_path, self.api_key, self.pid)

    def start(self) -> WeaviateServer:
        """Start (again), and wait until it answers ready; the first start picks free ports."""
        binary = _skip_without_binary()
        first = not self.ports
        for _ in range(3 if first else 1):
            ports = self.ports or _free_ports(6)
            log_path = self.root / f"weaviate-{self._starts}.log"
            self._starts += 1
            args = [binary, "--host", "127.0.0.1", "--port", str(ports[0]), "--scheme", "http"]
            with log_path.open("wb") as log:
                self._proc = subprocess.Popen(
                    args,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=_environment(self.root, ports, self.api_key),
                )
            try:
                ready = _ready(self._proc, f"http://127.0.0.1:{ports[0]}")
            except BaseException:
                self.stop()
                raise
            if ready:
                self.ports = ports
                return self.server
            stop_process(self._proc, grace_s=30)
            self._proc = None
            if first:
                shutil.rmtree(self.root / "data", ignore_errors=True)
        tail = log_path.read_text(errors="replace")[-3000:]
        tries = "in three starts" if first else f"on its ports {ports}"
        pytest.fail(f"weaviate-server did not become ready {tries}; last log:\n{tail}")

    def kill(self) -> None:
        """SIGKILL: replies in flight are lost; what Weaviate wrote to its logs stays."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(timeout=30)
        self._proc = None

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc, grace_s=30)
        self._proc = None


@contextlib.contextmanager
def start_weaviate(root: Path, *, api_key: str | None = None) -> Iterator[WeaviateServer]:
    """A Weaviate on 127.0.0.1 with its data under ``root``, stopped on exit."""
    process = WeaviateProcess(root, api_key=api_key)
    server = process.start()
    try:
        yield server
    finally:
        forget_shared()  # the connector's channels and pools, before the server goes away
        process.stop()


@pytest.fixture(scope="session")
def weaviate_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeaviateServer]:
    pytest.importorskip("weaviate")
    with start_weaviate(tmp_path_factory.mktemp("weaviate")) as server:
        yield server


@pytest.fixture(scope="session")
def weaviate_key_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeaviateServer]:
    pytest.importorskip("weaviate")
    with start_weaviate(tmp_path_factory.mktemp("weaviate-key"), api_key=API_KEY) as server:
        yield server


def collection_name(test_name: str) -> str:
    """A fresh Weaviate class name from a test's name (a capital, then letters, digits, underscores)."""
    stem = re.sub(r"[^0-9A-Za-z]+", "_", test_name).strip("_")[:40]
    return f"T{stem}_{uuid.uuid4().hex[:6]}"


@pytest.fixture
def weaviate_collection(request: pytest.FixtureRequest, weaviate_server: WeaviateServer) -> Iterator[str]:
    """The name of a collection no one has made: tests decide how to make it; dropped afterwards."""
    name = collection_name(request.node.name)
    yield name
    weaviate_server.rest("DELETE", f"/v1/schema/{name}")
