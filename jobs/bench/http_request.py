"""One HTTP request's CPU in the client, side by side: the connector's ``http1.ConnectionPool``, ``httpx``
(its ``HTTPTransport``, which the connector used before) and the standard library's ``http.client``.

``python -m jobs.bench.http_request [--requests 1000] [--reps 5]``

Each sends the same bodies, one request at a time over one keep-alive connection, to the no-op Pinecone
REST sink (``jobs/bench/sinks.py``, its own process): a 1,000-id delete (12 KB, what a delete request
carries) and a 100 × 1536-d upsert (1.9 MB). Repetitions alternate between the three; each cell is the
total over them of the client process's user and system CPU (``getrusage``) a request, and the wall time.
One JSON line per cell with the machine, and the ratios of httpx and http.client to the pool.
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import time
from collections.abc import Callable, Sequence
from typing import Any

from vectordb.connector.redaction import Secrets
from vectordb.connector.transports.http1 import ConnectionPool, request_head

from .machine import code_version, environment
from .sinks import start_sink

__all__ = ["main"]

HEADERS = {"Api-Key": "k", "Content-Type": "application/json"}


def bodies() -> dict[str, tuple[str, bytes]]:
    delete = b'{"ids":[' + b",".join(b'"id-%06d"' % i for i in range(1000)) + b'],"namespace":""}'
    floats = b",".join([b"0.012345678"] * 1536)
    vectors = b",".join(b'{"id":"%d","values":[%s]}' % (i, floats) for i in range(100))
    return {
        "delete_1000_ids": ("/vectors/delete", delete),
        "upsert_100x1536": ("/vectors/upsert", b'{"vectors":[' + vectors + b"]}"),
    }


def senders(address: str, path: str, body: bytes) -> dict[str, Callable[[], None]]:
    import httpx

    host, _, port = address.rpartition(":")
    pool = ConnectionPool("http", host, int(port))
    head = request_head("POST", path, {"Host": address, **HEADERS})
    secrets = Secrets("k")

    def ours() -> None:
        pool.request(head, body, verb="POST", where=path, timeout_s=30.0, secrets=secrets)

    transport = httpx.HTTPTransport()
    url, headers = httpx.URL(f"http://{address}{path}"), httpx.Headers(HEADERS)

    def by_httpx() -> None:
        reply = transport.handle_request(httpx.Request("POST", url, headers=headers, content=body))
        reply.read()
        reply.close()

    conn = http.client.HTTPConnection(host, int(port), timeout=30.0)

    def by_http_client() -> None:
        conn.request("POST", path, body, HEADERS)
        conn.getresponse().read()

    return {"http1": ours, "httpx": by_httpx, "http.client": by_http_client}


def alternate(sends: dict[str, Callable[[], None]], count: int, reps: int) -> dict[str, list[float]]:
    """``count`` calls of each sender in turn, ``reps`` times: each one's total user and system CPU seconds
    of this process (``getrusage``: every thread's) and wall seconds."""
    totals = {who: [0.0, 0.0, 0.0] for who in sends}
    for _ in range(reps):
        for who, send in sends.items():
            before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            for _ in range(count):
                send()
            after = resource.getrusage(resource.RUSAGE_SELF)
            cell = totals[who]
            cell[0] += after.ru_utime - before.ru_utime
            cell[1] += after.ru_stime - before.ru_stime
            cell[2] += time.perf_counter() - wall
    return totals


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--requests", type=int, default=1000, help="a repetition's requests of the small body"
    )
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    env = environment("vectordb-connector", "httpx")
    with start_sink("rest") as sink:
        for name, (path, body) in bodies().items():
            count = args.requests if len(body) < 100_000 else max(1, args.requests // 10)
            sends = senders(sink.address, path, body)
            for send in sends.values():
                send()  # warm-up: the connection
            totals = alternate(sends, count, args.reps)
            n = count * args.reps
            cpu = {who: (user + system) / n * 1e6 for who, (user, system, _) in totals.items()}
            for who, (user, system, wall) in totals.items():
                line: dict[str, Any] = {
                    "bench": "http_request",
                    "body": name,
                    "body_bytes": len(body),
                    "client": who,
                    "requests": n,
                    "user_us": round(user / n * 1e6, 1),
                    "system_us": round(system / n * 1e6, 1),
                    "cpu_us": round(cpu[who], 1),
                    "wall_us": round(wall / n * 1e6, 1),
                    "cpu_vs_http1": round(cpu[who] / cpu["http1"], 2),
                    "code": code_version(),
                    **env,
                }
                print(json.dumps(line))


if __name__ == "__main__":
    main()
