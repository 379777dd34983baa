"""A unit handed to its sender just before the stream stopped was still sent: the sender checked the stop
only before a retry. Its first attempt now checks it too, and the unit fails as ``Stopped``, not sent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vectordb.connector.dispatch import Dispatcher
from vectordb.connector.errors import AuthError, ConnectorError, Rejected, SystemicRejection
from vectordb.connector.report import STOPPED


@dataclass
class _Counts:
    throttled: int = 0
    retries: int = 0


@dataclass
class _Recorded:
    """The channel of a dispatcher under test: records what is sent and how units end."""

    noun: str = "rows"
    whole: str = "write"
    sent: list[list[int]] = field(default_factory=list)
    ended: list[tuple[list[int], str, int, str | None]] = field(default_factory=list)
    counts_of: _Counts = field(default_factory=_Counts)

    def counts(self, unit: list[int]) -> _Counts:
        return self.counts_of

    @property
    def answered(self) -> bool:
        return True

    def send(self, unit: list[int]) -> object:
        self.sent.append(unit)
        return None

    def accepted(self, unit: list[int], outcome: Any) -> tuple[bool, ConnectorError | None]:
        return True, None

    def failed(
        self,
        unit: list[int],
        exc: ConnectorError,
        attempts: int,
        note: str = "",
        error_type: str | None = None,
    ) -> None:
        self.ended.append((unit, str(exc), attempts, error_type))

    def halves(self, unit: list[int]) -> tuple[list[int], list[int]]:
        return unit[: len(unit) // 2], unit[len(unit) // 2 :]

    def isolates(self, error: Rejected) -> bool:
        return True

    def probing(self, unit: list[int]) -> None:
        pass

    def systemic(self, count: int, error: Rejected) -> SystemicRejection:
        return SystemicRejection(str(error))


@dataclass
class _Settings:
    max_concurrency: int = 2
    max_retries: int = 2
    isolation_budget: float = 1.0
    timeout_s: float = 1.0


def test_a_unit_handed_on_just_before_a_stop_is_not_sent() -> None:
    channel = _Recorded()
    dispatcher: Dispatcher[list[int]] = Dispatcher(channel, _Settings())
    try:
        dispatcher.begin()
        assert dispatcher.take_slot()
        dispatcher.set_fatal(AuthError("HTTP 401: key revoked"))  # another unit's reply, meanwhile
        dispatcher.submit([1, 2, 3]).result(timeout=10)
    finally:
        dispatcher.close()
    assert channel.sent == []
    assert channel.ended == [([1, 2, 3], "HTTP 401: key revoked", 0, STOPPED)]
