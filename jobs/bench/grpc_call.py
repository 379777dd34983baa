"""One gRPC unary call's CPU in the client, side by side: the connector's ``GrpcTransport`` (its own HTTP/2
connections, ``transports/http2.py``) and grpcio (a blocking ``unary_unary`` call on a channel, what the
connector used before and what the official Pinecone, Qdrant and Milvus clients use).

``python -m jobs.bench.grpc_call [--calls 2000] [--reps 5]``

Each sends the same bodies, one call at a time, to the no-op Pinecone gRPC sink (``jobs/bench/sinks.py``,
its own process, a grpcio server): a 1,000-id delete (11 KB) and a 100 × 768-d upsert (308 KB, a
Beam batch's request). Repetitions alternate between the two; each cell is the total over them of the
client process's user and system CPU (``getrusage``, grpcio's own threads included) a call, and the wall
time. One JSON line per cell with the machine, and grpcio's CPU as a multiple of ours.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vectordb.connector.redaction import Secrets
from vectordb.connector.transports.base import WireRequest
from vectordb.connector.transports.grpc import GrpcTransport

from .http_request import alternate
from .machine import code_version, environment
from .sinks import start_sink

__all__ = ["main"]

API_KEY = "k"


def bodies() -> dict[str, tuple[str, bytes]]:
    from vectordb.connector.backends.pinecone import encode_grpc
    from vectordb.connector.rows.types import RowBatch

    ids = b"".join(b"\x0a\x09id-%06d" % i for i in range(1000))  # DeleteRequest.ids
    vectors = np.random.default_rng(7).standard_normal((100, 768), dtype=np.float32)
    upsert = encode_grpc(RowBatch(ids=[f"id-{i}" for i in range(100)], vectors=vectors))
    return {
        "delete_1000_ids": ("/VectorService/Delete", ids),
        "upsert_100x768": ("/VectorService/Upsert", upsert),
    }


def senders(address: str, method: str, body: bytes) -> dict[str, Callable[[], None]]:
    import grpc

    transport = GrpcTransport(address, tls=False, secrets=Secrets(API_KEY), metadata=(("api-key", API_KEY),))
    request = WireRequest(method, body)

    def ours() -> None:
        transport.send(request, timeout_s=30.0)

    channel = grpc.insecure_channel(address, options=[("grpc.enable_retries", 0)])
    call = channel.unary_unary(method)
    metadata = (("api-key", API_KEY),)

    def by_grpcio() -> None:
        call.with_call(body, timeout=30.0, metadata=metadata, wait_for_ready=False)

    return {"http2": ours, "grpcio": by_grpcio}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="a repetition's calls of the small body")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    env = environment("vectordb-connector", "grpcio", "hpack")
    with start_sink("grpc") as sink:
        for name, (method, body) in bodies().items():
            count = args.calls if len(body) < 100_000 else max(1, args.calls // 4)
            sends = senders(sink.address, method, body)
            for send in sends.values():
                for _ in range(20):
                    send()  # warm-up: the connection, the channel
            totals = alternate(sends, count, args.reps)
            n = count * args.reps
            cpu = {who: (user + system) / n * 1e6 for who, (user, system, _) in totals.items()}
            for who, (user, system, wall) in totals.items():
                line: dict[str, Any] = {
                    "bench": "grpc_call",
                    "body": name,
                    "body_bytes": len(body),
                    "client": who,
                    "calls": n,
                    "user_us": round(user / n * 1e6, 1),
                    "system_us": round(system / n * 1e6, 1),
                    "cpu_us": round(cpu[who], 1),
                    "wall_us": round(wall / n * 1e6, 1),
                    "cpu_vs_http2": round(cpu[who] / cpu["http2"], 2),
                    "code": code_version(),
                    **env,
                }
                print(json.dumps(line))


if __name__ == "__main__":
    main()
