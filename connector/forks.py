"""``ForkCheck``: state an object makes anew in a forked child (``os.fork``, multiprocessing's default on Linux).

A child inherits its parent's objects but not the threads behind them: a pool whose sender threads are
not there, a lock a parent's thread held at the fork, connections whose replies the parent reads. Each
object that holds such state keeps a ``ForkCheck`` and calls ``once_per_process(reset)`` before using it:
``reset`` runs once in each new process, before any of its threads goes on. Two threads of a child that
both came first would otherwise both reset: the second would take the lock or the connection the first
had just made.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

__all__ = ["ForkCheck"]

_resetting = threading.Lock()  # made anew in every child below: a parent's thread may hold it at the fork


def _new_lock_in_child() -> None:
    global _resetting
    _resetting = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_in_child)


class ForkCheck:
    """The process an object's state was made in; ``once_per_process`` makes it anew in any other."""

    __slots__ = ("_pid",)

    def __init__(self) -> None:
        self._pid = os.getpid()

    def once_per_process(self, reset: Callable[[], None]) -> None:
        """Runs ``reset`` if this is not the process the state was made in (the first caller there does;
        the others wait for it), then returns. One comparison in the process it was made in."""
        if self._pid == os.getpid():
            return
        with _resetting:
            if self._pid == os.getpid():  # another thread of this child reset it meanwhile
                return
            reset()
            self._pid = os.getpid()  # after reset: a thread that sees it sees the state reset
