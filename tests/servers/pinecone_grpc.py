"""A Pinecone-protocol gRPC test server: ``/VectorService/Upsert``, a fault script, an HTTP control API.

The method takes raw bytes (no deserializer) so every request's exact bytes are recorded,
then decodes them with the generated ``UpsertRequest`` class (proto/gen, the test oracle)
and replies with an encoded ``UpsertResponse{upserted_count}``. Faults map to Pinecone's
codes: ``INVALID_ARGUMENT`` rejected, ``UNAUTHENTICATED`` bad key, ``RESOURCE_EXHAUSTED``
throttled (trailing metadata ``grpc-retry-pushback-ms``), ``UNAVAILABLE`` unavailable. A request
that breaks Pinecone's limits (``pinecone_rules``) is ``INVALID_ARGUMENT``, as the REST server's 400.

A dropped request is answered ``UNAVAILABLE`` "Socket closed", what grpc-core clients report
when the connection is lost mid-call: a servicer cannot close the TCP connection, and closing it
would fail every call multiplexed on it rather than the one request. With the script's
``grpc_drop="cancel"`` the server cancels the stream instead (``RST_STREAM``; ``CANCELLED``).

The control API is the REST module's HTTP server with upserts switched off, on its own port.
``python -m tests.servers.pinecone_grpc --port 0`` prints ``PORT <n>`` (gRPC) and
``CONTROL <n>`` (HTTP) on stdout, then serves until SIGTERM.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn

import grpc
import numpy as np
from google.protobuf import json_format
from google.protobuf.message import DecodeError

from vectordb.connector.protowire import read_varint as _varint

from . import pinecone_rules as rules
from .pinecone_rest import PineconeRestServer, delete_problem, serve_until_signal, with_value_rules
from .script import (
    ECHO_HEADER,
    MAX_DELETE_IDS,
    ArrivedVector,
    Decoded,
    ServerState,
    echoed,
    serve_upsert,
)

GEN_DIR = Path(__file__).resolve().parents[2] / "proto" / "gen"
if str(GEN_DIR) not in sys.path:
    sys.path.insert(0, str(GEN_DIR))

import pinecone_upsert_pb2 as pb  # noqa: E402  (generated, found through GEN_DIR)

__all__ = ["GEN_DIR", "PineconeGrpcServer", "count_grpc", "decode_grpc", "main", "pb"]

SERVICE, METHOD = "VectorService", "Upsert"
# lenient: a message over Pinecone's 2 MB must reach the servicer, which refuses it as Pinecone words it
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

_CODES: dict[str, grpc.StatusCode] = {
    "rejected": grpc.StatusCode.INVALID_ARGUMENT,
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "throttled": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "over_quota": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "dropped": grpc.StatusCode.UNAVAILABLE,
}


def decode_grpc(body: bytes) -> Decoded:
    """An ``UpsertRequest`` as ``Decoded``; ``ValueError`` if the bytes do not parse."""
    try:
        request = pb.UpsertRequest.FromString(body)
    except DecodeError as exc:
        raise ValueError(f"UpsertRequest does not parse: {exc}") from None
    problem = rules.namespace_problem(request.namespace)
    if problem is not None:
        raise ValueError(problem)
    raw = _raw_values(body)
    if len(raw) != len(request.vectors):
        raise ValueError("UpsertRequest: vectors do not frame as the generated class parsed them")
    return Decoded(request.namespace, [_vector(v, r) for v, r in zip(request.vectors, raw, strict=True)])


def _vector(v: Any, raw_values: bytes) -> ArrivedVector:
    if len(raw_values) != 4 * len(v.values):  # framing disagrees with the oracle: trust the oracle
        raw_values = np.asarray(v.values, dtype="<f4").tobytes()
    indices = sparse_values = None
    if v.HasField("sparse_values"):
        indices = list(v.sparse_values.indices)
        sparse_values = np.asarray(v.sparse_values.values, dtype="<f4").tobytes()
    return ArrivedVector(
        id=v.id,
        values_f32=raw_values,
        sparse_indices=indices,
        sparse_values_f32=sparse_values,
        metadata=json_format.MessageToDict(v.metadata) if v.HasField("metadata") else None,
    )


def _raw_values(body: bytes) -> list[bytes]:
    """Each vector's float32 ``values`` bytes, sliced from the wire.

    Reading them through the generated class makes a Python float per element, 3x slower
    overall; ``_vector`` checks each length against the generated class's parse.
    """
    out = []
    for field, kind, start, end in _fields(body, 0, len(body)):
        if field == 1 and kind == 2:
            chunks = [body[a:b] for f, k, a, b in _fields(body, start, end) if f == 2 and k in (2, 5)]
            out.append(b"".join(chunks))  # packed chunks, or unpacked fixed32s, concatenate
    return out


def _fields(data: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, payload start, payload end) of each field in ``data[pos:end]``."""
    while pos < end:
        key, pos = _varint(data, pos)
        kind = key & 7
        if kind == 0:
            _, after = _varint(data, pos)
        elif kind == 1:
            after = pos + 8
        elif kind == 2:
            size, pos = _varint(data, pos)
            after = pos + size
        elif kind == 5:
            after = pos + 4
        else:
            raise ValueError(f"UpsertRequest: wire type {kind} is not used by this message")
        yield key >> 3, kind, pos, after
        pos = after


