"""Pytest fixtures and a process launcher for the Pinecone-protocol test servers.

``ServerHandle`` is what a test holds, the same for a server in this process and one in
another (Spark executors and Beam workers run elsewhere, so the test must ask the server
what arrived): ``.uri`` for the connector, ``.host`` for the official SDK, ``.arrived()``,
``.script(...)`` and ``.reset()``. An in-thread handle reads the state directly; a process
handle goes through the control API, and both return the same ``Arrived``.

``restartable_server_process`` runs a server that fault tests may SIGKILL and start again on the
same port (``RestartableServer``, a ``restartable.RestartableProcess``): its vectors are journaled
before each reply (``JournaledState``, on ``restartable.Journal``), so, like a real database, it
still holds every vector it acknowledged. ``python -m tests.servers.fixtures --kind grpc --port P
--journal FILE`` is that process.

``start_server_process(kind, id_log=FILE)`` runs a server for soak benchmarks of millions of rows,
which the in-memory record could not hold: it appends the ids of every accepted upsert to ``FILE``
(``IdLogState``), and with a ``noop`` script keeps nothing else but each request's outcome.

Register with ``pytest_plugins = ["tests.servers.fixtures"]`` (in the root conftest).
"""

from __future__ import annotations

import argparse
import os
import re
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import orjson
import pytest

from vectordb.connector.protowire import FieldReader
from vectordb.connector.transports.base import forget_shared

from .pinecone_rules import IndexType, add_index_arguments, index_arguments, index_of

if TYPE_CHECKING:
    from .qdrant_grpc import QdrantServer
from .restartable import (
    Journal,
    RestartableProcess,
    launch_process,
    read_ports,
    serve_until_signal,
    stop_server,
)
from .script import (
    Admission,
    Arrived,
    ArrivedVector,
    Decoded,
    FaultScript,
    ServerState,
    Verdict,
    decode_arrived,
    decode_script,
    encode_script,
)

__all__ = [
    "IdLogState",
    "JournaledState",
    "RestartableServer",
    "ServerHandle",
    "pinecone_grpc_server",
    "pinecone_rest_server",
    "restartable_server_process",
    "start_server",
    "start_server_process",
]

Kind = Literal["rest", "grpc"]


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
def start_server(kind: Kind, *, index: IndexType | None = None) -> Iterator[ServerHandle]:
    """A server in a thread of this process, with fresh state; stopped on exit.

    ``index``: the index it stands for from its start (``pinecone_rules.dense(N)`` or ``SPARSE``), as
    ``describe_index_stats`` reports it (its dimension, ``vectorType`` and ``metric``); none: the
    dimension is learnt from the first dense row, and the fresh server reports 0 and no ``vectorType``."""
    state = ServerState()
    if kind == "rest":
        from .pinecone_rest import PineconeRestServer

        with PineconeRestServer(0, state, index=index) as rest:
            yield ServerHandle("rest", rest.port, rest.port, state)
    else:
        from .pinecone_grpc import PineconeGrpcServer

        with PineconeGrpcServer(0, state, index=index) as grpc_server:
            yield ServerHandle("grpc", grpc_server.port, grpc_server.control_port, state)


@contextmanager
def start_server_process(
    kind: Kind, *, index: IndexType | None = None, id_log: Path | None = None
) -> Iterator[ServerHandle]:
    """A server in its own Python process (for Spark executors and Beam workers); SIGTERM on exit.

    ``index`` as for ``start_server``. With ``id_log``, the ids of every accepted upsert are also
    appended to that file (``IdLogState``).
    """
    if id_log is None:
        process = launch_process(
            ["-m", f"tests.servers.pinecone_{kind}", "--port", "0", *index_arguments(index)]
        )
    else:
        logged = ["--kind", kind, "--port", "0", "--id-log", str(id_log), *index_arguments(index)]
        process = launch_process(["-m", "tests.servers.fixtures", *logged])
    try:
        ports = read_ports(process, ("PORT", "CONTROL"))
        yield ServerHandle(kind, ports["PORT"], ports["CONTROL"], pid=process.pid)
    finally:
        stop_server(process)


class RestartableServer(RestartableProcess):
    """A journaled server process that a test may ``kill`` (SIGKILL, no goodbye) and ``start`` again on
    the same port and journal; ``handle`` is the running server's (its control port changes)."""

    module = __name__
    announced = ("PORT", "CONTROL")

    def __init__(self, kind: Kind, journal: Path) -> None:
        super().__init__()
        self.kind, self.journal = kind, journal

    def arguments(self) -> list[str]:
        port = self.ports.get("PORT", 0)  # 0 until the first start has picked a free port, then kept
        return ["--kind", self.kind, "--port", str(port), "--journal", str(self.journal)]

    @property
    def handle(self) -> ServerHandle:
        if not self.running:
            raise RuntimeError("the server is not running")
        return ServerHandle(self.kind, self.ports["PORT"], self.ports["CONTROL"], pid=self.pid)


@contextmanager
def restartable_server_process(kind: Kind, journal: Path) -> Iterator[RestartableServer]:
    """A journaled server in its own process, started; stopped on exit (whichever process runs then)."""
    with RestartableServer(kind, journal) as server:
        yield server


