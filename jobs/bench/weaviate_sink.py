"""A no-op Weaviate-protocol sink for benchmarks: gRPC ``BatchObjects`` counted and dropped, REST for the schema.

``python -m jobs.bench.weaviate_sink`` serves on 127.0.0.1 (free ports; it prints ``REST <port>`` and
``GRPC <port>``) until SIGTERM, in its own process, so its CPU never competes with the GIL of the
client being measured. What it answers is what weaviate-client v4 (``connect_to_custom``,
``collections.create``, ``collection.batch.fixed_size``) and this connector's Weaviate backend ask
for to connect and write:

- gRPC ``/weaviate.v1.Weaviate/BatchObjects``: the ``objects`` fields (1) of the
  ``BatchObjectsRequest`` are counted by their framing, never decoded, and the reply is an empty
  ``BatchObjectsReply`` (no errors: every object "written"); ``/grpc.health.v1.Health/Check``
  answers SERVING.
- Deletes by id, counted and answered as weaviate-server answers when every object named is there
  (the sink stores nothing; a benchmark deletes ids it takes as written), at most
  ``QUERY_MAXIMUM_RESULTS`` (10,000) objects a request, as the server: gRPC
  ``/weaviate.v1.Weaviate/BatchDelete`` (weaviate-client's ``data.delete_many``) with a filter
  ``ContainsAny`` on the id, its ``BatchDeleteReply{took, failed, matches, successful}``; REST
  ``DELETE /v1/batch/objects`` (this connector) with ``where`` ``{"path": ["id"], "operator":
  "ContainsAny", "valueTextArray": [...]}``, its ``BatchDeleteResponse`` (``match``, ``output``,
  ``dryRun``, ``results``). A filter of another shape matches nothing.
- REST ``/v1/meta`` (version 1.35.2, the server the other benchmarks run), ``/v1/.well-known/ready``
  and ``live``, ``/v1/nodes``, and the schema: ``POST /v1/schema`` keeps the class, ``GET`` and
  ``DELETE /v1/schema/{Class}``, ``POST /v1/schema/{Class}/properties``. A class is answered in the
  shape weaviate-server 1.35.2 gives (its defaults for the index, sharding and replication, taken from
  that server), so the official client's ``config.get`` reads it. ``GET /v1/objects`` lists nothing:
  the sink stores no object, so the connector learns the dimension from its data. Any other path
  answers 501 and is named on stderr, so a client needing more fails loudly instead of being
  misled.

Counters (``GET /_stats``, JSON): gRPC batch requests, objects, body bytes, delete requests and the
objects they deleted, and the sink's own CPU seconds. ``start_sink()`` starts the process and yields a ``WeaviateSink`` with the same fields a
benchmark uses of a real server (``uri``, ``grpc_port``, ``client()``, ``rest()``, ``pid``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from vectordb.connector.protowire import read_fields as _read_fields
from vectordb.connector.protowire import read_varint as _varint

from ..processes import stop_process

__all__ = ["SinkStats", "WeaviateSink", "count_objects", "main", "start_sink"]

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parents[2]  # `python -m jobs.bench.weaviate_sink` runs from here
VERSION = "1.35.2"
MAX_MESSAGE_BYTES = 104_858_000  # weaviate-server's GRPC_MAX_MESSAGE_SIZE default
HEALTH_SERVING = b"\x08\x01"  # grpc.health.v1.HealthCheckResponse{status=SERVING}
QUERY_MAXIMUM_RESULTS = 10_000  # weaviate-server's default: the most objects one batch delete removes
CONTAINS_ANY = 12  # weaviate.v1.Filters.Operator.OPERATOR_CONTAINS_ANY

# What weaviate-server 1.35.2 answers for a class beyond what was asked (GET /v1/schema/{Class}).
CLASS_DEFAULTS: dict[str, Any] = {
    "invertedIndexConfig": {
        "bm25": {"b": 0.75, "k1": 1.2},
        "cleanupIntervalSeconds": 60,
        "stopwords": {"additions": None, "preset": "en", "removals": None},
        "usingBlockMaxWAND": True,
    },
    "multiTenancyConfig": {"autoTenantActivation": False, "autoTenantCreation": False, "enabled": False},
    "replicationConfig": {"asyncEnabled": False, "deletionStrategy": "NoAutomatedResolution", "factor": 1},
    "shardingConfig": {
        "actualCount": 1,
        "actualVirtualCount": 128,
        "desiredCount": 1,
        "desiredVirtualCount": 128,
        "function": "murmur3",
        "key": "_id",
        "strategy": "hash",
        "virtualPerPhysical": 128,
    },
}
HNSW_DEFAULTS: dict[str, Any] = {
    "bq": {"enabled": False},
    "cleanupIntervalSeconds": 300,
    "distance": "cosine",
    "dynamicEfFactor": 8,
    "dynamicEfMax": 500,
    "dynamicEfMin": 100,
    "ef": -1,
    "efConstruction": 128,
    "filterStrategy": "acorn",
    "flatSearchCutoff": 40000,
    "maxConnections": 32,
    "multivector": {
        "aggregation": "maxSim",
        "enabled": False,
        "muvera": {"dprojections": 16, "enabled": False, "ksim": 4, "repetitions": 10},
    },
    "pq": {
        "bitCompression": False,
        "centroids": 256,
        "enabled": False,
        "encoder": {"distribution": "log-normal", "type": "kmeans"},
        "segments": 0,
        "trainingLimit": 100000,
    },
    "rq": {"bits": 8, "enabled": False, "rescoreLimit": 20},
    "skip": False,
    "skipDefaultQuantization": False,
    "sq": {"enabled": False, "rescoreLimit": 20, "trainingLimit": 100000},
    "trackDefaultQuantization": False,
    "vectorCacheMaxObjects": 1000000000000,
}
TEXT_TYPES = ("text", "text[]")


# -- the sink (its own process) -------------------------------------------------------------------------


def count_objects(body: bytes) -> int:
    """The ``objects`` fields (1) of a ``BatchObjectsRequest``, framed, not decoded."""
    count = pos = 0
    end = len(body)
    while pos < end:
        key, pos = _varint(body, pos)
        kind = key & 7
        if kind == 2:
            size, pos = _varint(body, pos)
            pos += size
            count += key == 0x0A
        elif kind == 0:
            _, pos = _varint(body, pos)
        elif kind == 1:
            pos += 8
        elif kind == 5:
            pos += 4
        else:
            raise ValueError(f"BatchObjectsRequest: wire type {kind} at byte {pos}")
    if pos != end:
        raise ValueError(f"BatchObjectsRequest: the last field runs {pos - end} bytes past the body")
    return count


def delete_filter_ids(body: bytes) -> int:
    """The ids a ``BatchDeleteRequest{filters=2}`` names: ``Filters{operator=1 ContainsAny, value_text_array=9
    TextArray{values=1}, target=20 {property=1 "_id"}}`` (or ``on=2 ["_id"]``, the older form); 0 for any
    other filter."""
    for number, kind, value in _read_fields(body):
        if number == 2 and kind == 2:
            operator, on_id, ids = 0, False, 0
            for field, wire, inner in _read_fields(value):
                if field == 1 and wire == 0:
                    operator = inner
                elif field == 2 and wire == 2:
                    on_id = on_id or bytes(inner) in (b"_id", b"id")
                elif field == 20 and wire == 2:
                    on_id = on_id or any(
                        f == 1 and w == 2 and bytes(v) in (b"_id", b"id") for f, w, v in _read_fields(inner)
                    )
                elif field == 9 and wire == 2:
                    ids += sum(1 for f, w, _ in _read_fields(inner) if f == 1 and w == 2)
            return ids if operator == CONTAINS_ANY and on_id else 0
    return 0


def batch_delete_reply(matches: int, took_s: float) -> bytes:
    """``BatchDeleteReply{took=1 float, failed=2, matches=3, successful=4}``: every match deleted."""
    reply = b"\x0d" + struct.pack("<f", took_s)
    if matches:
        reply += b"\x18" + _encode_varint(matches) + b"\x20" + _encode_varint(matches)
    return reply


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = self.objects = self.bytes = 0
        self.delete_requests = self.deleted = 0

    def add(self, objects: int, nbytes: int) -> None:
        with self.lock:
            self.requests += 1
            self.objects += objects
            self.bytes += nbytes

    def delete(self, objects: int) -> None:
        with self.lock:
            self.delete_requests += 1
            self.deleted += objects

    def read(self) -> dict[str, Any]:
        with self.lock:
            found = {"requests": self.requests, "objects": self.objects, "bytes": self.bytes}
            found |= {"delete_requests": self.delete_requests, "deleted": self.deleted}
        return {**found, "cpu_s": time.process_time()}


def _class_name(name: str) -> str:
    return name[:1].upper() + name[1:]


def _property(asked: dict[str, Any]) -> dict[str, Any]:
    """A property as the server lists it: the name's first letter lower-cased, its index defaults."""
    data_type = list(asked.get("dataType") or ["text"])
    text = data_type[0] in TEXT_TYPES
    out = {
        "dataType": data_type,
        "indexFilterable": asked.get("indexFilterable", True),
        "indexRangeFilters": asked.get("indexRangeFilters", False),
        "indexSearchable": asked.get("indexSearchable", text),
        "name": asked["name"][:1].lower() + asked["name"][1:],
    }
    if text:
        out["tokenization"] = asked.get("tokenization") or "word"
    return out


