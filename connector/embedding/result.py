"""What embedding returns: chunks of vectors in input order, per-input failures, and the error that names them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from ..errors import EmbeddingFailed

__all__ = ["EmbedStats", "EmbeddedChunk", "EmbeddingFailed", "InputFailure"]


class InputFailure(msgspec.Struct, frozen=True, kw_only=True):
    """One input that could not be embedded: its position among all inputs, and why."""

    index: int
    error_type: str  # "Rejected", "Throttled", "DeadlineExceeded", "InvalidInput", "NotIsolated", ...
    message: str
    retryable: bool = False
    attempts: int = 0  # requests that carried this input; 0 = never sent


@dataclass(frozen=True, slots=True, eq=False)
class EmbeddedChunk:
    """The result of one input chunk: ``vectors[k]`` is the vector of input ``indices[k]``.

    ``indices`` are positions among all inputs of the stream (``offset`` is the chunk's first),
    increasing; inputs of the chunk that are not in ``indices`` are in ``failures``. When nothing
    has been embedded yet and ``dimensions`` was not given, ``vectors`` has 0 columns.
    """

    offset: int
    count: int
    indices: np.ndarray  # int64, (k,)
    vectors: np.ndarray  # float32, (k, d)
    failures: tuple[InputFailure, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failures

    def __repr__(self) -> str:
        return (
            f"EmbeddedChunk(inputs {self.offset}..{self.offset + self.count - 1}: "
            f"{len(self.indices)} embedded, {len(self.failures)} failed, d={self.vectors.shape[1]})"
        )


class EmbedStats(msgspec.Struct, kw_only=True):
    """Counters over a client's life: inputs, requests (retries and isolation included), failures."""

    inputs: int = 0
    embedded: int = 0
    failed: int = 0
    requests: int = 0
    retries: int = 0
    throttled: int = 0
    isolation_requests: int = 0
    bytes_received: int = 0
    encoding_format: str = "base64"


def describe_failures(
    failures: Sequence[InputFailure], total: int, *, reasons: int = 5, shown: int = 10
) -> str:
    """``"3 of 1000 inputs could not be embedded: inputs 4, 17: Rejected: …; input 900: …"``."""
    by_reason: dict[str, list[int]] = defaultdict(list)
    for failure in failures:
        by_reason[f"{failure.error_type}: {failure.message}"].append(failure.index)
    parts = []
    for reason, indices in list(by_reason.items())[:reasons]:
        named = ", ".join(map(str, indices[:shown])) + (
            f" and {len(indices) - shown} more" if len(indices) > shown else ""
        )
        parts.append(f"input{'s' if len(indices) > 1 else ''} {named}: {reason}")
    if len(by_reason) > reasons:
        parts.append(f"and {len(by_reason) - reasons} other reasons")
    return f"{len(failures)} of {total} inputs could not be embedded: " + "; ".join(parts)
