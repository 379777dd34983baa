"""Test server processes that fault tests SIGKILL and start again, holding what they acknowledged.

A server keeps a ``Journal``: each change it applied is appended to a file before its reply goes
out, and a server started again applies the file's changes before it listens, so, like a database
with a write-ahead log, it still holds everything it acknowledged. ``os.write`` hands the bytes to
the kernel, so a SIGKILL right after it loses nothing (the process dies, not the machine: no
fsync). An entry torn by a kill inside the write was never acknowledged; it is cut off when the
journal is opened again, so that the entries appended next follow whole ones.

``RestartableProcess`` runs such a server (a module's ``main(argv)``) in its own process, reads the
ports it announces on stdout (one ``NAME <port>`` line each, as ``serve_until_signal`` prints them),
and can ``kill`` it (SIGKILL, no goodbye) and ``start`` it again on the ports it keeps. Each start
takes a spare, a process started ahead (``python -m tests.servers.restartable MODULE``) that has
imported the module and waits on stdin for its arguments, so that a restart costs the journal's
replay, as a database's restart is mostly its recovery, and not Python's imports: qdrant-client's
took the Qdrant server 4-5 s to restart on a busy machine, which outlasted all the retries of a
batch in some runs (full jitter can make five delays add up to little). The Pinecone servers
(``fixtures.RestartableServer``) and the Qdrant one (``qdrant_process.RestartableQdrant``) are
built on it; ``launch_process``, ``read_ports`` and ``stop_server`` also run the servers that are
never restarted.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar, Generic, Self, TypeVar

import msgspec

from jobs.processes import stop_process

__all__ = [
    "Journal",
    "RestartableProcess",
    "launch_process",
    "read_ports",
    "serve_until_signal",
    "stop_server",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30.0
_SIZE = 4  # bytes of each entry's length, little-endian

T = TypeVar("T")


class Journal(Generic[T]):
    """An append-only file of msgpack entries of one type, each after its length.

    Hold ``lock`` around applying a change and appending it, so that the file keeps the order in
    which the changes were applied: two upserts of one id, replayed, must end as the server did.
    ``entry_type`` is what msgspec decodes each entry as: a Struct, or a union of tagged Structs
    (not a ``type``, hence ``Any``: annotate the journal, ``Journal[Entry]``, to fix ``T``).
    """

    def __init__(self, path: Path, entry_type: Any) -> None:
        self.path = path
        self.lock = threading.Lock()
        self._decoder = msgspec.msgpack.Decoder(entry_type)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # a torn last entry, cut off: the next entry would otherwise be read as the rest of it
        os.ftruncate(self._fd, _whole_length(path.read_bytes()))

    def entries(self) -> Iterator[T]:
        """The entries appended so far, oldest first."""
        data = self.path.read_bytes()
        offset = 0
        while offset + _SIZE <= len(data):
            size = int.from_bytes(data[offset : offset + _SIZE], "little")
            yield self._decoder.decode(data[offset + _SIZE : offset + _SIZE + size])
            offset += _SIZE + size

    def append(self, entry: T) -> None:
        """Write ``entry`` in one ``os.write``: once it returns, a SIGKILL no longer loses it."""
        encoded = msgspec.msgpack.encode(entry)
        os.write(self._fd, len(encoded).to_bytes(_SIZE, "little") + encoded)

    def close(self) -> None:
        os.close(self._fd)


def _whole_length(data: bytes) -> int:
    """How many bytes of ``data`` are whole entries."""
    offset = 0
    while offset + _SIZE <= len(data):
        end = offset + _SIZE + int.from_bytes(data[offset : offset + _SIZE], "little")
        if end > len(data):
            break
        offset = end
    return offset


class RestartableProcess:
    """A server process that a test may ``kill`` and ``start`` again on the ports it keeps.

    A subclass names the module whose ``main(argv)`` serves (``module``), the ports it announces
    (``announced``) and its arguments (``arguments``, from the ports the last start announced, kept
    in ``ports`` after a kill for the restart).
    """

    module: ClassVar[str]
    announced: ClassVar[tuple[str, ...]]

    def __init__(self) -> None:
        self.ports: dict[str, int] = {}  # empty until the first start announced them, then kept
        self._process: subprocess.Popen[str] | None = None
        self._spare: subprocess.Popen[str] | None = None

    def arguments(self) -> list[str]:
        """The arguments of ``module``'s ``main``; ``self.ports`` holds the last start's ports."""
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None

    def start(self) -> None:
        """Start the server (again), on the ports ``arguments`` asks for, in the spare if it is alive."""
        process, self._spare = self._spare, None
        if process is None or process.poll() is not None:
            if process is not None:
                stop_server(process)  # reaped, its pipes closed
            process = launch_process(["-m", __name__, self.module], stdin=True)
        assert process.stdin is not None
        process.stdin.write(json.dumps(self.arguments()) + "\n")
        process.stdin.close()
        self._process = process
        self.ports = read_ports(process, self.announced)
        # the next start's spare imports while this server serves
        self._spare = launch_process(["-m", __name__, self.module], stdin=True)

    def kill(self) -> None:
        """SIGKILL: replies in flight are lost; what was journaled stays."""
        if self._process is not None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(10)
            if self._process.stdout is not None:
                self._process.stdout.close()
        self._process = None

    def stop(self) -> None:
        """Stop the server and its spare."""
        for process in (self._process, self._spare):
            if process is not None:
                stop_server(process)
        self._process = self._spare = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()  # whichever process runs by then


def launch_process(args: list[str], *, stdin: bool = False) -> subprocess.Popen[str]:
    """``python *args`` in the repository, with the repository on ``PYTHONPATH``, stdout piped (and
    stdin, with ``stdin``)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.PIPE if stdin else None,
        stdout=subprocess.PIPE,
        text=True,
    )


def read_ports(process: subprocess.Popen[str], names: tuple[str, ...]) -> dict[str, int]:
    """The ports the server announces (a ``NAME <n>`` line each), read in a thread to bound the wait."""
    ports: dict[str, int] = {}

    def read() -> None:
        for line in process.stdout or ():
            name, _, value = line.strip().partition(" ")
            if name in names:
                ports[name] = int(value)
            if len(ports) == len(names):
                return

    reader = threading.Thread(target=read, name=f"ports-{process.pid}", daemon=True)
    reader.start()
    reader.join(START_TIMEOUT_S)
    if len(ports) < len(names):
        stop_server(process)  # also ends a reader still blocked on the pipe
        reader.join()
        raise RuntimeError(
            f"test server (exit code {process.returncode}) announced {ports}, not {' and '.join(names)}"
        )
    return ports


def stop_server(process: subprocess.Popen[Any]) -> None:
    stop_process(process)  # a spare waiting for its arguments ends on SIGTERM too
    for pipe in (process.stdin, process.stdout):
        if pipe is not None and not pipe.closed:
            pipe.close()


def serve_until_signal(**ports: int) -> None:
    """Announce ``ports`` on stdout (``NAME <port>`` lines, which ``read_ports`` reads) and block until
    SIGTERM or SIGINT."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for name, port in ports.items():
        print(f"{name} {port}", flush=True)
    while not stop.wait(0.5):
        pass


def main() -> None:
    """A spare: import the module named first, read its arguments (one JSON list) from stdin and run
    its ``main``; exit if stdin closes first."""
    module = importlib.import_module(sys.argv[1])
    line = sys.stdin.readline()
    if line:
        module.main(json.loads(line))


if __name__ == "__main__":
    main()