def class_document(asked: dict[str, Any]) -> dict[str, Any]:
    """The class ``POST /v1/schema`` made, as ``GET /v1/schema/{Class}`` shows it."""
    doc: dict[str, Any] = {"class": _class_name(str(asked["class"])), **copy.deepcopy(CLASS_DEFAULTS)}
    doc["multiTenancyConfig"].update(asked.get("multiTenancyConfig") or {})
    doc["properties"] = [_property(p) for p in asked.get("properties") or ()]
    named = asked.get("vectorConfig")
    if named:
        doc["vectorConfig"] = {
            name: {
                "vectorIndexConfig": _hnsw(config.get("vectorIndexConfig")),
                "vectorIndexType": config.get("vectorIndexType") or "hnsw",
                "vectorizer": config.get("vectorizer") or {"none": {}},
            }
            for name, config in named.items()
        }
    else:  # one unnamed vector, configured at the top level
        doc["vectorIndexConfig"] = _hnsw(asked.get("vectorIndexConfig"))
        doc["vectorIndexType"] = asked.get("vectorIndexType") or "hnsw"
        doc["vectorizer"] = asked.get("vectorizer") or "none"
    return doc


def _hnsw(asked: dict[str, Any] | None) -> dict[str, Any]:
    """An index's configuration as the server shows it: its defaults, what was asked, and ``multivector``
    filled in key by key (``{"enabled": true}`` alone comes back with the default ``aggregation``, which
    weaviate-client's ``config.get`` reads)."""
    asked = asked or {}
    config = {**copy.deepcopy(HNSW_DEFAULTS), **asked}
    if isinstance(asked.get("multivector"), dict):
        config["multivector"] = {**HNSW_DEFAULTS["multivector"], **asked["multivector"]}
    return config


