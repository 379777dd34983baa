"""Run a function in a forked child of the test process, as multiprocessing's default start method does."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["ForkedChild", "answer_of", "fork_child", "in_forked_child"]


class ForkedChild(NamedTuple):
    pid: int
    answers: int  # the read end of the pipe the child writes its answer to


def fork_child(work: Callable[[], str]) -> ForkedChild:
    """Start ``work()`` in a forked child, which writes its text (or ``raised <repr>``) to a pipe and
    exits; the parent goes on at once (``answer_of`` waits for it)."""
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
    return ForkedChild(pid, read)


def answer_of(child: ForkedChild, timeout_s: float = 20.0) -> str:
    """The child's text once it has exited; an ``AssertionError`` if it raised (its repr) or had not
    ended after ``timeout_s`` (then it is killed): a hang fails the test instead of stopping the run."""
    try:
        deadline = time.monotonic() + timeout_s
        while (ended := os.waitpid(child.pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.kill(child.pid, signal.SIGKILL)
                os.waitpid(child.pid, 0)
                raise AssertionError(f"the forked child had not ended after {timeout_s} s")
            time.sleep(0.02)
        with os.fdopen(child.answers, "rb", closefd=False) as reader:
            answer = reader.read().decode()
    finally:
        os.close(child.answers)
    status = ended[1]
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"the forked child failed: {answer}"
    return answer


def in_forked_child(work: Callable[[], str], timeout_s: float = 20.0) -> str:
    """``work()``'s text, run in a forked child (``fork_child``, ``answer_of``)."""
    return answer_of(fork_child(work), timeout_s)
