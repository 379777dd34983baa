"""The transport contract: ``send(request, timeout_s) -> WireReply`` or one of the errors in errors.py.

A transport translates its library's errors into the connector's, in exactly one place,
and never retries: the engine owns retries. Transports are shared per process by target
(``shared``), so every client and task in an executor reuses one channel or pool.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Host", "SqlTransport", "Transport", "WireReply", "WireRequest", "host_of", "shared"]


@dataclass(frozen=True, slots=True)
class WireRequest:
    """One encoded request: a gRPC method or an HTTP path, and the body bytes."""

    method: str  # "/VectorService/Upsert", or "POST /vectors/upsert"
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()  # per-request extras; credentials live in the transport
    context: object = field(default=None, compare=False)  # what the backend built it with, for outcome_of
    # statuses (HTTP codes, gRPC status names) this request reads as a reply for ``outcome_of``, not an
    # error: a delete's 404 where the database says "nothing there" (Pinecone's empty namespace)
    answers: frozenset[int | str] = frozenset()

    def __repr__(self) -> str:
        return f"WireRequest({self.method}, {len(self.body)} bytes)"


@dataclass(frozen=True, slots=True)
class WireReply:
    body: bytes
    status: int | str = 200
    headers: dict[str, str] = field(default_factory=dict)


class Host:
    """One server address as this process knows it: whether it has ever answered, shared by every
    transport to that address, control and data calls alike (``host_of``).

    A host that answered once and now cannot be reached is most likely restarting: worth waiting
    for. One that never answered is a wrong address or a server that is not there: a write stops at
    once instead of retrying into the void. Any reply counts (an error status too: a server sent it);
    a refused or timed-out connection does not. A transport marks it when a reply arrives.
    """

    __slots__ = ("address", "answered")

    def __init__(self, address: str) -> None:
        self.address = address
        self.answered = False

    def __repr__(self) -> str:
        return f"Host({self.address}, answered={self.answered})"


_HOSTS: dict[str, Host] = {}
_HOSTS_LOCK = threading.Lock()


def host_of(address: str) -> Host:
    """The process-wide ``Host`` of ``address`` (``host:port``)."""
    key = address.lower()
    with _HOSTS_LOCK:
        found = _HOSTS.get(key)
        if found is None:
            found = _HOSTS[key] = Host(key)
        return found


class Transport(Protocol):
    @property
    def host(self) -> Host:
        """The server it talks to: has it answered (``Host``)."""
        ...

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply: ...

    def close(self) -> None: ...


@runtime_checkable
class SqlTransport(Transport, Protocol):
    """A transport that also runs SQL statements (PostgreSQL's): catalog look-ups, DDL, deletes."""

    def query(
        self, sql: str, params: tuple[Any, ...] = (), *, timeout_s: float = 30.0
    ) -> list[tuple[Any, ...]]: ...


T = TypeVar("T")
_SHARED: dict[Hashable, object] = {}
_SHARED_LOCK = threading.Lock()


def shared(key: Hashable, make: Callable[[], T]) -> T:
    """The process-wide instance for ``key``, made once: one channel or pool per target per process."""
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None:
            if not _SHARED:
                atexit.register(forget_shared)  # close channels and pools cleanly when the process ends
            found = _SHARED[key] = make()
        return found  # type: ignore[return-value]


def forget_shared() -> None:
    """Close and drop every shared transport (tests, and ``fork`` hygiene)."""
    with _SHARED_LOCK:
        items = list(_SHARED.values())
        _SHARED.clear()
    for item in items:
        close = getattr(item, "close", None)
        if close is not None:
            close()