class _Schema:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.classes: dict[str, dict[str, Any]] = {}


def _handler(counters: _Counters, schema: _Schema) -> type[BaseHTTPRequestHandler]:
    meta = {"grpcMaxMessageSize": MAX_MESSAGE_BYTES, "hostname": "http://127.0.0.1", "modules": {}}
    meta["version"] = VERSION
    nodes = {
        "nodes": [
            {
                "batchStats": {"queueLength": 0, "ratePerSecond": 0},
                "name": "node1",
                "operationalMode": "ReadWrite",
                "shards": None,
                "status": "HEALTHY",
                "version": VERSION,
            }
        ]
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the clients pool their connections
        # one write per reply, sent at once: headers and body in two writes wait out the client's
        # delayed ACK (40 ms a call) on Nagle's algorithm
        wbufsize = 1 << 16
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass  # unknown paths are named in _unknown

        def _answer(self, status: int, doc: Any = None) -> None:
            body = b"" if doc is None else json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            self._answer(status, {"error": [{"message": message}]})

        def _unknown(self) -> None:
            print(f"weaviate_sink: no answer for {self.command} {self.path}", file=sys.stderr, flush=True)
            self._error(
                HTTPStatus.NOT_IMPLEMENTED, f"the no-op sink does not serve {self.command} {self.path}"
            )

        def _body(self) -> Any:
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size) if size else b""
            return json.loads(raw) if raw.strip() else None

        def _parts(self) -> list[str]:
            return [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]

        def do_GET(self) -> None:
            parts = self._parts()
            if parts == ["_stats"]:
                self._answer(200, counters.read())
            elif parts == ["v1", "meta"]:
                self._answer(200, meta)
            elif parts[:2] == ["v1", ".well-known"] and parts[2:] in (["ready"], ["live"]):
                self._answer(200)
            elif parts == ["v1", "nodes"]:
                self._answer(200, nodes)
            elif parts == ["v1", "objects"]:
                self._answer(200, {"deprecations": [], "objects": [], "totalResults": 0})
            elif parts[:2] == ["v1", "schema"] and len(parts) == 3:
                with schema.lock:
                    doc = copy.deepcopy(schema.classes.get(_class_name(parts[2])))
                self._answer(200, doc) if doc is not None else self._answer(404)
            elif parts == ["v1", ".well-known", "openid-configuration"]:
                self._answer(404)  # no OIDC: the clients then send keys as they are
            else:
                self._unknown()

        def do_POST(self) -> None:
            parts, asked = self._parts(), self._body()
            if parts == ["v1", "schema"]:
                doc = class_document(asked)
                with schema.lock:
                    if doc["class"] in schema.classes:
                        return self._error(422, f"class name {doc['class']} already exists")
                    schema.classes[doc["class"]] = doc
                self._answer(200, asked)
            elif parts[:2] == ["v1", "schema"] and parts[3:] == ["properties"]:
                prop = _property(asked)
                with schema.lock:
                    doc = schema.classes.get(_class_name(parts[2]))
                    if doc is None:
                        return self._error(422, f"collection {parts[2]} not found")
                    if any(p["name"] == prop["name"] for p in doc["properties"]):
                        return self._error(422, f"property {prop['name']!r} already in use")
                    doc["properties"].append(prop)
                self._answer(200, prop)
            else:
                self._unknown()

        def do_DELETE(self) -> None:
            parts = self._parts()
            if parts == ["v1", "batch", "objects"]:
                self._batch_delete(self._body() or {})
            elif parts[:2] == ["v1", "schema"] and len(parts) == 3:
                with schema.lock:
                    schema.classes.pop(_class_name(parts[2]), None)
                self._answer(200)
            else:
                self._unknown()

        def do_PUT(self) -> None:
            self._unknown()

        def _batch_delete(self, asked: dict[str, Any]) -> None:
            """``DELETE /v1/batch/objects``: the objects whose id is among ``valueTextArray``."""
            match = asked.get("match") or {}
            with schema.lock:
                known = _class_name(str(match.get("class") or "")) in schema.classes
            if not known:
                return self._error(422, f"validate: class {match.get('class')!r} not found in schema")
            where = match.get("where") or {}
            ids = where.get("valueTextArray") if where.get("path") in (["id"], ["_id"]) else None
            found = (
                min(len(ids), QUERY_MAXIMUM_RESULTS) if where.get("operator") == "ContainsAny" and ids else 0
            )
            counters.delete(found)
            results: dict[str, Any] = {
                "matches": found,
                "limit": QUERY_MAXIMUM_RESULTS,
                "successful": found,
                "failed": 0,
            }
            output = asked.get("output") or "minimal"
            reply = {
                "match": match,
                "output": output,
                "dryRun": bool(asked.get("dryRun")),
                "results": results,
            }
            if output == "verbose":
                results["objects"] = [{"id": i, "status": "SUCCESS"} for i in ids[:found]] if ids else []
            self._answer(200, reply)

    return Handler


