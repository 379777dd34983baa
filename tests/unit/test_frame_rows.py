"""``protowire.frame_rows``, by the native speedups and in Python alike: the same bytes for any rows (heads,
tails, any float32 bit pattern, no rows, no columns, field numbers past one byte), and Pinecone's upsert
requests framed with it decode, by the generated classes (the oracle), to the message of the rows."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pinecone_upsert_pb2 as pb
import pytest
from hypothesis import given, settings

from vectordb.connector import protowire as pw
from vectordb.connector.backends.pinecone import encode_grpc
from vectordb.connector.rows import RowBatch

PATHS = ["native", "python"]


@contextlib.contextmanager
def path(name: str) -> Iterator[None]:
    if name == "native" and pw._native_frame_rows is None:
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    saved = pw._native_frame_rows
    if name == "python":
        pw._native_frame_rows = None
    try:
        yield
    finally:
        pw._native_frame_rows = saved


@st.composite
def framings(draw: st.DrawFn) -> tuple[int, list[bytes], bytes, np.ndarray, list[bytes] | None, bytes, bytes]:
    rows = draw(st.integers(0, 6))
    dim = draw(st.integers(0, 40))
    matrix = draw(hnp.arrays(np.uint32, (rows, dim))).view(np.float32)  # any bit pattern, NaN included
    small = st.binary(max_size=200)
    heads = draw(st.lists(small, min_size=rows, max_size=rows))
    tails = draw(st.none() | st.lists(small, min_size=rows, max_size=rows))
    field = draw(st.sampled_from([1, 3, 15, 16, 127, 128, 2**29 - 1]))
    return field, heads, draw(small), matrix, tails, draw(small), draw(small)


@settings(max_examples=300, deadline=None)
@given(case=framings())
def test_native_and_python_frame_the_same_bytes(case: tuple) -> None:
    if pw._native_frame_rows is None:
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    field, heads, vector_head, matrix, tails, prefix, suffix = case
    with path("native"):
        native = pw.frame_rows(field, heads, vector_head, matrix, tails, prefix, suffix)
    with path("python"):
        python = pw.frame_rows(field, heads, vector_head, matrix, tails, prefix, suffix)
    assert native == python
    # and what that is: each row a length-delimited field around its head, vector and tail
    rows = [value for number, _, value in pw.read_fields(native[len(prefix) : len(native) - len(suffix)])]
    assert native.startswith(prefix) and native.endswith(suffix) and len(rows) == len(heads)
    for i, row in enumerate(rows):
        tail = b"" if tails is None else tails[i]
        assert bytes(row) == heads[i] + vector_head + matrix[i].astype("<f4").tobytes() + tail


@pytest.mark.parametrize("name", PATHS)
@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.text(min_size=1, max_size=140), min_size=1, max_size=5, unique=True),
    dim=st.sampled_from([1, 4, 768, 1536]),
    namespace=st.none() | st.text(min_size=1, max_size=10),
)
def test_pinecone_requests_decode_to_their_rows(
    name: str, ids: list[str], dim: int, namespace: str | None
) -> None:
    matrix = np.random.default_rng(len(ids)).standard_normal((len(ids), dim)).astype(np.float32)
    batch = RowBatch(ids=ids, vectors=matrix, namespace=namespace)
    with path(name):
        body = encode_grpc(batch)
    want = pb.UpsertRequest(namespace=namespace or "")
    for row_id, row in zip(ids, matrix, strict=True):
        want.vectors.add(id=row_id, values=row.tolist())
    assert body == want.SerializeToString(deterministic=True)


@pytest.mark.parametrize("name", PATHS)
def test_a_head_for_each_row(name: str) -> None:
    with path(name), pytest.raises(ValueError, match="one head"):
        pw.frame_rows(1, [b"a"], b"", np.zeros((2, 3), np.float32))
