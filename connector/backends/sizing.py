"""Encoded size per row for backends whose rows are a dense vector, a sparse one and JSON-like metadata,
sent as protobuf (gRPC) or JSON (REST): Pinecone and Qdrant. Used to cut batches under a request size
limit, so it errs large, never small."""

from __future__ import annotations

import numpy as np
import orjson

from ..rows import RowBatch, metadata_json_len

__all__ = ["json_bytes_per_float", "row_bytes"]


def row_bytes(batch: RowBatch, *, grpc: bool, fixed: int) -> np.ndarray:
    """Per row: the dense vector (float32 bytes exactly over gRPC; JSON measured on a sample), ``fixed``
    bytes of framing and names, sparse entries, and metadata (protobuf's Struct framing can double small
    values)."""
    n = len(batch)
    dense = 0.0
    if batch.vectors is not None and batch.vectors.size:
        dense = batch.vectors.shape[1] * (4 if grpc else json_bytes_per_float(batch.vectors))
    sizes = np.full(n, int(dense) + fixed, dtype=np.int64)
    if batch.sparse is not None:
        per_entry = 9 if grpc else 27
        sizes += np.fromiter((0 if s is None else len(s[0]) * per_entry for s in batch.sparse), np.int64, n)
    if batch.metadata is not None:
        factor = 2 if grpc else 1
        sizes += np.fromiter((metadata_json_len(m) * factor for m in batch.metadata), np.int64, n)
    return sizes


def json_bytes_per_float(matrix: np.ndarray) -> float:
    """JSON bytes per float32 in these rows, from up to 16 rows spread over the batch, with a 3 % margin.

    Shortest float32 reprs take 2 to 15 characters; assuming the worst would cut requests to two
    thirds of what the size limit allows.
    """
    step = max(1, len(matrix) // 16)
    sample = np.ascontiguousarray(matrix[::step][:16])
    if not sample.size:
        return 15.0
    return 1.03 * len(orjson.dumps(sample, option=orjson.OPT_SERIALIZE_NUMPY)) / sample.size
