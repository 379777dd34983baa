"""Milvus's upsert reply (``MutationResult``): ``err_index`` fails exactly the rows it names, and an index
outside the request pins nothing on a row, so no unnamed row is counted as written either."""

from __future__ import annotations

import numpy as np
import pytest

from vectordb.connector.backends.milvus.backend import UPSERT, MilvusBackend, MilvusOptions
from vectordb.connector.backends.milvus.wire import Encoded
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import WireReply, WireRequest

milvus_pb2 = pytest.importorskip("pymilvus.grpc_gen.milvus_pb2")


def outcome(err_index: list[int], n: int = 4):  # type: ignore[no-untyped-def]
    backend = MilvusBackend(MilvusOptions(uri="milvus://127.0.0.1:19530/docs"))
    batch = RowBatch(ids=[f"r{i}" for i in range(n)], vectors=np.ones((n, 2), np.float32))
    request = WireRequest(UPSERT, b"", context=Encoded(body=b"", sent=n))
    reply = milvus_pb2.MutationResult(err_index=err_index, upsert_cnt=n - len(err_index))
    return backend.outcome_of(batch, request, WireReply(body=reply.SerializeToString()))


def test_err_index_fails_exactly_the_rows_it_names() -> None:
    result = outcome([3, 1])
    assert result.written == 2
    assert [f.ids for f in result.failures] == [("r1", "r3")]


@pytest.mark.parametrize("stray", [4, 99])
def test_an_index_outside_the_request_counts_no_unnamed_row_as_written(stray: int) -> None:
    result = outcome([1, stray])
    assert result.written == 0
    named, unattributed = result.failures
    assert named.ids == ("r1",)
    assert unattributed.ids == ("r0", "r2", "r3") and unattributed.error_type == "Unattributed"
    assert str(stray) in unattributed.error
