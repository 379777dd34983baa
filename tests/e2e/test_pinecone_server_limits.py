"""The Pinecone test servers refuse what Pinecone refuses, so no test can pass a client Pinecone would fail.

Each limit (``tests/servers/pinecone_rules.py``) is tried with a request just past it, refused whole
(REST 400 with Pinecone's error body, gRPC ``INVALID_ARGUMENT``) with a message naming no row (but the
all-zero vector's, which names it as Pinecone's does), and with a request at it, accepted. Requests are sent raw (HTTP, or the generated stubs), so nothing
on the client side can hold a wrong one back; one test sends them through the official SDK.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import orjson
import pytest
from google.protobuf import struct_pb2

from tests.servers import pinecone_rules as rules
from tests.servers.fixtures import ServerHandle, start_server
from tests.servers.pinecone_grpc import pb

DIM = 8

Reply = tuple[bool, str]  # (accepted, the refusal's message)


@pytest.fixture(params=["rest", "grpc"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(request.param) as handle:
        yield handle


def vector(vid: str, dim: int = DIM, **fields: Any) -> dict[str, Any]:
    """One vector in the REST JSON shape (``values``, ``sparseValues``, ``metadata``)."""
    return {"id": vid, "values": [0.5] * dim, **fields}


def upsert(server: ServerHandle, vectors: list[dict[str, Any]], namespace: str = "") -> Reply:
    """Send one upsert as it is, with no check on the client side; what the server answered."""
    if server.kind == "rest":
        body: dict[str, Any] = {"vectors": vectors}
        if namespace:
            body["namespace"] = namespace
        with httpx.Client(timeout=30) as client:
            reply = client.post(f"{server.url}/vectors/upsert", content=orjson.dumps(body))
        if reply.status_code == 200:
            return True, ""
        error = reply.json()
        assert (reply.status_code, error["code"], error["details"]) == (400, 3, []), reply.text
        return False, error["message"]
    request = pb.UpsertRequest(vectors=[_message(v) for v in vectors], namespace=namespace)
    with grpc.insecure_channel(server.host) as channel:
        try:
            channel.unary_unary("/VectorService/Upsert")(request.SerializeToString(), timeout=30)
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, exc
            return False, exc.details() or ""
    return True, ""


def _message(item: dict[str, Any]) -> Any:
    out = pb.Vector(id=item["id"], values=item.get("values", []))
    if "sparseValues" in item:
        out.sparse_values.indices.extend(item["sparseValues"]["indices"])
        out.sparse_values.values.extend(item["sparseValues"]["values"])
    if "metadata" in item:
        metadata = struct_pb2.Struct()
        metadata.update(item["metadata"])
        out.metadata.CopyFrom(metadata)
    return out


def refused(server: ServerHandle, vectors: list[dict[str, Any]], namespace: str = "") -> str:
    """The message of a refusal; it names no row, and nothing of the request is applied."""
    before = server.arrived().final
    accepted, message = upsert(server, vectors, namespace)
    assert not accepted, "the server accepted a request Pinecone refuses"
    assert not any(v["id"] and repr(v["id"]) in message for v in vectors), message
    assert server.arrived().final == before
    assert server.arrived().requests[-1].outcome == "rejected"
    return message


def accepted(server: ServerHandle, vectors: list[dict[str, Any]], namespace: str = "") -> None:
    ok, message = upsert(server, vectors, namespace)
    assert ok, message
    assert server.arrived().ids(namespace) >= {v["id"] for v in vectors}


def test_more_than_1000_vectors_a_request_are_refused(server: ServerHandle) -> None:
    too_many = [vector(f"v{i}", 2) for i in range(rules.MAX_UPSERT_VECTORS + 1)]
    assert "1001 vectors" in refused(server, too_many)
    accepted(server, too_many[:-1])


def test_a_request_over_2_mb_is_refused(server: ServerHandle) -> None:
    # 1,000 vectors of 600 floats: 2.4 MB as float32 (gRPC) and as "0.5," (REST); of 500, 2.0 MB
    message = refused(server, [vector(f"v{i}", 600) for i in range(1000)])
    assert "exceeds the maximum supported size of 2097152 bytes" in message
    assert server.arrived().requests[-1].size > rules.MAX_REQUEST_BYTES
    accepted(server, [vector(f"v{i}", 500) for i in range(1000)])
    assert 1_950_000 < server.arrived().requests[-1].size <= rules.MAX_REQUEST_BYTES


def test_an_id_over_512_bytes_or_empty_is_refused(server: ServerHandle) -> None:
    assert "513 bytes" in refused(server, [vector("a"), vector("x" * 513)])
    assert "514 bytes" in refused(server, [vector("é" * 257)])  # bytes, not characters
    assert "must not be empty" in refused(server, [vector("")])
    assert "ID must be ASCII, but got" in refused(server, [vector("é" * 256)])  # "ASCII except \0"
    accepted(server, [vector("x" * 512)])


def test_metadata_over_40_kb_is_refused(server: ServerHandle) -> None:
    def sized(size: int) -> dict[str, str]:
        metadata = {"t": "x" * (size - len('{"t":""}'))}
        assert len(orjson.dumps(metadata)) == size
        return metadata

    message = refused(server, [vector("a", metadata=sized(rules.MAX_METADATA_BYTES + 1))])
    assert "Metadata size is 40961 bytes" in message
    accepted(server, [vector("a", metadata=sized(rules.MAX_METADATA_BYTES))])


def test_metadata_of_whole_numbers_is_measured_alike_over_rest_and_grpc(server: ServerHandle) -> None:
    """A Struct holds every number as a double: counted as ``1.0`` the gRPC server refused 38,891 bytes of
    JSON (as the REST body and the client's 40 KB check count them) that the REST server accepts."""
    metadata = {f"k{i:04d}": i for i in range(3000)}
    size = len(orjson.dumps(metadata))
    assert 35_000 < size < rules.MAX_METADATA_BYTES < size + 3000 * 2  # over the limit if "i.0"
    accepted(server, [vector("a", metadata=metadata)])
    assert rules.metadata_size({"n": 1.0, "x": 1.5}) == len(b'{"n":1,"x":1.5}')


@pytest.mark.parametrize(
    ("value", "kind"),
    [({"inner": 1}, "object"), (None, "null"), ([1, 2], "list holding a non-string")],
    ids=["nested", "null", "list-of-numbers"],
)
def test_metadata_values_other_than_flat_kinds_are_refused(
    server: ServerHandle, value: Any, kind: str
) -> None:
    message = refused(server, [vector("a", metadata={"ok": "yes", "bad": value})])
    assert f"got '{kind}' for field 'bad'" in message
    flat = {"s": "text", "n": 3, "f": 0.25, "b": True, "l": ["x", "y"], "e": []}
    accepted(server, [vector("a", metadata=flat)])


def test_the_first_upsert_fixes_the_dimension_of_an_unscripted_index(server: ServerHandle) -> None:
    assert "Vector dimension 9 does not match the dimension of the index 8" in refused(
        server, [vector("a", 8), vector("b", 9)]
    )
    assert server.arrived().final == {}  # a refused request fixes nothing
    accepted(server, [vector("a", 8)])
    # the index has one dimension, whatever the namespace
    assert "Vector dimension 4 does not match" in refused(server, [vector("b", 4)], namespace="other")
    accepted(server, [vector("b", 8)], namespace="other")
    server.reset()  # a new index
    accepted(server, [vector("a", 4)])


def test_a_scripted_dimension_holds_from_the_first_upsert(server: ServerHandle) -> None:
    server.script(dimension=16)
    assert "Vector dimension 8 does not match the dimension of the index 16" in refused(server, [vector("a")])
    accepted(server, [vector("a", 16)])


def test_sparse_indices_and_values_of_different_lengths_are_refused(server: ServerHandle) -> None:
    bad = vector("a", sparseValues={"indices": [1, 2, 3], "values": [0.5, 0.25]})
    assert "same length" in refused(server, [bad])
    accepted(server, [vector("a", sparseValues={"indices": [1, 2], "values": [0.5, 0.25]})])


def test_a_sparse_vector_of_over_1000_values_is_refused(server: ServerHandle) -> None:
    def sparse(n: int) -> dict[str, list[Any]]:
        return {"indices": list(range(n)), "values": [0.5] * n}

    message = refused(server, [vector("a", sparseValues=sparse(rules.MAX_SPARSE_VALUES + 1))])
    assert "Sparse vector has 1001 non-zero values" in message
    assert "sparse vectors can contain no more than 1000 non-zero values" in message
    accepted(server, [vector("a", sparseValues=sparse(rules.MAX_SPARSE_VALUES))])


def test_a_dense_index_refuses_a_row_with_no_dense_vector(server: ServerHandle) -> None:
    # "Records with sparse vector values must also contain dense vector values"; Pinecone's reply:
    # 400 {"code":3,"message":"Vector dimension 0 does not match the dimension of the index 1536"}
    server.script(dimension=DIM)
    sparse_only = {"id": "s", "sparseValues": {"indices": [1, 2], "values": [0.5, 0.25]}}
    assert refused(server, [vector("a"), sparse_only]) == (
        f"Vector dimension 0 does not match the dimension of the index {DIM}"
    )
    assert refused(server, [{**sparse_only, "values": []}]).startswith("Vector dimension 0 does not match")
    accepted(server, [vector("a"), {**sparse_only, "values": [0.5] * DIM}])
    server.reset()  # an index that reports no dimension (as Pinecone's sparse index) takes it
    accepted(server, [sparse_only])


def test_an_all_zero_dense_vector_is_refused_naming_it(server: ServerHandle) -> None:
    # Pinecone's reply: 400 {"code":3,"message":"Dense vectors must contain at least one non-zero value.
    # Vector ID '…' contains only zeros"}, the one refusal here whose message names the row
    for zeros in ([0.0] * DIM, [-0.0] * DIM):
        ok, message = upsert(server, [vector("a"), {"id": "z", "values": zeros}])
        assert not ok and server.arrived().requests[-1].outcome == "rejected"
        assert message.endswith(
            "Dense vectors must contain at least one non-zero value. Vector ID 'z' contains only zeros"
        )
        assert server.arrived().final == {}
    accepted(server, [vector("a"), {"id": "z", "values": [0.0] * (DIM - 1) + [1e-30]}])


def test_scripted_anonymous_rejections_and_limit_refusals_name_no_row(server: ServerHandle) -> None:
    server.script(reject_ids={"secret-row"}, reject_named=False)
    assert refused(server, [vector("a"), vector("secret-row")]) == "Invalid vector: request rejected"
    refused(server, [vector("a"), vector("secret-row" * 60)])


def test_noop_mode_still_refuses_by_size_and_count(server: ServerHandle) -> None:
    server.script(noop=True)
    assert not upsert(server, [vector(f"v{i}", 2) for i in range(1001)])[0]
    assert not upsert(server, [vector(f"v{i}", 600) for i in range(1000)])[0]
    assert upsert(server, [vector(f"v{i}", 2) for i in range(1000)]) == (True, "")
    assert [r.outcome for r in server.arrived().requests] == ["rejected", "rejected", "ok"]


def test_the_official_sdk_sees_each_refusal_as_a_400(server: ServerHandle) -> None:
    sdk = pytest.importorskip("pinecone")
    from pinecone.errors import ApiError

    if server.kind == "rest":
        index = sdk.Pinecone(api_key="key").Index(host=server.url)
    else:
        grpc_sdk = pytest.importorskip("pinecone.grpc")
        index = grpc_sdk.PineconeGRPC(api_key="key", grpc_scheme="http").Index(host=server.host)
    wrong = [
        [("x" * 513, [0.5] * DIM)],
        [{"id": "a", "values": [0.5] * DIM, "metadata": {"t": "x" * rules.MAX_METADATA_BYTES}}],
        [("a", [0.5] * (DIM + 1))],
    ]
    try:
        index.upsert(vectors=[("first", [0.5] * DIM)], show_progress=False)
        for vectors in wrong:
            with pytest.raises(ApiError) as raised:
                index.upsert(vectors=vectors, show_progress=False)
            assert raised.value.status_code == 400
    finally:
        index.close()
    assert server.arrived().ids() == {"first"}
    assert [r.outcome for r in server.arrived().requests] == ["ok"] + ["rejected"] * len(wrong)


def test_the_client_holds_back_an_id_over_512_bytes_that_is_under_512_characters(
    server: ServerHandle,
) -> None:
    # Pinecone counts an id's UTF-8 bytes: 171 "€" are 171 characters and 513 bytes. The row fails
    # alone before sending, saying so (as one under 512 bytes fails for not being ASCII), and the good
    # rows go in one request (no isolation walk)
    from vectordb.connector import connect
    from vectordb.connector.transports.base import forget_shared

    rows = [vector("good-1"), vector("€" * 171), vector("€" * 170 + "ab"), vector("good-2")]
    try:
        with connect(server.uri, api_key="k", on_error="report", verify=False) as client:
            report = client.write(rows)
    finally:
        forget_shared()
    assert report.written == 2 and report.failed == 2
    over, not_ascii = sorted(report.failures, key=lambda f: f.positions)
    assert over.positions == (1,) and "513 bytes long in UTF-8; the limit is 512 bytes" in over.error
    assert not_ascii.positions == (2,) and "id holds a non-ASCII character" in not_ascii.error
    arrived = server.arrived()
    assert [r.outcome for r in arrived.requests] == ["ok"]
    assert arrived.ids() == {"good-1", "good-2"}
