"""Encoded size per row for backends whose rows are a dense vector, a sparse one and JSON-like metadata,
sent as protobuf (gRPC) or JSON (REST): Pinecone and Qdrant. Used to cut batches under a request size
limit, so it errs large, never small."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from ..rows import RowBatch, metadata_json_len
from ..rows.checks import metadata_json

__all__ = ["PROTO_VALUE_BYTES", "json_bytes_per_float", "proto_metadata_bytes", "row_bytes"]

# what a protobuf Value (a map entry or list item, with its framing) may take beyond its JSON text: a
# negative int64 is 13 bytes (Qdrant's integer=3: a tag and a 10-byte varint, in a 2-byte list item) for
# JSON's "-1,", a double 11 for "0," (google.protobuf.Value holds every number as one)
PROTO_VALUE_BYTES = 13


def row_bytes(batch: RowBatch, *, grpc: bool, fixed: int) -> np.ndarray:
    """Per row: the dense vector (float32 bytes exactly over gRPC; JSON measured on a sample), ``fixed``
    bytes of framing and names, sparse entries, and metadata (its JSON; over gRPC ``proto_metadata_bytes``,
    as a Struct's framing and 8-byte doubles make short values several times their JSON)."""
    n = len(batch)
    dense = 0.0
    if batch.vectors is not None and batch.vectors.size:
        dense = batch.vectors.shape[1] * (4 if grpc else json_bytes_per_float(batch.vectors))
    sizes = np.full(n, int(dense) + fixed, dtype=np.int64)
    if batch.sparse is not None:
        per_entry = 9 if grpc else 27
        sizes += np.fromiter((0 if s is None else len(s[0]) * per_entry for s in batch.sparse), np.int64, n)
    if batch.metadata is not None:
        size_of = proto_metadata_bytes if grpc else metadata_json_len
        sizes += np.fromiter((size_of(m) for m in batch.metadata), np.int64, n)
    return sizes


def proto_metadata_bytes(metadata: dict[str, Any] | None) -> int:
    """At least the bytes of ``metadata`` as a protobuf Struct (or Qdrant's payload map): its JSON, plus
    ``PROTO_VALUE_BYTES`` for each value it may hold. Every value but the first of a container follows a
    ``,``, every key is followed by a ``:`` and every container opens with ``[`` or ``{``, so counting those
    bytes outside strings counts every value and key (an empty container too: more, never fewer), without
    walking the rows. Marks inside strings are text: counting them made a JSON document kept as a string
    6 times its size. A string's framing (two tags and lengths, 12 bytes at most) is within its quotes and
    the 13 bytes of the mark before it."""
    if not metadata:
        return 0
    text = metadata_json(metadata)
    plain = text.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in text else text  # no \" ends a string
    # the quotes and marks alone, split at the quotes: the even parts are outside strings
    marks = len(b"".join(plain.translate(None, _NOT_QUOTE_OR_MARK).split(b'"')[::2]))
    return len(text) + PROTO_VALUE_BYTES * marks


_NOT_QUOTE_OR_MARK = bytes(sorted(set(range(256)) - set(b'",:[{')))


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
