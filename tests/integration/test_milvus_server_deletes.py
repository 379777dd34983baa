"""Deletes in a namespace through ``milvus://`` to a Milvus Lite server (``milvus-lite server``, or the
embedded one reached by its address): the server, not the URI, says whether a delete's partition_name
holds.

Milvus Lite deletes a key in every partition whatever partition_name says. The connector asked which
keys the partition holds only for a path or ``milvus+lite://`` URI, so through ``milvus://`` (which
the README points at a Lite server) a delete of X in namespace na took X from namespace nb too.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.milvus_server import LiteProcess
from vectordb.connector import connect
from vectordb.connector import protowire as pw
from vectordb.connector.errors import NotFound
from vectordb.connector.transports.base import WireReply, WireRequest

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

DIM = 3
GET_VERSION = "/milvus.proto.milvus.MilvusService/GetVersion"
OPTIONS: dict[str, Any] = {
    "create": True,
    "dimension": DIM,
    "op_column": "op",
    "namespace_column": "ns",
    "id_type": "varchar",
}


@pytest.fixture(scope="module")
def lite_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteProcess]:
    """``milvus-lite server``, as the README's ``milvus://`` example and the fault suite run it."""
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    process = LiteProcess(tmp_path_factory.mktemp("milvus-lite-server") / "data")
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(params=["milvus-lite server", "embedded server"])
def server_uri(
    request: pytest.FixtureRequest, milvus_lite: LiteServer, collection_name: str
) -> Iterator[tuple[str, Any]]:
    """A ``milvus://`` URI of a fresh collection on a Lite server, and a pymilvus client of that server."""
    if request.param == "embedded server":
        yield f"milvus://{milvus_lite.address}/{collection_name}", milvus_lite.client
        return
    from pymilvus import MilvusClient

    process: LiteProcess = request.getfixturevalue("lite_process")
    client = MilvusClient(uri=f"http://{process.address}")
    try:
        yield f"milvus://{process.address}/{collection_name}", client
    finally:
        if client.has_collection(collection_name):
            client.drop_collection(collection_name)
        client.close()


def by_partition(client: Any, collection: str, partitions: tuple[str, ...] = ("na", "nb")) -> dict[str, list]:
    client.load_collection(collection)
    return {
        p: sorted(
            (r["id"], r["seq"])
            for r in client.query(collection, filter="", output_fields=["id", "seq"], partition_names=[p])
        )
        for p in partitions
    }


def test_a_delete_in_one_namespace_keeps_the_id_in_another(server_uri: tuple[str, Any]) -> None:
    """X upserted in na, then in nb (Milvus keeps one row per id: it moves), then deleted in na: X stays
    in nb. Through milvus:// the delete went with partition_name na, which Lite ignores: X was lost."""
    uri, client = server_uri
    collection = uri.rsplit("/", 1)[1]
    with connect(uri, **OPTIONS) as c:
        assert c.upsert([{"id": "X", "values": [1.0] * DIM, "op": "upsert", "ns": "na", "seq": 1}]).ok
        assert c.upsert([{"id": "X", "values": [2.0] * DIM, "op": "upsert", "ns": "nb", "seq": 2}]).ok
        assert by_partition(client, collection) == {"na": [], "nb": [("X", 2)]}
        report = c.upsert([{"id": "X", "op": "delete", "ns": "na"}])
    assert report.ok, report
    assert by_partition(client, collection) == {"na": [], "nb": [("X", 2)]}
    # the same three rows in one write (one row per request, in input order)
    with connect(uri, **OPTIONS, batch_size=1) as c:
        report = c.upsert(
            [
                {"id": "Y", "values": [1.0] * DIM, "op": "upsert", "ns": "na", "seq": 3},
                {"id": "Y", "values": [2.0] * DIM, "op": "upsert", "ns": "nb", "seq": 4},
                {"id": "Y", "op": "delete", "ns": "na"},
            ]
        )
    assert report.ok, report
    assert by_partition(client, collection) == {"na": [], "nb": [("X", 2), ("Y", 4)]}


