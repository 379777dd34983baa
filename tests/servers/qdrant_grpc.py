"""A Qdrant-protocol gRPC test server on the REST server's store, and ``QdrantServer``: both, as Qdrant runs them.

Methods take raw bytes (no deserializer), so each request's exact bytes are kept, and are decoded
with qdrant-client's generated classes (the oracle): ``qdrant.Points/Upsert``, ``Get``, ``Scroll``,
``Count``, ``Delete``; ``qdrant.Collections/Get``, ``Create``, ``Delete``, ``CollectionExists``,
``CreateShardKey``; ``qdrant.Qdrant/HealthCheck``. Replies are built with the generated classes
and qdrant-client's REST-to-gRPC conversions. Errors carry Qdrant's gRPC codes and wording
(``qdrant_rest``'s docstring); a throttled upsert sets ``retry-after`` (seconds) in the trailing
metadata, as Qdrant does.

``QdrantServer`` serves REST and gRPC on two ports over one store (a point written over one is
read over the other), with ``rest_uri``/``grpc_uri`` for the connector and ``client()`` for the
official qdrant-client. The fixtures ``qdrant_server`` (fresh per test) and
``qdrant_session_server`` (shared; for Spark and Beam, which connect from their own processes)
are imported by the tests that use them.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

import grpc
import numpy as np
import pytest
from google.protobuf.message import DecodeError
from qdrant_client import grpc as qg
from qdrant_client.conversions.conversion import GrpcToRest, RestToGrpc
from qdrant_client.http import models as rest

from .qdrant_rest import (
    IS_EMPTY,
    VERSION,
    Incoming,
    QdrantError,
    QdrantRestServer,
    QdrantStore,
    UpsertLog,
    cluster_info,
    collection_info,
    collection_name_errors,
    fault_error,
    multi_vector_error,
    raise_validation,
    record_json,
    size_error,
    sparse_errors,
)
from .script import ECHO_HEADER, FaultScript, echoed

__all__ = ["QdrantGrpcServer", "QdrantServer", "qdrant_server", "qdrant_session_server"]

GRPC_CODE: dict[str, grpc.StatusCode] = {
    "validation": grpc.StatusCode.INVALID_ARGUMENT,
    "bad_input": grpc.StatusCode.INVALID_ARGUMENT,
    "format": grpc.StatusCode.INVALID_ARGUMENT,
    "bad_request": grpc.StatusCode.INVALID_ARGUMENT,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "already_exists": grpc.StatusCode.ALREADY_EXISTS,
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "throttled": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "dropped": grpc.StatusCode.UNAVAILABLE,
}
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


def upsert_validation_errors(request: Any) -> list[str]:
    """What tonic's ``validate`` of an ``UpsertPoints`` finds, as ``path: message``: the collection name,
    then every point with errors; of a point's named vectors only the first failing one (``HashMap``'s
    ``find_map``, under ``vectors_options.vectors.[]``), read in qdrant/qdrant ``lib/api/src/grpc/validate.rs``."""
    errors = collection_name_errors(request.collection_name, create=False)
    for index, point in enumerate(request.points):
        vectors = point.vectors
        if vectors.HasField("vector"):
            found, where = _vector_errors(vectors.vector), "vectors_options"
        else:
            named = vectors.vectors.vectors
            found = next((f for name in sorted(named) if (f := _vector_errors(named[name]))), [])
            where = "vectors_options.vectors.[]"
        errors += [f"points[{index}].vectors.{where}.{e}" for e in found]
    return errors


def _vector_errors(vector: Any) -> list[str]:
    """One ``Vector``'s validation errors as ``field: message``: a sparse one's, a multi-dense one's; a dense
    one has none here (its size is checked against the collection)."""
    kind = vector.WhichOneof("vector")
    if kind == "sparse":
        return sparse_errors(list(vector.sparse.indices), list(vector.sparse.values))
    if kind == "multi_dense":
        found = multi_vector_error([len(v.data) for v in vector.multi_dense.vectors])
        return [] if found is None else [f"data: {found}"]
    if kind is None and vector.HasField("indices") and not vector.HasField("vectors_count"):
        return sparse_errors(list(vector.indices.data), list(vector.data))  # the legacy sparse form
    return []


def decode_upsert(request: Any) -> list[Incoming]:
    """The points of an ``UpsertPoints`` as the store takes them (float32 values are exact as doubles),
    once the request passes Qdrant's validation (``upsert_validation_errors``).

    A multi-vector comes as ``multi_dense`` (``MultiDenseVector``, what qdrant-client sends) or in the
    deprecated form, ``data`` with ``vectors_count``; Qdrant validates both before anything else."""
    raise_validation(_LABEL, upsert_validation_errors(request))
    out = []
    for index, point in enumerate(request.points):
        which = point.id.WhichOneof("point_id_options")
        point_id: Any = point.id.num if which == "num" else point.id.uuid
        dense: dict[str, np.ndarray] = {}
        sparse: dict[str, tuple[list[int], np.ndarray]] = {}
        multi: dict[str, list[np.ndarray]] = {}
        vectors = point.vectors
        named = (
            {"": vectors.vector}
            if vectors.HasField("vector")
            else dict(vectors.vectors.vectors)
            if vectors.HasField("vectors")
            else {}
        )
        for name, vector in named.items():
            kind = vector.WhichOneof("vector")
            if kind == "dense":
                dense[name] = np.asarray(vector.dense.data, dtype=np.float32)
            elif kind == "sparse":
                sparse[name] = (list(vector.sparse.indices), np.asarray(vector.sparse.values, np.float32))
            elif kind == "multi_dense":
                multi[name] = [np.asarray(v.data, dtype=np.float32) for v in vector.multi_dense.vectors]
            elif vector.HasField("vectors_count"):  # the legacy multi-vector form: data, flattened
                count, data = vector.vectors_count, np.asarray(vector.data, dtype=np.float32)
                if count == 0 or not len(data):
                    what = (
                        "vectors count must be greater than 0"
                        if count == 0
                        else "multi vector must not be empty"
                    )
                    path = f"points[{index}].vectors.vectors_options.vectors.[].data"
                    raise QdrantError("validation", f"{_LABEL}: [{path}: {what}]")
                if len(data) % count:
                    raise QdrantError(
                        "bad_input",
                        f"Wrong input: Validation failed: Invalid multi-vector length: {len(data)}, "
                        f"expected multiple of {len(data) // count}",
                    )
                multi[name] = list(data.reshape(count, -1))
            elif vector.HasField("indices"):  # the legacy sparse form
                sparse[name] = (list(vector.indices.data), np.asarray(vector.data, np.float32))
            else:  # the legacy dense form, data = 1
                dense[name] = np.asarray(vector.data, dtype=np.float32)
        payload = GrpcToRest.convert_payload(point.payload) if point.payload else None
        out.append(Incoming(point_id, dense, sparse, payload, multi))
    return out


_LABEL = "Validation error in body"  # Qdrant's gRPC validation errors


def _check_name(name: str) -> None:
    """A request's ``collection_name`` as tonic's ``validate`` checks it (collections of any age)."""
    raise_validation(_LABEL, collection_name_errors(name, create=False))


def _shard_key(selector: Any) -> Any:
    if not selector.shard_keys:
        return None
    key = selector.shard_keys[0]
    return key.keyword if key.WhichOneof("key") == "keyword" else key.number


class QdrantGrpcServer:
    """The gRPC server (a thread pool) on 127.0.0.1, over ``store``."""

    def __init__(self, port: int = 0, store: QdrantStore | None = None, *, max_workers: int = 32) -> None:
        self.store = store or QdrantStore()
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="qdrant-grpc")

        def unary(fn: Any) -> Any:
            return grpc.unary_unary_rpc_method_handler(self._guard(fn))  # raw bytes in and out

        self._server = grpc.server(
            self._executor,
            handlers=[
                grpc.method_handlers_generic_handler(
                    "qdrant.Points",
                    {
                        "Upsert": grpc.unary_unary_rpc_method_handler(self._upsert),
                        "Get": unary(self._get),
                        "Count": unary(self._count),
                        "Scroll": unary(self._scroll),
                        "Delete": unary(self._delete),
                    },
                ),
                grpc.method_handlers_generic_handler(
                    "qdrant.Collections",
                    {
                        "Get": unary(self._get_collection),
                        "Create": unary(self._create_collection),
                        "Delete": unary(self._delete_collection),
                        "CollectionExists": unary(self._exists),
                        "CreateShardKey": unary(self._create_shard_key),
                        "CollectionClusterInfo": unary(self._cluster_info),
                    },
                ),
                grpc.method_handlers_generic_handler("qdrant.Qdrant", {"HealthCheck": unary(self._health)}),
            ],
            options=[
                ("grpc.so_reuseport", 0),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        self.port: int = self._server.add_insecure_port("127.0.0.1:0" if port == 0 else f"127.0.0.1:{port}")
        if self.port == 0:
            raise OSError(f"gRPC test server cannot bind 127.0.0.1:{port}")

    def _guard(self, fn: Any) -> Any:
        """Check the api key, decode nothing, and turn a ``QdrantError`` into its status."""

        def call(body: bytes, context: grpc.ServicerContext) -> bytes:
            metadata = {m.key: m.value for m in context.invocation_metadata() if isinstance(m.value, str)}
            try:
                self.store.check_key(metadata.get("api-key"))
                return bytes(fn(body))
            except QdrantError as exc:
                self._refuse(exc, metadata, context)
            except DecodeError as exc:
                context.abort(grpc.StatusCode.INTERNAL, f"failed to decode Protobuf message: {exc}")
            raise AssertionError("unreachable: abort raises")

        return call

    def _refuse(self, exc: QdrantError, metadata: dict[str, str], context: grpc.ServicerContext) -> NoReturn:
        """Abort with the refusal's status; with the script's ``echo_key``, quoting the request's key in
        the status details and the trailing metadata."""
        message, trailing = exc.grpc_message, []
        if exc.kind == "throttled":  # Qdrant's own metadata key, in seconds
            trailing.append(("retry-after", f"{exc.retry_after_s:g}"))
        if self.store.admission.script.echo_key:
            key = metadata.get("api-key")
            message = echoed(message, key)
            trailing.append((ECHO_HEADER, key or ""))
        if trailing:
            context.set_trailing_metadata(tuple(trailing))
        context.abort(GRPC_CODE[exc.kind], message)
        raise AssertionError("unreachable: abort raises")

    # -- points ------------------------------------------------------------------------------------

    def _upsert(self, body: bytes, context: grpc.ServicerContext) -> bytes:
        store = self.store
        metadata = {m.key: m.value for m in context.invocation_metadata() if isinstance(m.value, str)}
        started = time.monotonic()
        admission = store.admission.admit(metadata.get("api-key"))
        outcome, message, name, ids, shard_key = "ok", "", "", (), None
        wait: bool | None = None
        ordering: str | None = None
        try:
            script = admission.script
            if admission.fault is not None:
                raise fault_error(admission.fault, script)
            if script.delay_s > 0:
                time.sleep(script.delay_s)
            if script.noop:
                return _operation(admission.seq, qg.UpdateStatus.Acknowledged, started)
            try:
                request = qg.UpsertPoints.FromString(body)
            except DecodeError as exc:
                raise QdrantError("format", f"failed to decode Protobuf message: {exc}") from None
            name = request.collection_name
            wait = request.wait if request.HasField("wait") else None
            if request.HasField("ordering"):
                ordering = qg.WriteOrderingType.Name(request.ordering.type).lower()
            shard_key = (
                _shard_key(request.shard_key_selector) if request.HasField("shard_key_selector") else None
            )
            incoming = decode_upsert(request)
            ids = tuple(p.id for p in incoming)
            store.upsert(name, incoming, shard_key, id_error="grpc")
            status = qg.UpdateStatus.Completed if wait else qg.UpdateStatus.Acknowledged
            return _operation(admission.seq, status, started)
        except QdrantError as exc:
            outcome, message = exc.kind, exc.grpc_message
            self._refuse(exc, metadata, context)
        finally:
            store.admission.leave()
            store.record(
                UpsertLog(
                    seq=admission.seq,
                    transport="grpc",
                    collection=name,
                    outcome=outcome,
                    ids=ids,
                    wait=wait,
                    ordering=ordering,
                    shard_key=shard_key,
                    message=message,
                    headers=metadata,
                    size=len(body),
                )
            )

    def _get(self, body: bytes) -> bytes:
        request = qg.GetPoints.FromString(body)
        _check_name(request.collection_name)
        ids = [GrpcToRest.convert_point_id(i) for i in request.ids]
        points = self.store.retrieve(request.collection_name, ids, "grpc")
        with_payload = request.with_payload.enable if request.HasField("with_payload") else False
        with_vectors = request.with_vectors.enable if request.HasField("with_vectors") else False
        records = [self._record(p, with_payload, with_vectors) for p in points]
        return qg.GetResponse(result=records, time=0.0).SerializeToString()

    def _scroll(self, body: bytes) -> bytes:
        request = qg.ScrollPoints.FromString(body)
        _check_name(request.collection_name)
        offset = GrpcToRest.convert_point_id(request.offset) if request.HasField("offset") else None
        limit = request.limit if request.HasField("limit") else 10
        points, next_id = self.store.scroll(request.collection_name, offset, limit)
        with_payload = request.with_payload.enable if request.HasField("with_payload") else False
        with_vectors = request.with_vectors.enable if request.HasField("with_vectors") else False
        reply = qg.ScrollResponse(
            result=[self._record(p, with_payload, with_vectors) for p in points], time=0.0
        )
        if next_id is not None:
            reply.next_page_offset.CopyFrom(RestToGrpc.convert_extended_point_id(next_id))
        return reply.SerializeToString()

    @staticmethod
    def _record(point: Any, with_payload: bool, with_vectors: bool) -> Any:
        return RestToGrpc.convert_record(
            rest.Record.model_validate(record_json(point, with_payload, with_vectors))
        )

    def _count(self, body: bytes) -> bytes:
        request = qg.CountPoints.FromString(body)
        _check_name(request.collection_name)
        count = self.store.count(request.collection_name)
        return qg.CountResponse(result=qg.CountResult(count=count), time=0.0).SerializeToString()

    def _delete(self, body: bytes) -> bytes:
        request = qg.DeletePoints.FromString(body)
        _check_name(request.collection_name)
        shard_key = _shard_key(request.shard_key_selector) if request.HasField("shard_key_selector") else None
        selector = request.points
        if selector.HasField("points"):
            ids = [GrpcToRest.convert_point_id(i) for i in selector.points.ids]
            self.store.delete_points(request.collection_name, ids, [], shard_key)
        else:
            must = [
                (
                    c.field.key,
                    c.field.match.keyword if c.field.match.HasField("keyword") else c.field.match.integer,
                )
                for c in selector.filter.must
                if c.HasField("field")
            ]
            must += [(c.is_empty.key, IS_EMPTY) for c in selector.filter.must if c.HasField("is_empty")]
            chosen: list[Any] | None = None
            for c in selector.filter.must:  # HasIdCondition: the points among these ids
                if c.HasField("has_id"):
                    given = [GrpcToRest.convert_point_id(i) for i in c.has_id.has_id]
                    chosen = given if chosen is None else [i for i in chosen if i in given]
            self.store.delete_points(request.collection_name, chosen, must, shard_key)
        return _operation(0, qg.UpdateStatus.Completed, time.monotonic())

    # -- collections -------------------------------------------------------------------------------

    def _get_collection(self, body: bytes) -> bytes:
        request = qg.GetCollectionInfoRequest.FromString(body)
        _check_name(request.collection_name)
        info = RestToGrpc.convert_collection_info(
            collection_info(self.store.describe(request.collection_name))
        )
        return qg.GetCollectionInfoResponse(result=info, time=0.0).SerializeToString()

    def _create_collection(self, body: bytes) -> bytes:
        request = qg.CreateCollection.FromString(body)
        errors = collection_name_errors(request.collection_name, create=True)
        config = request.vectors_config
        if config.HasField("params") and size_error(config.params.size):
            size = config.params.size
            errors.append(f"vectors_config.config.size: value {size} invalid, {size_error(size)}")
        elif config.HasField("params_map"):  # the first bad one (HashMap's find_map)
            params = config.params_map.map
            size = next((params[n].size for n in sorted(params) if size_error(params[n].size)), None)
            if size is not None:
                errors.append(f"vectors_config.config.map.[].size: value {size} invalid, {size_error(size)}")
        raise_validation(_LABEL, errors)
        vectors: dict[str, tuple[int, str]] = {}
        multi: set[str] = set()
        if config.HasField("params"):
            vectors[""] = (config.params.size, qg.Distance.Name(config.params.distance))
        elif config.HasField("params_map"):
            vectors = {n: (p.size, qg.Distance.Name(p.distance)) for n, p in config.params_map.map.items()}
            multi = {n for n, p in config.params_map.map.items() if p.HasField("multivector_config")}
        sparse = (
            set(request.sparse_vectors_config.map) if request.HasField("sparse_vectors_config") else set()
        )
        custom = request.HasField("sharding_method") and request.sharding_method == qg.ShardingMethod.Custom
        self.store.create_collection(request.collection_name, vectors, sparse, custom, multi)
        return qg.CollectionOperationResponse(result=True, time=0.0).SerializeToString()

    def _delete_collection(self, body: bytes) -> bytes:
        request = qg.DeleteCollection.FromString(body)
        _check_name(request.collection_name)
        deleted = self.store.delete_collection(request.collection_name)
        return qg.CollectionOperationResponse(result=deleted, time=0.0).SerializeToString()

    def _exists(self, body: bytes) -> bytes:
        request = qg.CollectionExistsRequest.FromString(body)
        _check_name(request.collection_name)
        exists = qg.CollectionExists(exists=self.store.exists(request.collection_name))
        return qg.CollectionExistsResponse(result=exists, time=0.0).SerializeToString()

    def _create_shard_key(self, body: bytes) -> bytes:
        request = qg.CreateShardKeyRequest.FromString(body)
        _check_name(request.collection_name)
        key = request.request.shard_key
        self.store.create_shard_key(
            request.collection_name, key.keyword if key.WhichOneof("key") == "keyword" else key.number
        )
        return qg.CreateShardKeyResponse(result=True, time=0.0).SerializeToString()

    def _cluster_info(self, body: bytes) -> bytes:
        request = qg.CollectionClusterInfoRequest.FromString(body)
        _check_name(request.collection_name)
        info = cluster_info(self.store.describe(request.collection_name))
        shards = []
        for shard in info["local_shards"]:
            key = shard.get("shard_key")
            shard_key = (
                None if key is None else qg.ShardKey(**{"keyword" if isinstance(key, str) else "number": key})
            )
            shards.append(
                qg.LocalShardInfo(
                    shard_id=shard["shard_id"],
                    points_count=shard["points_count"],
                    state=qg.ReplicaState.Active,
                    shard_key=shard_key,
                )
            )
        return qg.CollectionClusterInfoResponse(
            peer_id=info["peer_id"], shard_count=info["shard_count"], local_shards=shards, time=0.0
        ).SerializeToString()

    def _health(self, body: bytes) -> bytes:
        return qg.HealthCheckReply(
            title="qdrant - vector search engine", version=VERSION, commit="test"
        ).SerializeToString()

    def start(self) -> QdrantGrpcServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=None).wait()
        self._executor.shutdown(wait=True)


def _operation(operation_id: int, status: int, started: float) -> bytes:
    result = qg.UpdateResult(operation_id=operation_id, status=status)  # type: ignore[arg-type]
    return qg.PointsOperationResponse(result=result, time=time.monotonic() - started).SerializeToString()


class QdrantServer:
    """REST and gRPC on one store, as a Qdrant node serves them (6333 and 6334)."""

    def __init__(self, store: QdrantStore | None = None) -> None:
        self.store = store or QdrantStore()
        self.rest = QdrantRestServer(0, self.store)
        self.grpc = QdrantGrpcServer(0, self.store)

    def __enter__(self) -> QdrantServer:
        self.rest.start()
        self.grpc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.grpc.stop()
        self.rest.stop()

    def rest_uri(self, collection: str) -> str:
        return f"qdrant://127.0.0.1:{self.rest.port}/{collection}"

    def grpc_uri(self, collection: str) -> str:
        return f"qdrant+grpc://127.0.0.1:{self.grpc.port}/{collection}"

    def uri(self, transport: str, collection: str) -> str:
        return self.grpc_uri(collection) if transport == "grpc" else self.rest_uri(collection)

    def script(self, script: FaultScript | None = None, **fields: Any) -> FaultScript:
        return self.store.script(script, **fields)

    def client(self, *, prefer_grpc: bool = False, api_key: str | None = None) -> Any:
        """The official client on both ports (``prefer_grpc`` picks the transport it uses)."""
        from qdrant_client import QdrantClient

        with warnings.catch_warnings():  # "Api key is used with an insecure connection": loopback, on purpose
            warnings.simplefilter("ignore", UserWarning)
            return QdrantClient(
                host="127.0.0.1",
                port=self.rest.port,
                grpc_port=self.grpc.port,
                prefer_grpc=prefer_grpc,
                https=False,
                api_key=api_key,
                check_compatibility=False,  # it runs in a thread that may outlive the server; tested apart
                timeout=10,
            )


@pytest.fixture
def qdrant_server() -> Iterator[QdrantServer]:
    """A fresh Qdrant-protocol server (REST and gRPC) in this process."""
    with QdrantServer() as server:
        yield server


@pytest.fixture(scope="session")
def qdrant_session_server() -> Iterator[QdrantServer]:
    """One server for the session (Spark and Beam tests): each test uses its own collection."""
    with QdrantServer() as server:
        yield server
