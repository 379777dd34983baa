"""Backend-neutral records for dict and Beam input, and for tests.

The hot path never builds these: Arrow and numpy input goes straight to ``rows.RowBatch``.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["SparseVector", "VectorRecord"]


class SparseVector(msgspec.Struct, frozen=True):
    indices: list[int]
    values: list[float]


class VectorRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    values: list[float] | None = None
    sparse_values: SparseVector | None = None
    metadata: dict[str, Any] = {}
    namespace: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The dict form ``Client.upsert`` accepts."""
        return msgspec.to_builtins(self)
