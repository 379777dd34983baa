"""One write that names a point by two ids Qdrant stores as one (a text id and its UUIDv5, an integer
outside 0..2^64-1 and its UUIDv5) ends as its last occurrence says.

The rows' keys were the ids' own text, so "doc-1" and ``uuid5("doc-1")`` were two keys, went side by
side, and an upsert answered late won over the delete after it: the report said OK and the point stayed.
The project's Qdrant-protocol server answers upserts 0.5 s late here (REST and gRPC).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.backends.qdrant import QdrantBackend
from vectordb.connector.backends.weaviate.backend import WeaviateBackend
from vectordb.connector.ids import ID_NAMESPACE, as_uuid
from vectordb.connector.rows import types
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(120)


def uuid5(text: str) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, text))


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


PAIRS = {"text": ("doc-1", uuid5("doc-1")), "negative": (-1, uuid5("-1")), "big": (2**64, uuid5(str(2**64)))}


@pytest.mark.parametrize("first", ["upsert", "delete"])
@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_an_id_and_the_uuid_it_is_stored_under_go_in_input_order(
    server: QdrantServer, transport: str, pair: str, first: str
) -> None:
    collection = f"keyed_{transport}_{pair}_{first}"
    raw, stored = PAIRS[pair]
    with connect(server.uri(transport, collection), create=True, dimension=2) as client:
        assert client.upsert([{"id": 99, "values": [1.0, 2.0]}]).ok
    upsert: dict[str, Any] = {"values": [1.0, 2.0], "op": "upsert"}
    if first == "upsert":  # upsert by the raw id, delete by the UUID: the point must be gone
        rows = [{"id": raw, **upsert}, {"id": stored, "op": "delete"}]
    else:  # delete by the raw id, upsert by the UUID: the point must be there
        rows = [{"id": raw, "op": "delete"}, {"id": stored, **upsert}]
    server.script(delay_s=0.5)
    try:
        with connect(server.uri(transport, collection), op_column="op", max_concurrency=4) as client:
            report = client.write(rows)
    finally:
        server.script()
    assert report.ok and report.written == 2, report
    points = {str(k) for k in server.store.points(collection)}
    assert points == ({"99"} if first == "upsert" else {"99", stored})


@pytest.mark.parametrize("native", [True, False])
def test_keys_are_the_ids_as_stored(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Qdrant keeps an unsigned 64-bit integer as it is and stores any other id as its UUID; Weaviate
    stores every id as its UUID (an integer as its text's). With the native speedups and without."""
    if not native:
        monkeypatch.setattr(types, "_native_point_ids", lambda: None)
    ids: list[Any] = ["doc-1", uuid5("doc-1"), uuid5("doc-1").upper(), 7, "7", -1, uuid5("-1"), 2**64]
    assert QdrantBackend.rules.row_keys(ids) == [
        *[uuid5("doc-1")] * 3,
        7,
        uuid5("7"),
        uuid5("-1"),
        uuid5("-1"),
        uuid5(str(2**64)),
    ]
    assert WeaviateBackend.rules.row_keys(ids) == [
        *[uuid5("doc-1")] * 3,
        uuid5("7"),
        uuid5("7"),
        uuid5("-1"),
        uuid5("-1"),
        uuid5(str(2**64)),
    ]
    for rules in (QdrantBackend.rules, WeaviateBackend.rules):
        uuids = [uuid5(str(i)) for i in range(3)]
        assert rules.row_keys(uuids) is uuids  # canonical UUIDs: no copy
        assert [rules.row_keys([i])[0] for i in ids] == rules.row_keys(ids)  # a key depends on its id alone


@pytest.mark.parametrize(
    "ids",
    [
        [uuid5("a"), uuid5("b")[:-1]],  # one character short
        [uuid5("a") + "0", uuid5("b")[1:]],  # the lengths add up, the ids do not
        [uuid5("a").replace("-", "") + "----"],  # the hyphens elsewhere
        [uuid5("a")[:8] + "g" + uuid5("a")[9:]],  # no hyphen, and no hex digit, at 8
        [uuid5("a"), uuid5("b").upper()],
        ["-" * 36],
    ],
)
def test_only_canonical_uuids_are_their_own_keys(ids: list[str]) -> None:
    """The fast path (every id a canonical UUID: keys without a copy) takes nothing else."""
    for rules in (QdrantBackend.rules, WeaviateBackend.rules):
        assert rules.row_keys(ids) == [as_uuid(i) for i in ids]
    assert as_uuid(ids[-1]) != ids[-1]  # the last of each is no canonical UUID
