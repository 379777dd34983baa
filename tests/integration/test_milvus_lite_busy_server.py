"""A Milvus Lite server that holds the data and answers late (a loaded machine) is waited for until
``start_timeout_s``, not called wedged after 5 s of silence and 10 s more: a streaming job failed that way,
advising to kill a healthy server. A frozen one (its process stopped) is still told soon. The server is made
silent by stopping it (SIGSTOP): for 12 s, so it runs again when the 15 s are out (busy), or for 30 s (frozen)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from vectordb.connector.backends.milvus import lite
from vectordb.connector.errors import ConnectError

SILENT_S = 12.0  # past the 5 s health check and the 10 s wait for it to go away


def silenced(pid: int, seconds: float) -> threading.Timer:
    os.kill(pid, signal.SIGSTOP)
    resume = threading.Timer(seconds, os.kill, (pid, signal.SIGCONT))
    resume.start()
    return resume


def test_a_server_that_answers_late_is_waited_for(tmp_path: Path) -> None:
    path = str(tmp_path / "busy.db")
    address = lite.ensure_server(path)
    state = lite.running(path)
    assert state is not None
    lite._VERIFIED.clear()  # as a fresh process (an executor) finds it
    resume = silenced(state.pid, SILENT_S)
    try:
        assert lite.ensure_server(path, start_timeout_s=60) == address  # old code: ConnectError at 15 s
    finally:
        resume.join()
        lite.stop(path)


def test_a_frozen_server_is_told_soon(tmp_path: Path) -> None:
    """Stopped (SIGSTOP) past the 5 s health check and the 10 s wait for it to go away: frozen, not busy, so
    the error comes then, not after start_timeout_s (tests/faults/test_matrix.py's bound)."""
    path = str(tmp_path / "frozen.db")
    lite.ensure_server(path)
    state = lite.running(path)
    assert state is not None
    lite._VERIFIED.clear()
    resume = silenced(state.pid, 30)
    try:
        started = time.monotonic()
        with pytest.raises(ConnectError, match=r"does not answer \(its process is stopped\)") as info:
            lite.ensure_server(path, start_timeout_s=60)
        assert time.monotonic() - started < 5 + lite.SHUTDOWN_WAIT_S + 3
        assert f"kill pid {state.pid}" in str(info.value)
    finally:
        resume.join()
        lite.stop(path)
