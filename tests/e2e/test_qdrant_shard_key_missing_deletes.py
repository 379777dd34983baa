"""Deletes and clears in a shard key the collection does not have delete nothing.

Qdrant refuses every update naming a shard key it does not have (``split_by_shard``: ``Wrong input: Shard
key us not found``), deletes included; the project's server checked upserts only. The client read that
refusal as the rows' failure: a delete of ids in a tenant never written failed row by row (or stopped the
write as ``SystemicRejection``) and ``clear("us")`` raised, where nothing to delete is no error.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import QDRANT_TRANSPORTS
from tests.servers.qdrant_grpc import QdrantServer
from tests.servers.qdrant_rest import QdrantError, QdrantStore
from vectordb.connector import connect
from vectordb.connector.errors import Rejected

pytestmark = pytest.mark.timeout(120)


def make(server: QdrantServer, transport: str, collection: str) -> None:
    """A custom-sharded collection with points 0..2 in shard key "eu"."""
    with connect(
        server.uri(transport, collection),
        create=True,
        dimension=2,
        namespace_mode="shard_key",
        namespace="eu",
    ) as client:
        assert client.upsert([{"id": i, "values": [1.0, 2.0]} for i in range(3)]).ok


def test_the_server_refuses_a_delete_in_a_shard_key_it_does_not_have(
    qdrant_module_server: QdrantServer,
) -> None:
    store = qdrant_module_server.store
    store.create_collection("sk_refuses", {"": (2, "Dot")}, set(), True)
    with pytest.raises(QdrantError, match=r'^Wrong input: Shard key "us" not found$'):
        store.delete_points("sk_refuses", [1], [], "us")
    with pytest.raises(QdrantError, match=r'^Wrong input: Shard key "us" not found$'):
        store.delete_points("sk_refuses", None, [], "us")


@pytest.mark.parametrize("transport", QDRANT_TRANSPORTS)
def test_deletes_and_clear_in_a_missing_shard_key_delete_nothing(
    qdrant_module_server: QdrantServer, transport: str
) -> None:
    collection = f"sk_missing_{transport}"
    make(qdrant_module_server, transport, collection)
    uri = qdrant_module_server.uri(transport, collection)
    with connect(uri, namespace_mode="shard_key", on_error="report") as client:
        report = client.delete(list(range(100)), namespace="us")
        assert report.ok and report.written == 100, report
        assert (
            client.clear("us") == f"no point (shard key 'us' does not exist) in {client.backend.describe()}"
        )
    # a change feed: upserts in "eu", deletes in "us"
    rows: list[dict[str, Any]] = [{"id": i, "values": [1.0, 2.0], "ns": "eu"} for i in range(10, 60)]
    rows += [{"id": 1000 + i, "ns": "us", "op": "delete"} for i in range(50)]
    with connect(
        uri, namespace_mode="shard_key", namespace_column="ns", op_column="op", on_error="report"
    ) as client:
        report = client.write(rows)
    assert report.ok and report.written == 100, report
    assert sorted(qdrant_module_server.store.points_by_shard(collection)) == [
        ("eu", i) for i in [0, 1, 2, *range(10, 60)]
    ]
    with connect(uri, namespace_mode="shard_key") as client:  # a key that exists is cleared as before
        assert client.delete([0], namespace="eu").ok
        client.clear("eu")
    assert qdrant_module_server.store.points_by_shard(collection) == {}


class OtherRefusal(QdrantStore):
    """Refuses every delete for another reason: that is still the rows' failure, in the transport's words."""

    def delete_points(self, collection: str, ids: Any, must: Any, shard_key: Any) -> None:
        raise QdrantError("bad_input", 'Wrong input: Shard key "us" not found in the moon phase')


@pytest.mark.parametrize("transport", QDRANT_TRANSPORTS)
def test_another_refusal_of_a_delete_is_still_an_error(transport: str) -> None:
    with QdrantServer(OtherRefusal()) as server:
        make(server, transport, "sk_other")
        uri = server.uri(transport, "sk_other")
        with connect(uri, namespace_mode="shard_key", on_error="report") as client:
            report = client.delete([1], namespace="us")
            where = client.backend.describe()
            with pytest.raises(Rejected) as raised:
                client.clear("us")
    status = "HTTP 400" if transport == "rest" else "INVALID_ARGUMENT"
    method = (
        "POST /collections/sk_other/points/delete?wait=true"
        if transport == "rest"
        else "/qdrant.Points/Delete"
    )
    message = f'{where} {method}: {status}: Wrong input: Shard key "us" not found in the moon phase'
    assert report.failed == 1 and [f.error for f in report.failures] == [message], report
    assert str(raised.value) == message
