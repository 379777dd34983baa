"""One gRPC channel and one HTTP pool per target per process, whatever the number of clients."""

from __future__ import annotations

from vectordb.connector import connect


def test_clients_with_equal_targets_share_one_channel() -> None:
    with (
        connect("pinecone+grpc://127.0.0.1:7001", api_key="a") as one,
        connect("pinecone+grpc://127.0.0.1:7001", api_key="b") as two,
    ):
        assert one.engine.transport._channel is two.engine.transport._channel
    with connect("pinecone+grpc://127.0.0.1:7002") as other:
        assert other.engine.transport._channel is not one.engine.transport._channel


def test_clients_with_equal_targets_share_one_http_pool() -> None:
    with (
        connect("pinecone://127.0.0.1:7003") as one,
        connect("pinecone://127.0.0.1:7003", namespace="x") as two,
    ):
        assert one.engine.transport._client is two.engine.transport._client