def test_duplicates_and_deletes_in_two_namespaces_end_as_the_last_row_says(
    lite_process: LiteProcess, collection_name: str
) -> None:
    """The reviewer's mix at a smaller scale on ``milvus-lite server``: ids repeated over two namespaces,
    a fifth of the rows deletes, six requests in flight. A row's last upsert decides where it lives; a
    delete removes it only from its own namespace. Before the fix ids deleted in the other namespace went
    missing while the report said every row was written."""
    from pymilvus import MilvusClient

    rng = random.Random(9)  # fixed: the rows below hold ids whose last row is such a delete
    n, n_ids = 400, 100
    data = []
    for i in range(n):
        row: dict[str, Any] = {"id": f"id{rng.randrange(n_ids)}", "ns": rng.choice(["na", "nb"]), "seq": i}
        if rng.random() < 0.2:
            row["op"] = "delete"
        else:
            row.update(op="upsert", values=[float(i % 50 + 1), 1.0, 2.0])
        data.append(row)
    uri = f"milvus://{lite_process.address}/{collection_name}"
    with connect(uri, **OPTIONS, batch_size=9, max_concurrency=6, on_error="report") as c:
        report = c.upsert(data)
    assert report.ok and report.written == n, report
    expected: dict[str, tuple[str, int]] = {}  # id -> (namespace, seq) of the row Milvus should hold
    kept = set()  # ids whose last row is a delete in the namespace they do not live in
    for row in data:
        if row["op"] == "upsert":
            expected[row["id"]] = (row["ns"], row["seq"])
            kept.discard(row["id"])
        elif expected.get(row["id"], ("", 0))[0] == row["ns"]:
            del expected[row["id"]]
        elif row["id"] in expected:
            kept.add(row["id"])
    assert len(kept) >= 5, kept  # the case at fault: each of these was lost
    client = MilvusClient(uri=f"http://{lite_process.address}")
    try:
        stored = by_partition(client, collection_name)
        got = {row_id: (ns, seq) for ns, found in stored.items() for row_id, seq in found}
        assert sum(len(found) for found in stored.values()) == len(got)  # one row per id
        assert got == expected
    finally:
        if client.has_collection(collection_name):
            client.drop_collection(collection_name)
        client.close()


def version_reply(version: str) -> WireReply:
    """GetVersionResponse{status=1 (code 0), version=2}."""
    return WireReply(body=pw.len_field(1, b"") + pw.string_field(2, version))


@pytest.mark.parametrize(
    ("answer", "asks_first"),
    [
        ("v2.6.3", False),  # Milvus: partition_name holds, the Delete names the partition and goes as is
        ("milvus_lite-3.2.2", True),  # Milvus Lite 3 (what its servicer answers)
        (None, True),  # Milvus Lite 2.4/2.5 (C++) has no GetVersion: UNIMPLEMENTED
    ],
)
def test_the_servers_version_decides_whether_a_delete_asks_what_the_partition_holds(
    milvus_lite: LiteServer, collection_name: str, answer: str | None, asks_first: bool
) -> None:
    """The same Lite server answering GetVersion as each kind of server would (the other calls are its
    own): only a server that names a Milvus version gets the plain Delete in the partition; any other
    answer costs a Query per delete batch and keeps other namespaces' rows."""
    uri = f"milvus://{milvus_lite.address}/{collection_name}"
    seed = [
        {"id": "Z", "values": [1.0] * DIM, "op": "upsert", "ns": "na", "seq": 0},
        {"id": "X", "values": [1.0] * DIM, "op": "upsert", "ns": "nb", "seq": 1},
    ]
    with connect(uri, **OPTIONS) as c:
        assert c.upsert(seed).ok
    with connect(uri, **OPTIONS) as c:
        transport = c.engine.transport
        send = transport.send
        methods: list[str] = []

        def scripted(request: WireRequest, *, timeout_s: float) -> WireReply:
            methods.append(request.method.rsplit("/", 1)[1])
            if request.method == GET_VERSION:
                if answer is None:
                    raise NotFound("milvus: UNIMPLEMENTED: Method not found!", status="UNIMPLEMENTED")
                return version_reply(answer)
            return send(request, timeout_s=timeout_s)

        transport.send = scripted  # type: ignore[method-assign]
        assert c.upsert([{"id": "X", "op": "delete", "ns": "na"}]).ok
    assert "GetVersion" in methods, methods
    deleting = methods[methods.index("GetVersion") :]
    assert ("Query" in deleting) is asks_first, methods
    if asks_first:
        assert by_partition(milvus_lite.client, collection_name) == {"na": [("Z", 0)], "nb": [("X", 1)]}
    else:
        assert deleting[-1] == "Delete", methods
