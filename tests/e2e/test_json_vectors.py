"""REST bodies whose vectors hold any finite float32 bit pattern (subnormals, -0.0, the largest and the
smallest) are read by the official clients' own models, the Pinecone SDK's ``Vector`` and qdrant-client's
``PointsBatch`` / ``PointsList``, into the very same float32 bits, whichever writer wrote the vectors
(native or orjson). Chroma's JSON bodies go to a real server in ``tests/integration/test_chroma.py``."""

from __future__ import annotations

import hypothesis.strategies as st
import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from pinecone import Vector
from qdrant_client import models

from tests.float32_cases import ENCODERS, encoder, matrices
from vectordb.connector.backends import pinecone, qdrant
from vectordb.connector.ids import point_id
from vectordb.connector.rows import RowBatch


class PineconeUpsert(msgspec.Struct, rename="camel"):
    """``POST /vectors/upsert`` as the SDK's own ``Vector`` model reads it."""

    vectors: list[Vector]
    namespace: str = ""


def float32_bits(rows: list[list[float]]) -> np.ndarray:
    return np.array(rows, dtype=np.float64).astype(np.float32).view(np.uint32)


@pytest.mark.parametrize("name", ENCODERS)
@settings(max_examples=100, deadline=None)
@given(matrix=matrices(min_rows=1, max_rows=5, min_dim=1, max_dim=24), sparse=st.booleans())
def test_the_pinecone_sdk_reads_the_exact_float32s(name: str, matrix: np.ndarray, sparse: bool) -> None:
    n = len(matrix)
    batch = RowBatch(
        ids=[f"v-{i}" for i in range(n)],
        vectors=matrix,
        sparse=[(np.array([3], np.uint32), matrix[i, :1].copy()) for i in range(n)] if sparse else None,
        metadata=[{"row": i} for i in range(n)],
        namespace="ns",
    )
    with encoder(name):
        body = msgspec.json.decode(pinecone.encode_json(batch), type=PineconeUpsert)
    assert body.namespace == "ns"
    assert [v.id for v in body.vectors] == batch.ids
    assert np.array_equal(float32_bits([v.values for v in body.vectors]), matrix.view(np.uint32))
    assert [v.metadata for v in body.vectors] == batch.metadata
    if sparse:
        assert [v.sparse_values.indices for v in body.vectors] == [[3]] * n  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ENCODERS)
@pytest.mark.parametrize("vector_name", [None, "dense"])
@settings(max_examples=100, deadline=None)
@given(matrix=matrices(min_rows=1, max_rows=5, min_dim=1, max_dim=24))
def test_qdrant_client_reads_the_exact_float32s_in_a_batch(
    name: str, vector_name: str | None, matrix: np.ndarray
) -> None:
    options = qdrant.QdrantOptions(uri="qdrant://h/c", vector_name=vector_name)
    batch = RowBatch(ids=list(range(len(matrix))), vectors=matrix)
    with encoder(name):
        body = models.PointsBatch.model_validate_json(qdrant.encode_json(batch, options))
    vectors = body.batch.vectors
    dense = vectors[vector_name] if vector_name else vectors  # type: ignore[call-overload]
    assert np.array_equal(float32_bits(dense), matrix.view(np.uint32))  # type: ignore[arg-type]
    assert body.batch.ids == batch.ids


@pytest.mark.parametrize("name", ENCODERS)
@settings(max_examples=100, deadline=None)
@given(matrix=matrices(min_rows=1, max_rows=5, min_dim=1, max_dim=24))
def test_qdrant_client_reads_the_exact_float32s_in_a_point_list(name: str, matrix: np.ndarray) -> None:
    options = qdrant.QdrantOptions(uri="qdrant://h/c")
    n = len(matrix)
    sparse: list[tuple[np.ndarray, np.ndarray] | None] = [
        (np.array([1, 5], np.uint32), np.array([0.5, -0.0], np.float32))
    ] * n
    batch = RowBatch(ids=[f"doc-{i}" for i in range(n)], vectors=matrix, sparse=sparse)
    with encoder(name):
        body = models.PointsList.model_validate_json(qdrant.encode_json(batch, options))
    assert [str(p.id) for p in body.points] == [point_id(i) for i in batch.ids]
    dense = [p.vector[""] for p in body.points]  # type: ignore[index,call-overload]
    assert np.array_equal(float32_bits(dense), matrix.view(np.uint32))  # type: ignore[arg-type]
