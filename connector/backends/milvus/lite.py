"""The embedded default: one Milvus Lite server per data path, shared by every process on this machine.

A URI that is a file path (``./vectors.db``) or ``milvus+lite://./vectors.db`` writes to Milvus
Lite, a real ``MilvusService`` gRPC server that keeps its data in that directory. The Milvus
backend calls ``ensure_server(path)`` and talks gRPC to the address it returns, so the executors
of a local Spark job or Beam pipeline (separate processes) all write to one server.

Rules it keeps:

- One server per path. ``connector.lock`` inside the data directory (``fcntl.flock``) serialises
  starting and stopping; ``connector-server.json`` records the server's pid and port. The server
  holds an exclusive flock on that state file for its whole life, so "alive" means "someone holds
  the lock" (no trap from a reused pid or a zombie), confirmed by a ``CheckHealth`` call.
- Its own process and session (``python -m vectordb.connector.backends.milvus.lite serve``, double-forked),
  so it outlives the task that started it and is nobody's child to reap; it binds 127.0.0.1 only
  and logs to ``connector-server.log`` in the data directory. It serves Milvus Lite's own
  servicer, but serialises mutating calls: Lite's engine is single-writer per collection and its
  ``milvus-lite server`` does not guard against the concurrent upserts of several executors.
- Lifetime: until ``stop(path)``, or until it has answered no call for ``idle_timeout_s``
  (default 300 s, env ``VECTORDB_MILVUS_LITE_IDLE_S``, 0 = never). The next ``ensure_server``
  starts a fresh one on the same data. SIGTERM (what ``stop`` sends) drains calls for up to 5 s
  and closes the database, which flushes it; SIGINT is handled the same way.
- While it runs it holds the data directory's own lock, so ``MilvusClient("./vectors.db")``
  cannot open the directory; read through the server instead,
  ``MilvusClient(uri="http://" + ensure_server("./vectors.db"))``, or ``stop()`` it first.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError, ConnectError, MissingExtra
from ...redaction import Secrets
from ...transports.base import Host, Transport, WireReply, WireRequest
from ..registry import PATH_SCHEME, canonical_uri

__all__ = ["LiteTransport", "check_installed", "ensure_server", "lite_path", "running", "stop"]

LOCK_NAME = "connector.lock"
STATE_NAME = "connector-server.json"
LOG_NAME = "connector-server.log"
IDLE_ENV = "VECTORDB_MILVUS_LITE_IDLE_S"
DEFAULT_IDLE_S = 300.0
SHUTDOWN_WAIT_S = 10.0  # a server that stopped answering gets this long to exit (SIGTERM drains in ~5 s)
HEALTH_METHOD = "/milvus.proto.milvus.MilvusService/CheckHealth"
LITE_SCHEME = f"{PATH_SCHEME}://"

# what starting a server needs, module: its distribution (the [milvus] extra brings them all); Milvus
# Lite's servicer is built on pymilvus's generated stubs, and the health check is a gRPC call
SERVER_MODULES = {"milvus_lite": "milvus-lite", "pymilvus": "pymilvus", "grpc": "grpcio"}

# path → address this process has already seen answer; the flock check alone then suffices
_VERIFIED: dict[str, str] = {}
_VERIFIED_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class ServerState:
    pid: int
    port: int

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def lite_path(uri: str) -> str | None:
    """The absolute data path a URI names for the embedded default, or ``None`` for any other URI.

    ``./vectors.db``, ``/abs/x.db``, ``~/x.db`` and ``milvus+lite://./x.db`` (``milvus+lite:///abs/x.db``)
    all name a path (``registry.canonical_uri`` says which URIs are paths); a URI with another scheme
    does not. Resolve it where the job starts: executors may run in another working directory.
    """
    canonical = canonical_uri(uri)
    if not canonical.startswith(LITE_SCHEME):
        return None
    return canonical[len(LITE_SCHEME) :].split("?", 1)[0]


def ensure_server(path: str, *, idle_timeout_s: float | None = None, start_timeout_s: float = 60.0) -> str:
    """The address (``"127.0.0.1:PORT"``) of the Milvus Lite server for ``path``, started if none runs.

    Args:
        path: the data directory (``./vectors.db``); created if missing.
        idle_timeout_s: for a server started now: stop after this long without a call (0 = never);
            default from env ``VECTORDB_MILVUS_LITE_IDLE_S``, else 300.
        start_timeout_s: how long to wait for the lock and for a new server to answer.

    Raises:
        MissingExtra: milvus-lite is not installed.
        ConfigError: the path is a file, or another program holds the data directory.
        ConnectError: the server did not start or does not answer.
    """
    if not os.path.isdir(lite_path(path) or path):  # no server holds it: one is to start, here
        check_installed()  # before the folder and its lock are made: a failed start leaves nothing behind
    data_dir = _data_dir(path)
    state = read_state(data_dir)
    if state is not None and _known_good(data_dir, state):
        return state.address
    deadline = time.monotonic() + start_timeout_s
    with _start_lock(data_dir, deadline):
        state = read_state(data_dir)
        if state is not None:
            if _answers(state.address, timeout_s=5.0):
                return _remember(data_dir, state)
            # alive but silent: shutting down (a few seconds), frozen (its process stopped: told at once), or
            # busy (a loaded machine: asked again until the deadline); let it go before starting another
            if not _wait_gone(data_dir, min(deadline, time.monotonic() + SHUTDOWN_WAIT_S)):
                frozen = _process_stopped(state.pid)
                if not frozen and _answers(state.address, timeout_s=max(1.0, deadline - time.monotonic())):
                    return _remember(data_dir, state)
                why = (
                    "its process is stopped"
                    if frozen
                    else f"not in start_timeout_s, {start_timeout_s:.0f} s: on a machine this busy give it longer"
                )
                raise ConnectError(
                    f"Milvus Lite server for {data_dir} (pid {state.pid}) holds the data but does not answer "
                    f"({why}), nor went away in {SHUTDOWN_WAIT_S:.0f} s: stop it "
                    f"(vectordb.connector.backends.milvus.lite.stop) or kill pid {state.pid}"
                )
        state = _spawn(data_dir, _idle_default(idle_timeout_s), deadline)
        if not _answers(state.address, timeout_s=max(1.0, deadline - time.monotonic())):
            raise ConnectError(
                f"Milvus Lite server for {data_dir} started but does not answer on {state.address}"
            )
        return _remember(data_dir, state)


def stop(path: str, *, timeout_s: float = 30.0) -> bool:
    """Stop the server for ``path`` (SIGTERM, then SIGKILL after ``timeout_s``); ``False`` if none ran."""
    data_dir = _data_dir(path, create=False)
    with _VERIFIED_LOCK:
        _VERIFIED.pop(data_dir, None)
    if not os.path.isdir(data_dir):
        return False
    deadline = time.monotonic() + timeout_s
    with _start_lock(data_dir, deadline + 30):
        state = read_state(data_dir)
        if state is None:
            return False
        _signal(state.pid, signal.SIGTERM)
        if not _wait_gone(data_dir, deadline):
            _signal(state.pid, signal.SIGKILL)
            _wait_gone(data_dir, time.monotonic() + 10)
        return True


def running(path: str) -> ServerState | None:
    """The live server for ``path``, if any (no gRPC call)."""
    data_dir = _data_dir(path, create=False)
    return read_state(data_dir) if os.path.isdir(data_dir) else None


# --------------------------------------------------------------------------------------------------
# client side: state, locks, health


def _data_dir(path: str, *, create: bool = True) -> str:
    data_dir = lite_path(path) or path
    if os.path.isfile(data_dir):
        raise ConfigError(
            f"option uri: {data_dir} is a file (a Milvus Lite 2.x database?); Milvus Lite 3 keeps its data in a directory"
        )
    if create:
        os.makedirs(data_dir, exist_ok=True)
    return data_dir


def check_installed() -> None:
    """Raise ``MissingExtra`` naming the ``pip install`` when what starts a server is not installed.

    Looked up (``find_spec``), not imported: cheap enough for a command to call before any work."""
    import importlib.util

    missing = [dist for module, dist in SERVER_MODULES.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise MissingExtra(
            f"the embedded default needs Milvus Lite ({', '.join(missing)} missing): pip install 'vectordb-connector[milvus]'"
        )


def _idle_default(idle_timeout_s: float | None) -> float:
    if idle_timeout_s is not None:
        return idle_timeout_s
    raw = os.environ.get(IDLE_ENV)
    if not raw:
        return DEFAULT_IDLE_S
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"environment variable {IDLE_ENV}={raw!r} is not a number of seconds") from None


def read_state(data_dir: str) -> ServerState | None:
    """The state of the server holding ``data_dir``'s state-file lock, or ``None`` if none holds it."""
    try:
        fd = os.open(os.path.join(data_dir, STATE_NAME), os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: the server is alive
        else:
            return None  # nobody holds it: a crashed server's leftover (our lock goes with the fd)
        raw = os.pread(fd, 4096, 0)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
        return ServerState(pid=int(data["pid"]), port=int(data["port"]))
    except (ValueError, KeyError, TypeError):
        return None  # held but not written yet: the server is still starting


def _known_good(data_dir: str, state: ServerState) -> bool:
    with _VERIFIED_LOCK:
        return _VERIFIED.get(data_dir) == state.address


def _remember(data_dir: str, state: ServerState) -> str:
    with _VERIFIED_LOCK:
        _VERIFIED[data_dir] = state.address
    return state.address


@contextlib.contextmanager
def _start_lock(data_dir: str, deadline: float) -> Iterator[None]:
    fd = os.open(os.path.join(data_dir, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ConnectError(f"timed out waiting for {os.path.join(data_dir, LOCK_NAME)}") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _answers(address: str, *, timeout_s: float) -> bool:
    """True if a Milvus server at ``address`` answers ``CheckHealth``."""
    try:
        import grpc
    except ImportError:
        raise MissingExtra(
            "the embedded Milvus Lite needs grpcio: pip install 'vectordb-connector[milvus]'"
        ) from None
    channel = grpc.insecure_channel(address, options=[("grpc.enable_retries", 0)])
    try:
        call = channel.unary_unary(HEALTH_METHOD)
        call(b"", timeout=timeout_s, wait_for_ready=True)
        return True
    except grpc.RpcError:
        return False
    finally:
        channel.close()


def _process_stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP, a debugger: state T or t in Linux's ``/proc``), so no wait makes it
    answer; ``False`` where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"T", b"t")


def _wait_gone(data_dir: str, deadline: float) -> bool:
    while _state_locked(data_dir):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _state_locked(data_dir: str) -> bool:
    """True while a server holds the state file's lock (also before it has written its port)."""
    try:
        fd = os.open(os.path.join(data_dir, STATE_NAME), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _spawn(data_dir: str, idle_timeout_s: float, deadline: float) -> ServerState:
    """Start ``serve`` for ``data_dir``; returns once it has written its state, or raises why not."""
    check_installed()  # the server (not a client of a running one) needs them all
    cmd = [
        sys.executable,
        "-m",
        "vectordb.connector.backends.milvus.lite",
        "serve",
        data_dir,
        str(idle_timeout_s),
    ]
    with open(os.path.join(data_dir, LOG_NAME), "ab") as log:
        # the launcher exits as soon as the (grandchild) server is ready, or with its error
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.PIPE, close_fds=True
        )
        try:
            _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise ConnectError(f"Milvus Lite server for {data_dir} did not start in time") from None
    if proc.returncode != 0:
        reason = err.decode(errors="replace").strip() or f"exit status {proc.returncode}"
        if "DataDirLocked" in reason:
            raise ConfigError(
                f"Milvus Lite data {data_dir} is open in another program (e.g. MilvusClient({data_dir!r})): {reason}"
            )
        raise ConnectError(f"Milvus Lite server for {data_dir} failed to start: {reason}")
    state = read_state(data_dir)
    if state is None:
        raise ConnectError(f"Milvus Lite server for {data_dir} reported ready but left no state")
    return state


class LiteTransport:
    """gRPC to the embedded server for a path; if that server has gone (idle timeout), the next one.

    Not a retry layer: a request that could not connect is sent again once, and only when
    ``ensure_server`` gives a different address (a fresh server on the same data).
    """

    def __init__(
        self, path: str, metadata: tuple[tuple[str, str], ...], label: str, secrets: Secrets
    ) -> None:
        self._path, self._metadata, self._label, self._secrets = path, metadata, label, secrets
        self._inner = self._connect(ensure_server(path))

    def _connect(self, address: str) -> Transport:
        from ...transports.grpc import GrpcTransport

        self.address = address
        return GrpcTransport(
            address, tls=False, secrets=self._secrets, metadata=self._metadata, label=self._label
        )

    @property
    def host(self) -> Host:
        """The embedded server now serving the path (a fresh one after an idle timeout)."""
        return self._inner.host

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        try:
            return self._inner.send(request, timeout_s=timeout_s)
        except ConnectError:
            address = ensure_server(self._path)
            if address == self.address:
                raise
            self._inner = self._connect(address)
            return self._inner.send(request, timeout_s=timeout_s)

    def close(self) -> None:
        self._inner.close()


# --------------------------------------------------------------------------------------------------
# server side: ``python -m vectordb.connector.backends.milvus.lite serve DATA_DIR IDLE_S``


# Milvus Lite's engine is single-writer per collection and its own server does not serialise
# writes; executors of one job upsert concurrently, so every mutating call takes one lock.
_MUTATING = frozenset(
    {
        "Insert", "Upsert", "Delete", "CreateCollection", "DropCollection", "TruncateCollection",
        "CreatePartition", "DropPartition", "CreateIndex", "DropIndex", "LoadCollection",
        "ReleaseCollection", "Flush", "CreateDatabase", "DropDatabase", "AlterCollection",
        "RenameCollection", "CreateAlias", "AlterAlias", "DropAlias",
    }
)  # fmt: skip


class _Guard:
    """A gRPC server interceptor: serialises mutating calls, and tracks activity for the idle timeout."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._active = 0
        self._last = time.monotonic()

    def idle_s(self) -> float:
        with self._lock:
            return 0.0 if self._active else time.monotonic() - self._last

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        import grpc

        handler = continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary
        serial = details.method.rsplit("/", 1)[-1] in _MUTATING

        def call(request: Any, context: Any) -> Any:
            with self._lock:
                self._active += 1
            try:
                if serial:
                    with self._write_lock:
                        return inner(request, context)
                return inner(request, context)
            finally:
                with self._lock:
                    self._active -= 1
                    self._last = time.monotonic()

        return grpc.unary_unary_rpc_method_handler(
            call,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _serve(data_dir: str, idle_timeout_s: float) -> int:
    """Double-fork: the launcher waits for the server's word on a pipe and exits 0 (ready) or 1 (why not)."""
    read_end, write_end = os.pipe()
    if os.fork() > 0:
        os.close(write_end)
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
        message = b"".join(chunks)
        if message == b"ok":
            return 0
        sys.stderr.write(message.decode(errors="replace") or "the server exited before it was ready")
        return 1
    os.close(read_end)
    os.setsid()  # its own session: no terminal signal or job teardown of the starter reaches it
    os.dup2(1, 2)  # stderr to the log too: the launcher's stderr pipe must close when the launcher exits
    os.chdir("/")  # hold no directory of the job that started it (the data path is absolute)
    try:
        server, db, state_fd, guard = _start(data_dir, idle_timeout_s)
    except BaseException as exc:
        os.write(write_end, f"{type(exc).__name__}: {exc}".encode())
        os._exit(1)
    os.write(write_end, b"ok")
    os.close(write_end)
    _run_until_stopped(server, db, state_fd, guard, data_dir, idle_timeout_s)
    os._exit(0)


def _start(data_dir: str, idle_timeout_s: float) -> tuple[Any, Any, int, _Guard]:
    from concurrent import futures

    import grpc
    from milvus_lite.adapter.grpc.servicer import MilvusServicer
    from milvus_lite.db import MilvusLite
    from pymilvus.grpc_gen import milvus_pb2_grpc

    state_fd = os.open(os.path.join(data_dir, STATE_NAME), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(state_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise RuntimeError(f"another server already serves {data_dir}") from None
        raise
    db = MilvusLite(data_dir)
    guard = _Guard()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16),
        interceptors=[guard],
        options=[("grpc.max_receive_message_length", 256 << 20), ("grpc.max_send_message_length", 256 << 20)],
    )
    milvus_pb2_grpc.add_MilvusServiceServicer_to_server(MilvusServicer(db), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    state = json.dumps(
        {"pid": os.getpid(), "port": port, "idle_timeout_s": idle_timeout_s, "started": time.time()}
    )
    os.ftruncate(state_fd, 0)
    os.pwrite(state_fd, state.encode(), 0)
    print(f"Milvus Lite for {data_dir} listening on 127.0.0.1:{port} (pid {os.getpid()})", flush=True)
    return server, db, state_fd, guard


def _run_until_stopped(
    server: Any, db: Any, state_fd: int, guard: _Guard, data_dir: str, idle_s: float
) -> None:
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    reason = "signal"
    while not stopping.wait(1.0):
        if idle_s > 0 and guard.idle_s() > idle_s:
            reason = f"idle for {idle_s:g} s"
            break
    print(f"Milvus Lite for {data_dir} stopping ({reason})", flush=True)
    server.stop(grace=5).wait()
    db.close()
    # unlink before unlocking: a reader never sees an unlocked state file it could mistake for ours
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(data_dir, STATE_NAME))
    os.close(state_fd)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] != "serve":
        sys.stderr.write(
            "usage: python -m vectordb.connector.backends.milvus.lite serve DATA_DIR IDLE_TIMEOUT_S\n"
        )
        return 2
    return _serve(argv[1], float(argv[2]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