def serve() -> None:
    """Serve until SIGTERM; print the ports first."""
    import grpc

    counters, schema = _Counters(), _Schema()

    def batch_objects(body: bytes, context: Any) -> bytes:
        counters.add(count_objects(body), len(body))
        return b""  # BatchObjectsReply{}: no errors

    def batch_delete(body: bytes, context: Any) -> bytes:
        started = time.perf_counter()
        found = min(delete_filter_ids(body), QUERY_MAXIMUM_RESULTS)
        counters.delete(found)
        return batch_delete_reply(found, time.perf_counter() - started)

    server = grpc.server(
        ThreadPoolExecutor(max_workers=16),
        handlers=[
            grpc.method_handlers_generic_handler(
                "weaviate.v1.Weaviate",
                {
                    "BatchObjects": grpc.unary_unary_rpc_method_handler(batch_objects),
                    "BatchDelete": grpc.unary_unary_rpc_method_handler(batch_delete),
                },
            ),
            grpc.method_handlers_generic_handler(
                "grpc.health.v1.Health",
                {"Check": grpc.unary_unary_rpc_method_handler(lambda body, context: HEALTH_SERVING)},
            ),
        ],
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    grpc_port = server.add_insecure_port(f"{HOST}:0")
    server.start()
    rest = ThreadingHTTPServer((HOST, 0), _handler(counters, schema))
    rest.daemon_threads = True
    print(f"REST {rest.server_address[1]}", flush=True)
    print(f"GRPC {grpc_port}", flush=True)
    rest.serve_forever()


# -- the benchmark's side -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SinkStats:
    requests: int
    objects: int
    bytes: int
    cpu_s: float  # the sink process's CPU seconds
    delete_requests: int = 0
    deleted: int = 0  # objects the deletes removed


@dataclass(frozen=True)
class WeaviateSink:
    """A running sink, with the fields a benchmark uses of a real server (tests/integration/weaviate_server.py)."""

    host: str
    port: int
    grpc_port: int
    pid: int

    def uri(self, collection: str) -> str:
        return f"weaviate://{self.host}:{self.port}/{collection}"

    def client(self) -> Any:
        """The official weaviate-client v4, connected here (its start-up checks would ask PyPI for news)."""
        import weaviate

        return weaviate.connect_to_custom(
            http_host=self.host,
            http_port=self.port,
            http_secure=False,
            grpc_host=self.host,
            grpc_port=self.grpc_port,
            grpc_secure=False,
            skip_init_checks=True,
        )

    def rest(self, method: str, path: str) -> Any:
        """The JSON of a REST call (``None`` for an empty body)."""
        import urllib.request

        request = urllib.request.Request(f"http://{self.host}:{self.port}{path}", method=method)
        with urllib.request.urlopen(request, timeout=10) as reply:
            body = reply.read()
        return json.loads(body) if body.strip() else None

    def stats(self) -> SinkStats:
        found = self.rest("GET", "/_stats")
        return SinkStats(
            int(found["requests"]),
            int(found["objects"]),
            int(found["bytes"]),
            float(found["cpu_s"]),
            int(found["delete_requests"]),
            int(found["deleted"]),
        )


@contextlib.contextmanager
def start_sink(start_timeout_s: float = 30.0) -> Iterator[WeaviateSink]:
    """Run a sink process for the block; it is terminated afterwards."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "jobs.bench.weaviate_sink"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ports: dict[str, int] = {}
        timer = threading.Timer(start_timeout_s, process.kill)  # a sink that never prints ends the wait
        timer.start()
        try:
            for line in process.stdout or ():
                name, _, value = line.strip().partition(" ")
                ports[name] = int(value)
                if len(ports) == 2:
                    break
        finally:
            timer.cancel()
        if len(ports) != 2:
            raise RuntimeError(f"weaviate_sink did not start (exit code {process.poll()})")
        yield WeaviateSink(HOST, ports["REST"], ports["GRPC"], process.pid)
    finally:
        stop_process(process)
        if process.stdout is not None:
            process.stdout.close()


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0]).parse_args(argv)
    serve()


if __name__ == "__main__":
    main()
