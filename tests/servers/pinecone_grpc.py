"""A Pinecone-protocol gRPC test server: ``/VectorService/Upsert``, a fault script, an HTTP control API.

The method takes raw bytes (no deserializer) so every request's exact bytes are recorded,
then decodes them with the generated ``UpsertRequest`` class (proto/gen, the test oracle)
and replies with an encoded ``UpsertResponse{upserted_count}``. Faults map to Pinecone's
codes: ``INVALID_ARGUMENT`` rejected, ``UNAUTHENTICATED`` bad key, ``RESOURCE_EXHAUSTED``
throttled (trailing metadata ``grpc-retry-pushback-ms``), ``UNAVAILABLE`` unavailable.

A dropped request is cancelled from the server (an HTTP/2 ``RST_STREAM``): the client gets no
reply and sees ``CANCELLED``. Closing the TCP connection itself is not possible from grpcio's
servicer API, and would fail every call multiplexed on it rather than the one request.

The control API is the REST module's HTTP server with upserts switched off, on its own port.
``python -m tests.servers.pinecone_grpc --port 0`` prints ``PORT <n>`` (gRPC) and
``CONTROL <n>`` (HTTP) on stdout, then serves until SIGTERM.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from google.protobuf import json_format
from google.protobuf.message import DecodeError

from .pinecone_rest import PineconeRestServer, serve_until_signal
from .script import ArrivedVector, Decoded, ServerState, serve_upsert

GEN_DIR = Path(__file__).resolve().parents[2] / "proto" / "gen"
if str(GEN_DIR) not in sys.path:
    sys.path.insert(0, str(GEN_DIR))

import pinecone_upsert_pb2 as pb  # noqa: E402  (generated, found through GEN_DIR)

__all__ = ["GEN_DIR", "PineconeGrpcServer", "count_grpc", "decode_grpc", "main", "pb"]

SERVICE, METHOD = "VectorService", "Upsert"
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # lenient: the client under test, not grpcio, enforces Pinecone's 2 MB

_CODES: dict[str, grpc.StatusCode] = {
    "rejected": grpc.StatusCode.INVALID_ARGUMENT,
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "throttled": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "over_quota": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
}


def decode_grpc(body: bytes) -> Decoded:
    """An ``UpsertRequest`` as ``Decoded``; ``ValueError`` if the bytes do not parse."""
    try:
        request = pb.UpsertRequest.FromString(body)
    except DecodeError as exc:
        raise ValueError(f"UpsertRequest does not parse: {exc}") from None
    return Decoded(request.namespace, [_vector(v) for v in request.vectors])


def _vector(v: Any) -> ArrivedVector:
    indices = sparse_values = None
    if v.HasField("sparse_values"):
        indices = list(v.sparse_values.indices)
        sparse_values = np.asarray(v.sparse_values.values, dtype="<f4").tobytes()
    return ArrivedVector(
        id=v.id,
        values_f32=np.asarray(v.values, dtype="<f4").tobytes(),  # float32 on the wire: exact
        sparse_indices=indices,
        sparse_values_f32=sparse_values,
        metadata=json_format.MessageToDict(v.metadata) if v.HasField("metadata") else None,
    )


def count_grpc(body: bytes) -> int:
    """The noop count: walk the top-level fields and count field 1 (``vectors``) without decoding them."""
    count = pos = 0
    end = len(body)
    while pos < end:
        key, pos = _varint(body, pos)
        if key & 7 != 2:  # every top-level field of UpsertRequest is length-delimited
            break
        size, pos = _varint(body, pos)
        pos += size
        count += key >> 3 == 1
    return count


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


class PineconeGrpcServer:
    """The gRPC server (a thread pool) and its HTTP control server, both on 127.0.0.1."""

    def __init__(self, port: int = 0, state: ServerState | None = None, *, max_workers: int = 32) -> None:
        self.state = state or ServerState()
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc-upsert")
        handler = grpc.unary_unary_rpc_method_handler(self._upsert)  # no (de)serializers: raw bytes
        self._server = grpc.server(
            self._executor,
            handlers=[grpc.method_handlers_generic_handler(SERVICE, {METHOD: handler})],
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
            decode=decode_grpc,
            count=count_grpc,
        )
        if verdict.outcome == "ok":
            return pb.UpsertResponse(upserted_count=verdict.upserted).SerializeToString()
        if verdict.outcome == "dropped":
            context.cancel()
            return b""
        if verdict.outcome in ("throttled", "over_quota"):
            context.set_trailing_metadata(
                (("grpc-retry-pushback-ms", str(round(verdict.retry_after_s * 1000))),)
            )
        context.abort(_CODES[verdict.outcome], verdict.message)
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
    args = parser.parse_args(argv)
    with PineconeGrpcServer(args.port) as server:
        serve_until_signal(server.port, server.control_port)


if __name__ == "__main__":
    main()