def count_grpc(body: bytes) -> int:
    """The noop count: the top-level ``vectors`` fields (1), framed but not decoded."""
    count = 0
    try:
        for field, _, _, _ in _fields(body, 0, len(body)):
            count += field == 1
    except (IndexError, ValueError):  # malformed: noop mode judges nothing
        pass
    return count


class PineconeGrpcServer:
    """The gRPC server (a thread pool) and its HTTP control server, both on 127.0.0.1."""

    def __init__(
        self,
        port: int = 0,
        state: ServerState | None = None,
        *,
        max_workers: int = 32,
        index: rules.IndexType | None = None,
    ) -> None:
        """``index``: the index's type, fixed from the start (``pinecone_rules.IndexType``); none: the
        dimension is learnt from the first dense row, and a fresh server reports none."""
        self.state = state or ServerState()
        self.index = index
        self._decode = with_value_rules(decode_grpc, index)
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc-upsert")
        handler = grpc.unary_unary_rpc_method_handler(self._upsert)  # no (de)serializers: raw bytes
        self._server = grpc.server(
            self._executor,
            handlers=[
                grpc.method_handlers_generic_handler(
                    SERVICE,
                    {
                        METHOD: handler,
                        "DescribeIndexStats": grpc.unary_unary_rpc_method_handler(self._stats),
                        "Delete": grpc.unary_unary_rpc_method_handler(self._delete),
                    },
                )
            ],
            options=[
                ("grpc.so_reuseport", 0),  # a fixed --port must not be shared with another server
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        self.port: int = self._server.add_insecure_port(f"127.0.0.1:{port}")
        if self.port == 0:
            raise OSError(f"gRPC test server cannot bind 127.0.0.1:{port}")
        self._control = PineconeRestServer(0, self.state, upserts=False)
        self.control_port = self._control.port

    def _upsert(self, body: bytes, context: grpc.ServicerContext) -> bytes:
        metadata = {m.key: m.value for m in context.invocation_metadata() if isinstance(m.value, str)}
        verdict = serve_upsert(
            self.state,
            body,
            headers=metadata,
            api_key=metadata.get("api-key"),
            decode=self._decode,
            count=count_grpc,
        )
        if verdict.outcome == "ok":
            return pb.UpsertResponse(upserted_count=verdict.upserted).SerializeToString()
        if verdict.cancel_stream:
            context.cancel()
            return b""
        trailing = self._echo_metadata(metadata)  # serve_upsert has put the key in the message
        if verdict.outcome in ("throttled", "over_quota"):
            trailing += (("grpc-retry-pushback-ms", str(round(verdict.retry_after_s * 1000))),)
        if trailing:
            context.set_trailing_metadata(trailing)
        context.abort(_CODES[verdict.outcome], verdict.message)
        raise AssertionError("unreachable: abort raises")

    def _stats(self, body: bytes, context: grpc.ServicerContext) -> bytes:
        metadata = {m.key: m.value for m in context.invocation_metadata() if isinstance(m.value, str)}
        fault, counts, dimension = self.state.describe(metadata.get("api-key"))
        if fault is not None:
            self._unauthenticated(metadata, context)
        reply = pb.DescribeIndexStatsResponse(dimension=dimension, total_vector_count=sum(counts.values()))
        if self.index is not None:  # a learning server reports no type: it has none until its first row
            reply.dimension = self.index.reported_dimension
            reply.metric, reply.vector_type = self.index.metric, self.index.vector_type
        for ns, n in counts.items():
            reply.namespaces[ns].vector_count = n
        return reply.SerializeToString()

    def _delete(self, body: bytes, context: grpc.ServicerContext) -> bytes:
        metadata = {m.key: m.value for m in context.invocation_metadata() if isinstance(m.value, str)}
        request = pb.DeleteRequest.FromString(body)
        problem = delete_problem(request.namespace, list(request.ids))
        if problem is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid request: {problem}")
        outcome = self.state.delete(
            metadata.get("api-key"), request.namespace, delete_all=request.delete_all, ids=list(request.ids)
        )
        if outcome == "unauthenticated":
            self._unauthenticated(metadata, context)
        if outcome == "not_found":
            context.abort(grpc.StatusCode.NOT_FOUND, "Namespace not found")
        if outcome == "invalid":
            message = f"Invalid request: ids must hold 1 to {MAX_DELETE_IDS} ids (or delete_all alone)"
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        return pb.DeleteResponse().SerializeToString()

    def _echo_metadata(self, metadata: dict[str, str]) -> tuple[tuple[str, str], ...]:
        """With the script's ``echo_key``, the request's key in the trailing metadata."""
        return ((ECHO_HEADER, metadata.get("api-key") or ""),) if self.state.script.echo_key else ()

    def _unauthenticated(self, metadata: dict[str, str], context: grpc.ServicerContext) -> NoReturn:
        message = "Invalid API key"
        if self.state.script.echo_key:
            message = echoed(message, metadata.get("api-key"))
            context.set_trailing_metadata(self._echo_metadata(metadata))
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        raise AssertionError("unreachable: abort raises")

    def start(self) -> PineconeGrpcServer:
        self._server.start()
        self._control.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=None).wait()
        self._executor.shutdown(wait=True)
        self._control.stop()

    def __enter__(self) -> PineconeGrpcServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="gRPC port on 127.0.0.1; 0 picks a free one")
    rules.add_index_arguments(parser)
    args = parser.parse_args(argv)
    with PineconeGrpcServer(args.port, index=rules.index_of(args)) as server:
        serve_until_signal(server.port, server.control_port)


if __name__ == "__main__":
    main()
