"""Weaviate over gRPC: a batch whose reply the server cannot send (its error text holds invalid UTF-8, so
gRPC answers INTERNAL "error while marshaling") is split like a refused one, against the real server
the fixtures start: the row at fault fails alone and the rows Weaviate stored are reported written.
The known cause, a metadata key that is no property name (auto-schema's refusal quotes it cut short),
fails its row before the batch is sent."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import TYPE_CHECKING

import grpc
import pytest

from vectordb.connector import connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits


@pytest.mark.parametrize("key", ["ключ", "été", "Größe", "has-dash", "k" * 232])
def test_a_metadata_key_that_is_no_property_name_fails_alone_before_weaviate_is_asked(
    weaviate_server: WeaviateServer, weaviate_collection: str, key: str
) -> None:
    """Without create=true, auto-schema refuses such a key, and its refusal of a non-ASCII one, quoting the
    key cut short, is no valid UTF-8: the batch came back INTERNAL. The row fails alone, never sent."""
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, create=True, **options) as client:  # the collection, with no properties yet
        assert client.write([{"id": "seed", "values": [1.0, 0.0, 0.0, 0.0]}]).ok
    rows = [
        {"id": f"good-{i}", "values": [1.0, 0.0, 0.0, float(i)], "metadata": {"title": f"t{i}"}}
        for i in range(4)
    ]
    rows.insert(2, {"id": "bad", "values": [1.0, 0.0, 0.0, 9.0], "metadata": {"title": "x", key: "v"}})
    with connect(uri, on_error="report", max_retries=5, **options) as client:
        report = client.write(rows)
    assert [f.ids for f in report.failures] == [("bad",)], report
    (failure,) = report.failures
    assert failure.error_type == "Invalid" and not failure.retryable and failure.attempts == 0, failure
    assert failure.error == (
        f"metadata key {key!r} is no Weaviate property name: ASCII letters, digits and underscores, "
        "starting with a letter or underscore, at most 231 long ([_A-Za-z][_0-9A-Za-z]{0,230})"
    )
    assert report.written == 4 and report.requests == 1 and report.retries == 0, report
    assert stored_ids(weaviate_server, weaviate_collection) == [
        "good-0",
        "good-1",
        "good-2",
        "good-3",
        "seed",
    ]


def test_the_longest_property_name_weaviate_takes_is_written(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    longest = "_" + "k" * 230
    with connect(uri, create=True, on_error="report", **options) as client:
        report = client.write([{"id": "a", "values": [1.0, 0.0, 0.0, 0.0], "metadata": {longest: "v"}}])
    assert report.ok, report
    [obj] = weaviate_server.rest("GET", f"/v1/objects?class={weaviate_collection}&limit=10").json()["objects"]
    assert obj["properties"][longest] == "v"


MARKED = (
    b"unsendable-reply"  # in a request's bytes: the relay answers as Weaviate does for a reply it cannot send
)


@contextmanager
def relay(target: str) -> Iterator[int]:
    """A gRPC server in front of Weaviate's: every call goes through, but one whose request holds
    ``MARKED`` is answered INTERNAL "error while marshaling", as grpc-go answers when Weaviate's reply
    cannot be encoded (so the test does not depend on which rows Weaviate, or the backend, refuses)."""
    channel = grpc.insecure_channel(target)

    def forward(request: bytes, context: grpc.ServicerContext, method: str) -> bytes:
        if MARKED in request:
            context.abort(
                grpc.StatusCode.INTERNAL, "grpc: error while marshaling: string field contains invalid UTF-8"
            )
        call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
        reply: bytes = call(request, timeout=30)
        return reply

    class Relay(grpc.GenericRpcHandler):
        def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
            method = details.method
            return grpc.unary_unary_rpc_method_handler(
                lambda request, context: forward(request, context, method)
            )

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[Relay()])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(None)
        channel.close()


def test_an_internal_marshaling_error_splits_the_batch_through_a_relay(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    uri = weaviate_server.uri(weaviate_collection)
    with connect(uri, create=True, **weaviate_server.options()) as client:
        assert client.write([{"id": "seed", "values": [1.0, 0.0, 0.0, 0.0]}]).ok
    rows = [
        {"id": f"good-{i}", "values": [1.0, 0.0, 0.0, float(i)], "metadata": {"title": f"t{i}"}}
        for i in range(4)
    ]
    rows.insert(1, {"id": "bad", "values": [1.0, 0.0, 0.0, 9.0], "metadata": {"title": MARKED.decode()}})
    with (
        relay(f"{weaviate_server.host}:{weaviate_server.grpc_port}") as port,
        connect(uri, on_error="report", max_retries=5, grpc_port=port) as client,
    ):
        report = client.write(rows)
    assert [f.ids for f in report.failures] == [("bad",)], report
    (failure,) = report.failures
    assert failure.error_type == "Rejected" and "INTERNAL" in failure.error, failure
    assert report.written == 4 and report.retries == 0, report
    assert stored_ids(weaviate_server, weaviate_collection) == [
        "good-0",
        "good-1",
        "good-2",
        "good-3",
        "seed",
    ]


def stored_ids(server: WeaviateServer, collection: str) -> list[str]:
    """The original ids of the collection's objects, sorted."""
    objects = server.rest("GET", f"/v1/objects?class={collection}&limit=100").json()["objects"]
    return sorted(o["properties"].get("original_id") for o in objects)
