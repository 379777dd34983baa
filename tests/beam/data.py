"""Deterministic records for the Beam tests, generated inside pipelines (so Beam workers import this module).

A pipeline starts from shard numbers (``beam.Create(range(shards))``) and expands each into
``PER_SHARD`` records: this keeps the element data out of the pickled pipeline, and the test
process recomputes exactly what it expects with ``expected``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

DIM = 16
PER_SHARD = 1000


def shard_vectors(shard: int) -> np.ndarray:
    return np.random.default_rng(1000 + shard).standard_normal((PER_SHARD, DIM)).astype(np.float32)


def record_id(shard: int, i: int) -> str:
    return f"s{shard}-{i}"


def records(shard: int) -> Iterator[dict[str, Any]]:
    """The shard's records: id, a float32 numpy vector, and two metadata fields."""
    vectors = shard_vectors(shard)
    for i in range(PER_SHARD):
        yield {"id": record_id(shard, i), "values": vectors[i], "shard": shard, "title": f"doc {shard}/{i}"}


def expected(shards: int) -> dict[str, tuple[bytes, dict[str, Any]]]:
    """id → (the vector's float32 bytes, the metadata) for every record of ``shards`` shards."""
    out = {}
    for shard in range(shards):
        vectors = shard_vectors(shard)
        for i in range(PER_SHARD):
            out[record_id(shard, i)] = (vectors[i].tobytes(), {"shard": shard, "title": f"doc {shard}/{i}"})
    return out


def rejected_ids(shards: int, every: int = 997) -> frozenset[str]:
    """A spread of ids for a server to reject."""
    total = shards * PER_SHARD
    return frozenset(record_id(n // PER_SHARD, n % PER_SHARD) for n in range(13, total, every))