@pytest.fixture
def pinecone_rest_server() -> Iterator[ServerHandle]:
    """A fresh Pinecone REST server in this process (the process's connections to it closed after)."""
    with start_server("rest") as handle:
        yield handle
        forget_shared()


@pytest.fixture
def pinecone_grpc_server() -> Iterator[ServerHandle]:
    """A fresh Pinecone gRPC server in this process (the process's connections to it closed after)."""
    with start_server("grpc") as handle:
        yield handle
        forget_shared()


@pytest.fixture
def qdrant_server() -> Iterator[QdrantServer]:
    """A fresh Qdrant (REST and gRPC) test server in this process."""
    from .qdrant_grpc import QdrantServer

    with QdrantServer() as running:
        yield running
        forget_shared()


# -- the journaled server process ------------------------------------------------------------------


class _JournalEntry(msgspec.Struct, frozen=True):
    namespace: str
    vectors: list[ArrivedVector]


class JournaledState(ServerState):
    """A ``ServerState`` that journals every accepted upsert before the reply goes out, and starts from
    what the journal holds (``restartable.Journal``): the server acknowledges only what a restart
    will hold. Deletes and ``reset`` are not journaled: they are for tests that do not restart the
    server.
    """

    def __init__(self, journal: Path) -> None:
        super().__init__()
        self._journal: Journal[_JournalEntry] = Journal(journal, _JournalEntry)
        for entry in self._journal.entries():
            space = self._namespaces.setdefault(entry.namespace, {})
            for vector in entry.vectors:
                space[vector.id] = vector
                if self._dimension is None and vector.values_f32:  # the index keeps its dimension
                    self._dimension = len(vector.values_f32) // 4

    def record(
        self,
        admission: Admission,
        verdict: Verdict,
        *,
        body: bytes,
        headers: dict[str, str],
        api_key: str | None,
        decoded: Decoded | None,
    ) -> None:
        with self._journal.lock:
            super().record(admission, verdict, body=body, headers=headers, api_key=api_key, decoded=decoded)
            if verdict.outcome == "ok" and decoded is not None and decoded.vectors:
                self._journal.append(_JournalEntry(decoded.namespace, decoded.vectors))


class IdLogState(ServerState):
    """A ``ServerState`` that appends the ids of every accepted upsert to ``id_log``, one a line, before
    the reply goes out: the file holds each id the server acknowledged, as many times as it did.

    For soak runs of millions of rows. With a ``noop`` script the server keeps no body and no vector,
    only each request's outcome, so its memory does not grow with the rows; the ids then come from
    ``ids_of(body)``, which reads them without decoding the values (else from the decoded vectors).
    ``reset`` does not empty the file.
    """

    def __init__(self, id_log: Path, ids_of: Callable[[bytes], list[str]]) -> None:
        super().__init__()
        self._ids_of = ids_of
        self._log_lock = threading.Lock()
        self._log_fd = os.open(id_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def record(
        self,
        admission: Admission,
        verdict: Verdict,
        *,
        body: bytes,
        headers: dict[str, str],
        api_key: str | None,
        decoded: Decoded | None,
    ) -> None:
        super().record(admission, verdict, body=body, headers=headers, api_key=api_key, decoded=decoded)
        if verdict.outcome != "ok":
            return
        ids = [v.id for v in decoded.vectors] if decoded is not None else self._ids_of(body)
        if ids:
            with self._log_lock:
                os.write(self._log_fd, ("\n".join(ids) + "\n").encode())


_REST_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*")')


def _rest_ids(body: bytes) -> list[str]:
    """The vector ids of a REST upsert body, values not parsed (a metadata key "id" would count too)."""
    return [orjson.loads(match) for match in _REST_ID.findall(body)]


def _grpc_ids(body: bytes) -> list[str]:
    """The vector ids of an ``UpsertRequest`` (``vectors`` = 1, ``Vector.id`` = 1), values not decoded."""
    return [FieldReader(vector).str(1) for vector in FieldReader(body).fields.get(1, [])]


def main(argv: list[str] | None = None) -> None:
    """Serve a journaled (``RestartableServer`` starts this) or id-logging REST or gRPC server until SIGTERM."""
    parser = argparse.ArgumentParser(description="A journaled or id-logging Pinecone-protocol test server")
    parser.add_argument("--kind", choices=["rest", "grpc"], required=True)
    parser.add_argument("--port", type=int, default=0)
    keep = parser.add_mutually_exclusive_group(required=True)
    keep.add_argument("--journal", type=Path, help="journal accepted vectors here; start from what it holds")
    keep.add_argument("--id-log", type=Path, help="append the ids of accepted upserts here (IdLogState)")
    add_index_arguments(parser)
    args = parser.parse_args(argv)
    from .pinecone_rest import PineconeRestServer

    state: ServerState
    if args.journal is not None:
        state = JournaledState(args.journal)
    else:
        state = IdLogState(args.id_log, _rest_ids if args.kind == "rest" else _grpc_ids)
    if args.kind == "rest":
        with PineconeRestServer(args.port, state, index=index_of(args)) as rest:
            serve_until_signal(PORT=rest.port, CONTROL=rest.port)
    else:
        from .pinecone_grpc import PineconeGrpcServer

        with PineconeGrpcServer(args.port, state, index=index_of(args)) as grpc_server:
            serve_until_signal(PORT=grpc_server.port, CONTROL=grpc_server.control_port)


if __name__ == "__main__":
    main()
