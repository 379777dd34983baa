"""``Connections``: the open connections to one server, shared by threads, the idle ones kept for reuse.

Both of the connector's own clients keep theirs here (``http1``'s sockets, ``http2``'s connections): one
place for taking an idle one (if the caller's check finds it still usable), giving it back, dropping it,
closing them all, and forgetting a forked parent's. A thread has a connection to itself from ``_take``
(or ``_add``, for one it opened) until ``_give_back`` or ``_drop``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from ..forks import ForkCheck

__all__ = ["Connections"]


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class Connections(Generic[C]):
    """Open connections, at most ``max_idle`` of them idle; thread-safe."""

    def __init__(self, max_idle: int) -> None:
        self._max_idle = max_idle
        self._idle: list[C] = []
        self._conns: set[C] = set()
        self._lock = threading.Lock()
        self._fork = ForkCheck()
        # dropped without close(), the connections still close when it is collected, not at the
        # collector's whim with a ResourceWarning each
        weakref.finalize(self, _close_all, self._conns)

    def close(self) -> None:
        """Close every connection, idle or not; new ones are opened if the pool is used again."""
        with self._lock:
            conns, self._idle = list(self._conns), []
            self._conns.clear()
        _close_all(set(conns))

    def _take(self, usable: Callable[[C], bool]) -> C | None:
        """An idle connection that ``usable`` accepts (those it refuses are closed), or ``None``."""
        self._fork.once_per_process(self._forget_parents)
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if usable(conn):
                return conn
            self._drop(conn)

    def _add(self, conn: C) -> None:
        """A connection just opened, in use by its opener."""
        with self._lock:
            self._conns.add(conn)

    def _give_back(self, conn: C) -> None:
        with self._lock:
            if conn in self._conns and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        self._drop(conn)

    def _drop(self, conn: C) -> None:
        with self._lock:
            self._conns.discard(conn)
        conn.close()

    def _forget_parents(self) -> None:
        """In a forked child: the parent's connections are its own (a child reading a reply on one could
        take the parent's); the child opens its own. The lock is new too: another thread of the parent
        may have held it at the fork."""
        inherited = set(self._conns)
        self._lock, self._idle, self._conns = threading.Lock(), [], set()
        weakref.finalize(self, _close_all, self._conns)
        _close_all(inherited)  # our copies of the descriptors only: the parent's stay open


def _close_all(conns: set[Any]) -> None:
    for conn in list(conns):
        conn.close()
