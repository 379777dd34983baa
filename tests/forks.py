"""Run a function in a forked child of the test process, as multiprocessing's default start method does."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

__all__ = ["in_forked_child"]


def in_forked_child(work: Callable[[], str], timeout_s: float = 20.0) -> str:
    """``work()``'s text, run in a forked child; an ``AssertionError`` if it raised (its repr) or had not
    ended after ``timeout_s`` (then it is killed): a hang fails the test instead of stopping the run."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe and leave, never return into pytest
        status = 1
        try:
            os.close(read)
            try:
                answer, status = work(), 0
            except BaseException as exc:
                answer = f"raised {exc!r}"
            os.write(write, answer.encode())
        finally:
            os._exit(status)
    os.close(write)
    try:
        deadline = time.monotonic() + timeout_s
        while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise AssertionError(f"the forked child had not ended after {timeout_s} s")
            time.sleep(0.05)
        answer = os.read(read, 1 << 16).decode()
    finally:
        os.close(read)
    status = ended[1]
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"the forked child failed: {answer}"
    return answer
