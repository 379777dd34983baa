"""One gRPC pool and one HTTP pool per target per process, whatever the number of clients."""

from __future__ import annotations

from vectordb.connector import connect


def test_clients_with_equal_targets_share_one_grpc_pool() -> None:
    with (
        connect("pinecone+grpc://127.0.0.1:7001", api_key="a") as one,
        connect("pinecone+grpc://127.0.0.1:7001", api_key="b") as two,
    ):
        assert one.engine.transport._pool is two.engine.transport._pool
    with connect("pinecone+grpc://127.0.0.1:7002") as other:
        assert other.engine.transport._pool is not one.engine.transport._pool


def test_clients_with_equal_targets_share_one_http_pool() -> None:
    with (
        connect("pinecone://127.0.0.1:7003") as one,
        connect("pinecone://127.0.0.1:7003", namespace="x") as two,
    ):
        assert one.engine.transport._pool.direct is two.engine.transport._pool.direct
        assert one.engine.transport._pool.direct is not None


def test_the_shared_http_pool_does_not_cap_a_later_client_with_more_concurrency() -> None:
    with connect("pinecone://127.0.0.1:7004", max_concurrency=2) as small:
        pool = small.engine.transport._pool.direct
        with connect("pinecone://127.0.0.1:7004", max_concurrency=64) as big:
            assert big.engine.transport._pool.direct is pool
    assert pool._max_idle >= 64  # connections kept open between requests: none is ever refused
