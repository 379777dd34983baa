"""Pinecone's documented limits, as every Pinecone test server enforces them: upserts (REST, gRPC) and imports.

The numbers are the connector's (``PineconeBackend.limits`` and ``.rules``): at most 1,000 vectors
and 2 MB a request, an id of 1 to 512 bytes, metadata of at most 40 KB a vector whose values are
strings, numbers, booleans or lists of strings (no nested object, no null), one dense dimension per
index (a dense index refuses a row with no dense vector: "Records with sparse vector values must also
contain dense vector values"), a dense vector with at least one non-zero value, and sparse indices
and values of equal length, at most 1,000 of them. Ids and namespaces are "ASCII except \\0", at most 512
characters (Pinecone's identifier limits; an id not empty). Each check returns the reason Pinecone gives,
worded as Pinecone words it: naming no row, so a client cannot lean on the message to find it, but for
the all-zero vector and the non-ASCII id, whose real messages name them. Where no message of the service's
own was found (a ``\\0`` in an id, a namespace), the official SDK's (10.2) wording stands in.

Null metadata values are refused (``'null'``), not stripped. The SDK's ``_validate_metadata`` (10.2) lets
``None`` through, saying the service strips nulls on write (``NullHandling::Strip`` in its prost
conversion); but Pinecone's documentation says "Null metadata values aren't supported. Instead of setting
a key to null, remove the key from the metadata payload" (known limitations), and the service answered
REST upserts holding one with 400 "Metadata value must be a string, number, boolean or list of strings,
got 'null' for field '...'" (quoted in run-llama/llama_index#11501, 2024, and
rocketride-org/rocketride-server#1991, 2026). The servers keep the refusal on both protocols:
stricter than a stripping server, so no test passes a client that sends a null Pinecone would refuse or
drop silently (the connector sends none: it leaves the key out). The SDK's own gRPC client leaves a null
key out before sending (the gRPC server stores ``{"tag": None, "keep": "x"}`` from it as ``{"keep": "x"}``),
so its REST client is the one that shows the service's answer.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

__all__ = [
    "MAX_ID_BYTES",
    "MAX_METADATA_BYTES",
    "MAX_NAMESPACE_LENGTH",
    "MAX_REQUEST_BYTES",
    "MAX_SPARSE_VALUES",
    "MAX_UPSERT_VECTORS",
    "SPARSE",
    "IndexType",
    "add_index_arguments",
    "count_problem",
    "dense",
    "dimension_problem",
    "id_problem",
    "index_arguments",
    "index_of",
    "index_problem",
    "metadata_problem",
    "metadata_size",
    "namespace_problem",
    "size_problem",
    "sparse_problem",
    "zero_problem",
]

MAX_UPSERT_VECTORS = 1000
MAX_REQUEST_BYTES = 2 << 20  # 2 MB
MAX_ID_BYTES = 512
MAX_METADATA_BYTES = 40_960
MAX_NAMESPACE_LENGTH = 512  # characters, each ASCII
MAX_SPARSE_VALUES = 1000  # "Sparse vectors can contain no more than 1000 non-zero values" (limits page)

# Pinecone's names for the kinds it refuses (null: why refused, not stripped, in the module docstring)
_KINDS = {dict: "object", type(None): "null"}


def size_problem(size: int) -> str | None:
    """A request body over 2 MB."""
    if size > MAX_REQUEST_BYTES:
        return f"Request size {size} bytes exceeds the maximum supported size of {MAX_REQUEST_BYTES} bytes"
    return None


def count_problem(count: int) -> str | None:
    """More than 1,000 vectors in one upsert."""
    if count > MAX_UPSERT_VECTORS:
        return f"Upsert request holds {count} vectors; the maximum is {MAX_UPSERT_VECTORS} per request"
    return None


def id_problem(vector_id: str) -> str | None:
    """An empty id, one over 512 bytes (UTF-8), one with a non-ASCII character (the service's message,
    which names it) or with ``\\0`` (the SDK's)."""
    if not vector_id:
        return "Vector ID must not be empty"
    size = len(vector_id.encode())
    if size > MAX_ID_BYTES:
        return f"Vector ID is {size} bytes; the maximum length is {MAX_ID_BYTES} bytes"
    if not vector_id.isascii():
        return f"ID must be ASCII, but got {vector_id}"
    if "\0" in vector_id:
        return "Vector ID must not contain null characters"
    return None


def namespace_problem(namespace: str) -> str | None:
    """A namespace over 512 characters, or with a non-ASCII character or ``\\0`` (the SDK's wording; no
    message of the service's own was found). ``""`` is the default namespace."""
    if len(namespace) > MAX_NAMESPACE_LENGTH:
        return f"Namespace must be at most {MAX_NAMESPACE_LENGTH} characters, got {len(namespace)}"
    if not namespace.isascii():
        return "Namespace must contain only ASCII characters (code points 1-127)"
    if "\0" in namespace:
        return "Namespace must not contain the NUL character"
    return None


def metadata_problem(metadata: Any) -> str | None:
    """Metadata that is not a flat object of strings, numbers, booleans and lists of strings, or over
    40 KB by ``metadata_size`` (numbers as the float64 they are: ``1.0`` counts as ``1``), whichever
    way it came (an upsert's JSON or Struct, an import's JSON text)."""
    if not isinstance(metadata, dict):
        return "Metadata must be a JSON object"
    size = metadata_size(metadata)
    if size > MAX_METADATA_BYTES:
        return (
            f"Metadata size is {size} bytes, which exceeds the limit of {MAX_METADATA_BYTES} bytes per vector"
        )
    for key, value in metadata.items():
        if isinstance(value, str | bool) or (isinstance(value, int | float) and math.isfinite(value)):
            continue
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            continue
        kind = _KINDS.get(type(value), type(value).__name__)
        if isinstance(value, float):
            kind = "non-finite number"
        elif isinstance(value, list):
            kind = "list holding a non-string"
        return (
            "Metadata value must be a string, number, boolean or list of strings, "
            f"got '{kind}' for field '{key}'"
        )
    return None


def metadata_size(metadata: dict[str, Any]) -> int:
    """Bytes of the metadata's compact JSON, each whole number written as an integer (``1``, not ``1.0``),
    however it arrived and at any depth: Pinecone's numbers are doubles (a ``google.protobuf.Struct``
    holds every number as one, which ``MessageToDict`` gives back as a float), so ``1`` and ``1.0`` are one
    value, of one size, over REST and gRPC. One measure for both servers, as Pinecone has one limit; the
    connector's own (``rows.checks.metadata_size``) is written apart and checked against this one."""
    return len(orjson.dumps(_whole(metadata)))


def _whole(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: _whole(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return list(map(_whole, value))
    return value


def sparse_problem(indices: list[int] | None, value_count: int) -> str | None:
    """Sparse indices and values of different lengths, or more than 1,000 of them (Pinecone documents the
    limit, not its message: this is the documented sentence with the count)."""
    if indices is not None and len(indices) != value_count:
        return "Sparse vector indices and values must have the same length"
    if indices is not None and len(indices) > MAX_SPARSE_VALUES:
        return (
            f"Sparse vector has {len(indices)} non-zero values; sparse vectors can contain no more than "
            f"{MAX_SPARSE_VALUES} non-zero values"
        )
    return None


def dimension_problem(dimension: int, index_dimension: int | None) -> str | None:
    """A dense vector whose length is not the index's (``None``: the index has none yet); a row with no
    dense vector (0) in a dense index too, as Pinecone words it: "Vector dimension 0 does not match"."""
    if index_dimension and dimension != index_dimension:
        return f"Vector dimension {dimension} does not match the dimension of the index {index_dimension}"
    return None


def zero_problem(vector_id: str, values_f32: bytes) -> str | None:
    """A dense vector of zeros only (an absent one is the dimension rule's); Pinecone's message names it."""
    if values_f32 and not np.frombuffer(values_f32, dtype="<f4").any():
        return (
            "Dense vectors must contain at least one non-zero value. "
            f"Vector ID '{vector_id}' contains only zeros"
        )
    return None


@dataclass(frozen=True)
class IndexType:
    """The index a server stands for, fixed when it starts as a Pinecone index is when created: dense with
    its dimension (``describe_index_stats`` reports it from the start, and rows of another length or with
    no dense vector are refused), or sparse (``dimension`` ``None``: reported as none, dense values
    refused). A server given none learns a dimension from its first dense row (the older test servers)."""

    dimension: int | None

    @property
    def reported_dimension(self) -> int:
        """``describe_index_stats``' dimension: 0 ("Not specified if sparse index")."""
        return self.dimension or 0

    @property
    def vector_type(self) -> str:
        """``describe_index_stats``' ``vectorType``, which tells a sparse index from a fresh learning server
        (both report dimension 0)."""
        return "sparse" if self.dimension is None else "dense"

    @property
    def metric(self) -> str:
        """``describe_index_stats``' ``metric``: Pinecone's default for a dense index, and the only metric a
        sparse index may have."""
        return "dotproduct" if self.dimension is None else "cosine"


SPARSE = IndexType(None)


def dense(dimension: int) -> IndexType:
    return IndexType(dimension)


def index_arguments(index: IndexType | None) -> list[str]:
    """The command-line arguments that start a server process as ``index`` (none: a learning server)."""
    if index is None:
        return []
    return ["--sparse"] if index.dimension is None else ["--dimension", str(index.dimension)]


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    """``--dimension N`` (a dense index) or ``--sparse``, as ``index_arguments`` gives them."""
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--dimension", type=int, help="a dense index of this dimension, from the start")
    kind.add_argument("--sparse", action="store_true", help="a sparse index (reports no dimension)")


def index_of(args: argparse.Namespace) -> IndexType | None:
    """The index ``add_index_arguments``' arguments name; none: the dimension is learnt from the first
    dense row."""
    if args.sparse:
        return SPARSE
    return None if args.dimension is None else dense(args.dimension)


def index_problem(index: IndexType | None, dense_values: int) -> str | None:
    """A row the index's type refuses: dense values in a sparse index, or, in a dense one, a dense vector of
    another length or none (``dense_values``: its length, 0 for none)."""
    if index is None:
        return None
    if index.dimension is None:
        return "Sparse index does not support dense values" if dense_values else None
    if dense_values != index.dimension:
        return f"Vector dimension {dense_values} does not match the dimension of the index {index.dimension}"
    return None
