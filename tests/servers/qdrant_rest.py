"""A Qdrant-protocol REST test server, and the store it shares with the gRPC one (``qdrant_grpc``).

``QdrantStore`` holds collections (an unnamed or named dense vectors config, named multi-vectors with
``multivector_config {comparator: max_sim}``, named sparse vectors, auto or custom sharding with shard
keys) and their points (id, float32 vectors and multi-vectors, sparse vectors, payload, shard key), and
answers as Qdrant does, with Qdrant's wording (read in the qdrant/qdrant sources: ``StorageError`` and
its HTTP and gRPC statuses, ``OperationError``, ``segment::common::check_vector_against_config``,
``common::validation::validate_multi_vector_by_length``):

- a vector of another size: 400 / INVALID_ARGUMENT ``Wrong input: Vector dimension error: expected
  dim: 3, got 4`` (each vector of a multi-vector checked so): the whole request is refused and
  the message names no point;
- a multi-vector under a dense name: ``Wrong input: Conversion between multi and regular vectors
  failed`` (after the size check of its vectors); a dense vector under a multi-vector name is kept as a
  multi-vector of one vector, as Qdrant keeps it (its size checked); a dense or multi-vector under a
  sparse name: ``... between sparse and regular vectors failed`` / ``... between multi and regular ...``;
- a request that breaks a validation rule, before anything else is looked at: 422 over REST (actix's
  ``validation_error_handler``) / INVALID_ARGUMENT, every error as ``path: message`` (``label_errors``):
  an empty multi-vector ``multi vector must not be empty`` (an empty vector inside one: ``all vectors must
  be non-empty``; 1,048,576 floats or more: ``Total size of all vectors (N) must be less than 1048576``;
  vectors of different lengths: ``all vectors must have the same dimension, found vector with dimension
  3``); over REST ``[]`` reads as an empty dense vector, ``dense vector must not be empty``; a sparse
  vector's ``values: Validation error: must be the same length as indices [{}]`` and ``indices: Validation
  error: must be unique [{}]`` (no message of their own: validator's rendering of the code). Labels:
  ``Validation error in JSON body`` / ``in path parameters`` (REST), ``Validation error in body`` (gRPC);
  paths as Qdrant builds them (``points[0].vector.?.values``, ``batch.?.data``,
  ``points[0].vectors.vectors_options.vectors.[].values``);
- a collection name of more than 255 characters, or holding ``/`` or NUL (any request), or any of
  ``< > : " \\ | ? * \\x1F`` too (a create: ``StrictCollectionPath``): 422 ``Validation error in path
  parameters: [collection_name: collection name cannot contain "*" char]`` / INVALID_ARGUMENT
  ``Validation error in body: [...]``; a ``VectorParams.size`` outside 1 to 65,536 likewise
  (``vectors.size: must be from 1 to 65536``; gRPC: ``vectors_config.config.size: value 70000 invalid,
  must be from 1 to 65536``); a vector name of more than 200 bytes or holding one of those characters:
  400 / INVALID_ARGUMENT ``Wrong input: Invalid dense vector name `a:b`: vector name cannot contain ":"
  char`` (``CreateCollectionOperation::new``);
- an id that is neither an unsigned integer nor a UUID: 400 ``Format error in JSON body: value x is
  not a valid point ID, valid values are either an unsigned integer or a UUID`` / INVALID_ARGUMENT
  ``Unable to parse UUID: x``;
- a missing collection: 404 / NOT_FOUND ``Not found: Collection `c` doesn't exist!``; an existing one
  created again: 409 / ALREADY_EXISTS ``Wrong input: Collection `c` already exists!``;
- an unknown vector name: 400 ``Wrong input: Not existing vector name error: x``; an unknown shard
  key: 400 ``Bad request: Shard key "x" not found`` (a delete's, as ``split_by_shard`` says it: 400 /
  INVALID_ARGUMENT ``Wrong input: Shard key "x" not found``; a text key quoted, a number bare);
- a wrong or missing ``api-key``: 401 / UNAUTHENTICATED, plain text as Qdrant's auth middleware says it.

Faults come from the shared ``FaultScript`` (``script.py``), admitted by ``ServerState`` in the same
order as the Pinecone servers: drop (REST closes the socket; gRPC answers UNAVAILABLE), throttle
(429 / RESOURCE_EXHAUSTED ``Rate limiting exceeded: Write rate limit exceeded ...`` with
``Retry-After`` / ``retry-after`` metadata in seconds, as Qdrant sends it, but fractional so tests
stay fast), unavailable (503 / UNAVAILABLE ``Shard temporarily unavailable``), over quota, delay,
and ``reject_ids`` (the request refused whole, with one message naming no point unless
``reject_named``). ``noop`` answers upserts without reading them.

Unlike Qdrant, vectors are stored exactly as they arrive, Cosine collections included (Qdrant
normalises those), so tests can compare float32 bytes.

Routes: ``GET /``, ``GET|PUT|DELETE /collections/{c}``, ``GET /collections/{c}/exists``,
``PUT /collections/{c}/points`` (``PointsList`` or ``PointsBatch``; ``wait``, ``ordering``),
``POST /collections/{c}/points`` (retrieve), ``POST /collections/{c}/points/scroll``, ``POST /collections/{c}/points/count``,
``POST /collections/{c}/points/delete``, ``PUT /collections/{c}/shards``, ``GET /collections/{c}/cluster``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote

import numpy as np
import orjson
from qdrant_client.local.json_path_parser import JsonPathItemType, parse_json_path

from .script import ECHO_HEADER, FaultScript, ServerState, echoed
from .threaded_http import JsonHandler, ThreadedServer, TrackingHTTPServer

__all__ = [
    "IS_EMPTY",
    "VERSION",
    "Incoming",
    "Point",
    "QdrantError",
    "QdrantRestServer",
    "QdrantStore",
    "StoredCollection",
    "UpsertLog",
    "check_collection_name",
    "check_vector_names",
]

# qdrant-client warns when the server's minor version is more than one away from its own; the tests pin
# qdrant-client 1.20, so the server announces that line.
VERSION = "1.20.0"
# qdrant/qdrant lib/common/common/src/validation.rs: characters no collection or vector name may hold (a new
# collection's name; older collections' names are held to LEGACY_NAME_CHARS), a vector name's bytes, a
# multi-vector's floats (release builds), and VectorParams.size
INVALID_NAME_CHARS = ("<", ">", ":", '"', "/", "\\", "|", "?", "*", "\0", "\x1f")
LEGACY_NAME_CHARS = ("/", "\0")
MAX_COLLECTION_NAME_CHARS = 255
MAX_VECTOR_NAME_BYTES = 200
MAX_MULTIVECTOR_FLATTENED_LEN = 1024 * 1024
MAX_VECTOR_SIZE = 65_536
# service.max_request_size_mb (32 by default), the limit of actix's JsonConfig for every JSON body
# (qdrant/qdrant src/actix/mod.rs); its refusal is actix's JsonPayloadError as Qdrant's handler words it
MAX_REQUEST_BYTES = 32 * 1024 * 1024
IS_EMPTY = object()  # a filter's is_empty condition, as a value in delete_points' must

Kind = Literal[
    "validation",
    "bad_input",
    "format",
    "not_found",
    "already_exists",
    "bad_request",
    "unauthenticated",
    "throttled",
    "unavailable",
    "dropped",
]
HTTP_STATUS: dict[str, int] = {
    "validation": 422,  # actix's validation_error_handler: a request that parsed but breaks a rule
    "bad_input": 400,
    "format": 400,
    "bad_request": 400,
    "not_found": 404,
    "already_exists": 409,
    "unauthenticated": 401,
    "throttled": 429,
    "unavailable": 503,
}


def shown_key(key: str | int) -> str:
    """A shard key as Qdrant's messages show it (``ShardKey``'s Display): text quoted, a number bare."""
    return f'"{key}"' if isinstance(key, str) else str(key)


class QdrantError(Exception):
    """A refusal as Qdrant words it; each server maps ``kind`` to its status."""

    def __init__(
        self, kind: Kind, message: str, *, grpc_message: str | None = None, retry_after_s: float = 0
    ):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.grpc_message = grpc_message or message
        self.retry_after_s = retry_after_s


@dataclass(slots=True)
class Point:
    """A stored point: vectors as little-endian float32 bytes, so tests compare them exactly."""

    id: int | str
    vectors: dict[str, bytes] = field(default_factory=dict)  # "" is the unnamed vector
    sparse: dict[str, tuple[list[int], bytes]] = field(default_factory=dict)
    payload: dict[str, Any] = field(default_factory=dict)
    shard_key: str | int | None = None

    multi: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # name -> (dim, float32 bytes)

    def vector(self, name: str = "") -> np.ndarray:
        return np.frombuffer(self.vectors[name], dtype="<f4")

    def multi_vector(self, name: str) -> np.ndarray:
        """A multi-vector as its ``(k, dim)`` float32 matrix."""
        dim, data = self.multi[name]
        return np.frombuffer(data, dtype="<f4").reshape(-1, dim)


@dataclass(slots=True)
class Incoming:
    """A point as a request carried it, before the collection judged it."""

    id: Any  # as sent: int or text (checked by the store)
    dense: dict[str, np.ndarray]
    sparse: dict[str, tuple[list[int], np.ndarray]]
    payload: dict[str, Any] | None
    multi: dict[str, list[np.ndarray]] = field(default_factory=dict)  # its vectors, as sent


@dataclass(slots=True)
class StoredCollection:
    name: str
    vectors: dict[str, tuple[int, str]]  # name ("" unnamed) -> (size, distance)
    sparse: set[str]
    custom_sharding: bool = False
    shard_keys: set[str | int] = field(default_factory=set)
    points: dict[Any, Point] = field(default_factory=dict)  # by id; custom sharding: by (shard key, id)
    multi: set[str] = field(default_factory=set)  # named vectors with multivector_config (max_sim)


@dataclass(frozen=True, slots=True)
class UpsertLog:
    """One upsert request as it arrived and what it was answered."""

    seq: int
    transport: str  # "rest" or "grpc"
    collection: str
    outcome: str  # "ok" or an error kind
    ids: tuple[Any, ...]
    wait: bool | None
    ordering: str | None
    shard_key: Any
    message: str
    headers: dict[str, str]
    size: int


class QdrantStore:
    """Thread-safe collections, the fault script, and a log of every upsert."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.admission = ServerState()  # the fault script, its countdowns and the in-flight figures
        self.collections: dict[str, StoredCollection] = {}
        self.log: list[UpsertLog] = []
        self.max_request_bytes = (
            MAX_REQUEST_BYTES  # a REST body over it is refused whole (tests may lower it)
        )

    # -- test helpers ------------------------------------------------------------------------------

    def script(self, script: FaultScript | None = None, **fields: Any) -> FaultScript:
        script = script or FaultScript(**fields)
        self.admission.set_script(script)
        return script

    def reset(self) -> None:
        with self._lock:
            self.collections.clear()
            self.log.clear()
        self.admission.reset()

    def points(self, collection: str) -> dict[int | str, Point]:
        """The collection's points by id (of a custom-sharded one, where an id may be in several shard keys,
        one of them: ``points_by_shard`` has each)."""
        with self._lock:
            return {p.id: p for p in self.collections[collection].points.values()}

    def points_by_shard(self, collection: str) -> dict[tuple[Any, int | str], Point]:
        """The collection's points by (shard key, id): Qdrant keeps one point per id in each shard key."""
        with self._lock:
            return {(p.shard_key, p.id): p for p in self.collections[collection].points.values()}

    @property
    def peak_in_flight(self) -> int:
        return self.admission.snapshot().peak_in_flight

    # -- auth --------------------------------------------------------------------------------------

    def check_key(self, api_key: str | None) -> None:
        required = self.admission.script.api_key
        if required is None:
            return
        if not api_key:
            raise QdrantError("unauthenticated", "Must provide an API key or an Authorization bearer token")
        if api_key != required:
            raise QdrantError("unauthenticated", "Invalid API key or JWT")

    # -- collections -------------------------------------------------------------------------------

    def _collection(self, name: str) -> StoredCollection:
        found = self.collections.get(name)
        if found is None:
            raise QdrantError("not_found", f"Not found: Collection `{name}` doesn't exist!")
        return found

    def create_collection(
        self,
        name: str,
        vectors: dict[str, tuple[int, str]],
        sparse: set[str],
        custom_sharding: bool,
        multi: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        check_vector_names([n for n in vectors if n], sparse)
        with self._lock:
            if name in self.collections:
                raise QdrantError("already_exists", f"Wrong input: Collection `{name}` already exists!")
            self.collections[name] = StoredCollection(
                name, vectors, sparse, custom_sharding, multi=set(multi)
            )

    def delete_collection(self, name: str) -> bool:
        with self._lock:
            return self.collections.pop(name, None) is not None

    def exists(self, name: str) -> bool:
        with self._lock:
            return name in self.collections

    def describe(self, name: str) -> StoredCollection:
        with self._lock:
            return self._collection(name)

    def create_shard_key(self, name: str, key: str | int) -> None:
        with self._lock:
            coll = self._collection(name)
            if not coll.custom_sharding:
                raise QdrantError("bad_request", "Bad request: Shard key cannot be created for auto sharding")
            if key in coll.shard_keys:
                raise QdrantError("bad_input", f"Wrong input: Shard key {shown_key(key)} already exists")
            coll.shard_keys.add(key)

    # -- points ------------------------------------------------------------------------------------

    def upsert(
        self,
        collection: str,
        points: list[Incoming],
        shard_key: Any,
        *,
        id_error: Literal["rest", "grpc"],
    ) -> None:
        """Validate every point (Qdrant refuses the whole request for one bad point), then store them
        in request order, so the last of a repeated id wins."""
        script = self.admission.script
        with self._lock:
            coll = self._collection(collection)
            ids = [_point_id(p.id, id_error) for p in points]
            bad = sorted({str(i) for i in ids} & script.reject_ids)
            if bad:
                text = f"point(s) {', '.join(bad)}" if script.reject_named else "a point"
                raise QdrantError("bad_input", f"Wrong input: {text} refused (fault script)")
            stored = [_check_vectors(coll, p) for p in points]
            if coll.custom_sharding:
                if shard_key is None:
                    raise QdrantError(
                        "bad_request",
                        "Bad request: must specify shard key on collection with custom sharding",
                    )
                if shard_key not in coll.shard_keys:
                    raise QdrantError(
                        "bad_request", f"Bad request: Shard key {shown_key(shard_key)} not found"
                    )
            elif shard_key is not None:
                raise QdrantError(
                    "bad_request", "Bad request: Shard key selector is not allowed for auto sharding"
                )
            for pid, p, (dense, multi) in zip(ids, points, stored, strict=True):
                coll.points[_key(coll, shard_key, pid)] = Point(
                    id=pid,
                    vectors={name: v.astype("<f4").tobytes() for name, v in dense.items()},
                    sparse={
                        name: (idx, vals.astype("<f4").tobytes()) for name, (idx, vals) in p.sparse.items()
                    },
                    payload=dict(p.payload or {}),
                    shard_key=shard_key,
                    multi={name: (m.shape[1], m.astype("<f4").tobytes()) for name, m in multi.items()},
                )

    def retrieve(self, collection: str, ids: list[Any], id_error: Literal["rest", "grpc"]) -> list[Point]:
        with self._lock:
            coll = self._collection(collection)
            wanted = [_point_id(i, id_error) for i in ids]
            if coll.custom_sharding:  # a read without a shard key reads every shard key's
                return [p for i in wanted for p in coll.points.values() if p.id == i]
            return [coll.points[i] for i in wanted if i in coll.points]

    def scroll(self, collection: str, offset: Any, limit: int) -> tuple[list[Point], int | str | None]:
        """Points in id order (integers before UUIDs, as Qdrant orders them) from ``offset``, at most
        ``limit``, and the id to continue from (``None`` at the end)."""
        with self._lock:
            points = sorted(self._collection(collection).points.values(), key=lambda p: _order(p.id))
        if offset is not None:
            start = _order(_point_id(offset, "rest"))
            points = [p for p in points if _order(p.id) >= start]
        return points[:limit], (points[limit].id if len(points) > limit else None)

    def count(self, collection: str) -> int:
        with self._lock:
            return len(self._collection(collection).points)

    def delete_points(
        self, collection: str, ids: list[Any] | None, must: list[tuple[str, Any]], shard_key: Any
    ) -> None:
        """Delete the points among ``ids`` (``None``: every point; an id not there is no error) whose
        payload matches every ``(key, value)`` of ``must`` (an empty filter matches every point; a value of
        ``IS_EMPTY``: the key missing, null or ``[]``, Qdrant's ``is_empty``), within ``shard_key`` when
        given: a ``points`` selector, or a filter's ``has_id``, ``match`` and ``is_empty`` conditions. A key is a
        JSON path, read as Qdrant reads one (``payload_at``)."""
        for key, _ in must:
            filter_path(key)  # a key no path parses: the request is refused before any point is looked at
        with self._lock:
            coll = self._collection(collection)
            if coll.custom_sharding and shard_key is None:  # split_by_shard: no ring for "no shard key"
                raise QdrantError("bad_input", "Wrong input: Shard key not specified")
            if coll.custom_sharding and shard_key not in coll.shard_keys:  # nor for a key not made
                raise QdrantError("bad_input", f"Wrong input: Shard key {shown_key(shard_key)} not found")
            chosen = (
                list(coll.points)
                if ids is None
                else [_key(coll, shard_key, _point_id(i, "rest")) for i in ids]
            )
            for pid in chosen:
                point = coll.points.get(pid)
                if point is None or (shard_key is not None and point.shard_key != shard_key):
                    continue
                if all(
                    payload_at(point.payload, key) in (None, [])
                    if value is IS_EMPTY
                    else payload_at(point.payload, key) == value
                    for key, value in must
                ):
                    del coll.points[pid]

    def record(self, entry: UpsertLog) -> None:
        with self._lock:
            self.log.append(entry)


def filter_path(key: str) -> list[str]:
    """A filter's key as Qdrant parses it (qdrant/qdrant lib/segment/src/json_path/parse.rs, which
    qdrant-client's local mode follows): ``a.b`` is ``a`` then ``b``, ``"a.b"`` the one key ``a.b``; a key
    outside letters, digits, ``_`` and ``-`` must be quoted. Array indices are not served here."""
    try:
        items = parse_json_path(key)
    except ValueError:
        raise QdrantError("format", f"Format error in JSON body: invalid json path {key!r}") from None
    if any(item.item_type != JsonPathItemType.KEY for item in items):
        raise QdrantError("bad_request", f"Bad request: the test server serves no array path: {key}")
    return [str(item.key) for item in items]


def payload_at(payload: dict[str, Any], key: str) -> Any:
    """The payload's value at the filter key ``key`` (a JSON path, ``filter_path``), or None."""
    value: Any = payload
    for name in filter_path(key):
        value = value.get(name) if isinstance(value, dict) else None
    return value


def cluster_info(coll: StoredCollection) -> dict[str, Any]:
    """``GET /collections/{c}/cluster`` as one Qdrant node answers it: a local shard a shard key (one for
    auto sharding, without a key), each key a string or a number as it was made."""
    keys: list[Any] = sorted(coll.shard_keys, key=lambda k: (isinstance(k, str), str(k)))
    shards = [
        {
            "shard_id": i,
            "points_count": sum(p.shard_key == k for p in coll.points.values()),
            "state": "Active",
        }
        | ({"shard_key": k} if coll.custom_sharding else {})
        for i, k in enumerate(keys if coll.custom_sharding else [None])
    ]
    return {
        "peer_id": 1,
        "shard_count": len(shards),
        "local_shards": shards,
        "remote_shards": [],
        "shard_transfers": [],
    }


def _key(coll: StoredCollection, shard_key: Any, point_id: int | str) -> Any:
    """Where a point is kept: by id, in a custom-sharded collection by (shard key, id)."""
    return (shard_key, point_id) if coll.custom_sharding else point_id


def _order(point_id: int | str) -> tuple[int, int, str]:
    return (0, point_id, "") if isinstance(point_id, int) else (1, 0, point_id)


def _point_id(value: Any, id_error: Literal["rest", "grpc"]) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64:
        return value
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value))
        except ValueError:
            pass
    if id_error == "grpc":
        raise QdrantError("format", f"Unable to parse UUID: {value}")
    shown = orjson.dumps(value).decode() if not isinstance(value, str) else value
    raise QdrantError(
        "format",
        f"Format error in JSON body: value {shown} is not a valid point ID, "
        "valid values are either an unsigned integer or a UUID",
    )


_WRONG_MULTI = "Wrong input: Conversion between multi and regular vectors failed"
_WRONG_SPARSE = "Wrong input: Conversion between sparse and regular vectors failed"


def _dimension_error(expected: int, got: int) -> QdrantError:
    return QdrantError(
        "bad_input", f"Wrong input: Vector dimension error: expected dim: {expected}, got {got}"
    )


def _check_vectors(
    coll: StoredCollection, p: Incoming
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Qdrant's checks of one point's vectors against the collection's config (name, then size, then
    kind: ``check_vector_against_config`` and the storage's conversion); its dense vectors and
    multi-vectors (``(k, dim)``) as they are kept: a dense vector under a multi-vector name becomes a
    multi-vector of one vector, as in Qdrant."""
    dense: dict[str, np.ndarray] = {}
    multi: dict[str, np.ndarray] = {}
    for name in sorted({*p.dense, *p.multi, *p.sparse}):
        config = coll.vectors.get(name)
        if config is None and name not in coll.sparse:
            raise QdrantError("bad_input", f"Wrong input: Not existing vector name error: {name}")
        if config is None:  # a sparse name
            if name in p.multi:
                raise QdrantError("bad_input", _WRONG_MULTI)
            if name in p.dense:
                raise QdrantError("bad_input", _WRONG_SPARSE)
            continue
        if name in p.sparse:
            raise QdrantError("bad_input", _WRONG_SPARSE)
        size = config[0]
        if name in p.dense:
            vector = p.dense[name]
            if len(vector) != size:
                raise _dimension_error(size, len(vector))
            if name in coll.multi:
                multi[name] = vector.reshape(1, -1)
            else:
                dense[name] = vector
            continue
        vectors = p.multi[name]
        for vector in vectors:
            if len(vector) != size:
                raise _dimension_error(size, len(vector))
        if name not in coll.multi:
            raise QdrantError("bad_input", _WRONG_MULTI)
        multi[name] = np.stack(vectors)
    for name in p.sparse:  # their indices and values were validated with the request
        if name not in coll.sparse:
            raise QdrantError("bad_input", f"Wrong input: Not existing vector name error: {name}")
    return dense, multi


def multi_vector_error(lengths: list[int]) -> str | None:
    """Qdrant's ``validate_multi_vector_by_length`` (the message of its ``data`` error), or ``None``."""
    if not lengths:
        return "multi vector must not be empty"
    if 0 in lengths:
        return "all vectors must be non-empty"
    if sum(lengths) >= MAX_MULTIVECTOR_FLATTENED_LEN:
        return f"Total size of all vectors ({sum(lengths)}) must be less than {MAX_MULTIVECTOR_FLATTENED_LEN}"
    other = next((n for n in lengths if n != lengths[0]), None)
    if other is not None:
        return f"all vectors must have the same dimension, found vector with dimension {other}"
    return None


def collection_name_errors(name: str, *, create: bool) -> list[str]:
    """A request's ``collection_name`` checks: 1 to 255 characters (validator's ``length``, which quotes the
    value as JSON), and none of ``INVALID_NAME_CHARS`` to create one (``StrictCollectionPath``,
    ``CreateCollection``), else none of ``LEGACY_NAME_CHARS`` (a collection made before Qdrant 1.5 may
    hold the others); the first character of the list the name holds is named."""
    errors = []
    if not 1 <= len(name) <= MAX_COLLECTION_NAME_CHARS:
        shown = json.dumps(name, ensure_ascii=False)
        errors.append(f"collection_name: value {shown} invalid, must be from 1 to 255 characters")
    bad = next((c for c in (INVALID_NAME_CHARS if create else LEGACY_NAME_CHARS) if c in name), None)
    if bad is not None:
        errors.append(f'collection_name: collection name cannot contain "{bad}" char')
    return errors


def check_collection_name(name: str, *, create: bool = False) -> None:
    """Refuse a collection name as Qdrant's REST path extractor does (the gRPC server words it its own way)."""
    raise_validation("Validation error in path parameters", collection_name_errors(name, create=create))


def vector_name_error(name: str) -> str | None:
    """``validate_vector_name``: at most 200 bytes, none of ``INVALID_NAME_CHARS``."""
    if len(name.encode("utf-8", "surrogatepass")) > MAX_VECTOR_NAME_BYTES:
        return "vector name must be at most 200 bytes long"
    bad = next((c for c in INVALID_NAME_CHARS if c in name), None)
    return None if bad is None else f'vector name cannot contain "{bad}" char'


def check_vector_names(dense: list[str], sparse: set[str]) -> None:
    """``CreateCollectionOperation::new``, on both transports: each named dense vector's name, then each
    sparse one's (in name order), an empty sparse name, a name both dense and sparse (400 / INVALID_ARGUMENT)."""
    for kind, names in (("dense", dense), ("sparse", sparse)):
        for name in sorted(names):
            found = vector_name_error(name)
            if found is not None:
                raise QdrantError("bad_input", f"Wrong input: Invalid {kind} vector name `{name}`: {found}")
    if "" in sparse:
        raise QdrantError("bad_input", "Wrong input: Sparse vector name cannot be empty")
    both = next((name for name in dense if name in sparse), None)
    if both is not None:
        raise QdrantError(
            "bad_input",
            f"Wrong input: Dense and sparse vector names must be unique - duplicate found with '{both}'",
        )


def size_error(size: int) -> str | None:
    """``VectorParams.size``: 1 to 65,536 (the message's tail; gRPC's validator also quotes the value)."""
    return None if 1 <= size <= MAX_VECTOR_SIZE else f"must be from 1 to {MAX_VECTOR_SIZE}"


def fault_error(fault: str, script: FaultScript) -> QdrantError:
    """The refusal for an admission fault, worded as Qdrant's."""
    if fault == "unauthenticated":
        return QdrantError("unauthenticated", "Invalid API key or JWT")
    if fault == "dropped":
        return QdrantError("dropped", "Socket closed (fault script)")
    if fault == "unavailable":
        return QdrantError("unavailable", "Shard temporarily unavailable: fault script")
    return QdrantError(
        "throttled",
        "Rate limiting exceeded: Write rate limit exceeded: Operation requires 1 tokens but only 0 were "
        f"available. Retry after {script.retry_after_s:g}s (fault script)",
        retry_after_s=script.retry_after_s,
    )


# -- collection info, as the REST API and the gRPC conversions want it --------------------------------


def collection_info(coll: StoredCollection) -> Any:
    """``qdrant_client.http.models.CollectionInfo`` for a stored collection."""
    from qdrant_client.http import models as m

    if "" in coll.vectors:
        size, distance = coll.vectors[""]
        vectors: Any = m.VectorParams(size=size, distance=m.Distance(distance))
    else:
        max_sim = m.MultiVectorConfig(comparator=m.MultiVectorComparator.MAX_SIM)
        vectors = {
            name: m.VectorParams(
                size=size,
                distance=m.Distance(distance),
                multivector_config=max_sim if name in coll.multi else None,
            )
            for name, (size, distance) in coll.vectors.items()
        }
    params = m.CollectionParams(
        vectors=vectors,
        shard_number=1,
        sharding_method=m.ShardingMethod.CUSTOM if coll.custom_sharding else None,
        sparse_vectors={name: m.SparseVectorParams() for name in coll.sparse} or None,
        replication_factor=1,
        write_consistency_factor=1,
        on_disk_payload=True,
    )
    config = m.CollectionConfig(
        params=params,
        hnsw_config=m.HnswConfig(m=16, ef_construct=100, full_scan_threshold=10000),
        optimizer_config=m.OptimizersConfig(default_segment_number=0, flush_interval_sec=5),
        wal_config=m.WalConfig(wal_capacity_mb=32, wal_segments_ahead=0),
    )
    return m.CollectionInfo(
        status=m.CollectionStatus.GREEN,
        optimizer_status=m.OptimizersStatusOneOf.OK,
        segments_count=1,
        points_count=len(coll.points),
        indexed_vectors_count=0,
        config=config,
        payload_schema={},
    )


def parse_create(doc: dict[str, Any]) -> tuple[dict[str, tuple[int, str]], set[str], bool, set[str]]:
    """A ``CreateCollection`` body (validated by qdrant-client's own model) as the store takes it: vectors,
    sparse names, custom sharding, and the named vectors with a ``multivector_config``."""
    from qdrant_client.http import models as m

    config = doc.get("vectors") or {}
    single = isinstance(config, dict) and "size" in config
    params = {"": config} if single else dict(sorted(config.items()))  # a BTreeMap: in name order
    sizes = [p.get("size") for p in params.values() if isinstance(p, dict)]
    if any(isinstance(size, int) and size < 1 for size in sizes):  # serde's NonZeroU64 (position not shown)
        raise QdrantError(
            "format",
            "Format error in JSON body: data did not match any variant of untagged enum VectorsConfig",
        )
    bad = sum(isinstance(size, int) and size_error(size) is not None for size in sizes)
    paths = (
        ["vectors.size" if single else "vectors.?.size"]
        if bad == 1
        else [f"vectors.?[{k}].size" for k in range(bad)]
    )
    raise_validation("Validation error in JSON body", [f"{path}: must be from 1 to 65536" for path in paths])
    create = m.CreateCollection.model_validate(doc)
    vectors: dict[str, tuple[int, str]] = {}
    multi: set[str] = set()
    if isinstance(create.vectors, m.VectorParams):
        vectors[""] = (create.vectors.size, create.vectors.distance.value)
    elif create.vectors:
        vectors = {name: (p.size, p.distance.value) for name, p in create.vectors.items()}
        multi = {name for name, p in create.vectors.items() if p.multivector_config is not None}
    sparse = set(create.sparse_vectors or {})
    return vectors, sparse, create.sharding_method == m.ShardingMethod.CUSTOM, multi


# -- REST decoding -----------------------------------------------------------------------------------


def decode_points(doc: Any) -> list[Incoming]:
    """A ``PointInsertOperations`` body (``{"points": [...]}`` or ``{"batch": {...}}``) as ``Incoming``s,
    once it passes Qdrant's validation (``json_validation_errors``)."""
    if not isinstance(doc, dict):
        raise QdrantError("format", "Format error in JSON body: expected an object")
    if isinstance(doc.get("points"), list):
        points = doc["points"]
        raise_validation("Validation error in JSON body", json_validation_errors(doc))
        return [_incoming(p.get("id"), p.get("vector", p.get("vectors")), p.get("payload")) for p in points]
    batch = doc.get("batch")
    if not isinstance(batch, dict) or not isinstance(batch.get("ids"), list):
        raise QdrantError("format", "Format error in JSON body: data did not match any variant")
    ids = batch["ids"]
    vectors = batch.get("vectors")
    payloads = batch.get("payloads") or [None] * len(ids)
    if isinstance(vectors, list):
        rows: list[Any] = vectors
    elif isinstance(vectors, dict):
        rows = [{name: column[i] for name, column in vectors.items()} for i in range(len(ids))]
    else:
        raise QdrantError("format", "Format error in JSON body: batch.vectors is missing")
    raise_validation("Validation error in JSON body", json_validation_errors(doc))
    if len(rows) != len(ids) or len(payloads) != len(ids):
        raise QdrantError("bad_input", "Wrong input: number of ids and vectors must be equal")
    return [_incoming(i, v, p) for i, v, p in zip(ids, rows, payloads, strict=True)]


def raise_validation(label: str, errors: list[str]) -> None:
    """Qdrant's ``label_errors``: every ``path: message`` of a request's validation in one refusal (422 over
    REST, INVALID_ARGUMENT over gRPC), before anything else is looked at."""
    if errors:
        raise QdrantError("validation", f"{label}: [{'; '.join(errors)}]")


def json_validation_errors(doc: dict[str, Any]) -> list[str]:
    """What actix's ``Validate`` of a REST upsert body finds, as ``path: message`` (``PointsList``: every
    point with errors, ``points[i].vector...``; ``PointsBatch``: ``batch...``, the rows' first error for
    unnamed vectors, every error of the named ones), read in qdrant/qdrant ``lib/api/src/rest``."""
    if isinstance(doc.get("points"), list):
        errors = []
        for i, point in enumerate(doc["points"]):
            vector = point.get("vector", point.get("vectors")) if isinstance(point, dict) else None
            errors += [f"points[{i}].vector.{e}" for e in _point_vector_errors(vector)]
        return errors
    vectors = (doc.get("batch") or {}).get("vectors")
    if isinstance(vectors, list):  # one unnamed vector a row: Batch stops at the first bad row
        for row in vectors:
            found = _vector_errors(row)
            if found:
                return [f"batch.{e}" for e in found]
        return []
    if isinstance(vectors, dict):  # every named vector of every row, as validate_iter sees them
        items = [found for column in vectors.values() for row in column if (found := _vector_errors(row))]
        return [f"batch.{e}" for e in _iter_paths(items)]
    return []


def _point_vector_errors(vector: Any) -> list[str]:
    """A point's ``VectorStruct``: one unnamed vector (dense or multi), or named ones (``validate_iter``)."""
    if isinstance(vector, dict):
        return _iter_paths([found for value in vector.values() if (found := _vector_errors(value))])
    return _vector_errors(vector)


def _iter_paths(items: list[list[str]]) -> list[str]:
    """``common::validation::validate_iter``: one failing item under ``?``, several under ``?[k]``."""
    if len(items) == 1:
        return [f"?.{e}" for e in items[0]]
    return [f"?[{k}].{e}" for k, found in enumerate(items) for e in found]


def _vector_errors(value: Any) -> list[str]:
    """One REST ``Vector`` (untagged: ``[]`` is an empty dense vector, ``[[...]]`` a multi-vector, an object
    with ``indices`` a sparse one), its errors as ``field: message``."""
    if isinstance(value, dict) and "indices" in value:
        return sparse_errors(list(value["indices"]), list(value.get("values") or []))
    if not isinstance(value, list):
        return []
    if not value:
        return ["vector: dense vector must not be empty"]
    if isinstance(value[0], list):
        found = multi_vector_error([len(v) for v in value])
        return [f"data: {found}"] if found else []
    return []


def sparse_errors(indices: list[int], values: list[Any]) -> list[str]:
    """``validate_sparse_vector_impl``: its errors carry no message, so Qdrant shows validator's rendering
    of the code (``Validation error: <code> [{}]``)."""
    errors = []
    if len(indices) != len(values):
        errors.append("values: Validation error: must be the same length as indices [{}]")
    if len(set(indices)) != len(indices):
        errors.append("indices: Validation error: must be unique [{}]")
    return errors


def _incoming(point_id: Any, vector: Any, payload: Any) -> Incoming:
    """A point as the store takes it (its vectors validated already)."""
    dense: dict[str, np.ndarray] = {}
    sparse: dict[str, tuple[list[int], np.ndarray]] = {}
    multi: dict[str, list[np.ndarray]] = {}
    if isinstance(vector, list) and vector and isinstance(vector[0], list):  # an unnamed multi-vector
        multi[""] = [np.asarray(v, dtype=np.float64).astype(np.float32) for v in vector]
    elif isinstance(vector, list):
        dense[""] = np.asarray(vector, dtype=np.float64).astype(np.float32)
    elif isinstance(vector, dict):
        for name, value in vector.items():
            if isinstance(value, dict):
                sparse[name] = (
                    [int(i) for i in value["indices"]],
                    np.asarray(value["values"], dtype=np.float32),
                )
            elif isinstance(value, list) and value and isinstance(value[0], list):  # a multi-vector
                multi[name] = [np.asarray(v, dtype=np.float64).astype(np.float32) for v in value]
            elif value is not None:
                dense[name] = np.asarray(value, dtype=np.float64).astype(np.float32)
    if payload is not None and not isinstance(payload, dict):
        raise QdrantError("format", "Format error in JSON body: payload must be an object")
    return Incoming(point_id, dense, sparse, payload, multi)


def record_json(point: Point, with_payload: bool, with_vector: bool) -> dict[str, Any]:
    """A point as REST ``Record`` JSON; vectors as float32 arrays, written in their shortest form."""
    out: dict[str, Any] = {"id": point.id, "payload": point.payload if with_payload else None}
    if with_vector:
        named: dict[str, Any] = {name: point.vector(name) for name in point.vectors}
        for name in point.multi:
            named[name] = point.multi_vector(name)
        for name, (indices, values) in point.sparse.items():
            named[name] = {"indices": indices, "values": np.frombuffer(values, "<f4")}
        out["vector"] = named[""] if set(named) == {""} else named
    if point.shard_key is not None:
        out["shard_key"] = point.shard_key
    return out


# -- the REST server ---------------------------------------------------------------------------------


class _Handler(JsonHandler):
    server_version = "qdrant-test"
    server: _Server

    def do_GET(self) -> None:
        self._route("GET")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    def _route(self, verb: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path, _, query_text = self.path.partition("?")
        query = dict(parse_qsl(query_text))
        parts = [unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
        store = self.server.store
        started = time.monotonic()
        try:
            limit = store.max_request_bytes
            if length > limit:  # the body is read, then refused whole, before any route looks at it
                raise QdrantError(
                    "format",
                    f"Format error in JSON body: JSON payload ({length} bytes) is larger than allowed "
                    f"(limit: {limit} bytes).",
                )
            if verb == "PUT" and len(parts) == 3 and parts[0] == "collections" and parts[2] == "points":
                self._upsert(parts[1], body, query)
                return
            if verb == "GET" and not parts:  # the root answers without the envelope, and without a key
                root = {"title": "qdrant - vector search engine", "version": VERSION, "commit": "test"}
                self._reply(200, orjson.dumps(root))
                return
            store.check_key(self.headers.get("api-key"))
            result = self._control_plane(verb, parts, body, query)
        except QdrantError as exc:
            self._error(exc, started)
            return
        except (ValueError, KeyError, TypeError) as exc:  # a body the routes cannot read
            self._error(QdrantError("format", f"Format error in JSON body: {exc}"), started)
            return
        if result is _NOT_FOUND:
            self._reply(404, b"", "text/plain")
        else:
            self._ok(result, started)

    def _control_plane(self, verb: str, parts: list[str], body: bytes, query: dict[str, str]) -> Any:
        store = self.server.store
        if len(parts) < 2 or parts[0] != "collections":
            return _NOT_FOUND
        name, rest = parts[1], parts[2:]
        check_collection_name(name, create=verb == "PUT" and not rest)  # the path, before the body
        if not rest:
            if verb == "GET":
                return collection_info(store.describe(name)).model_dump(mode="json", exclude_none=True)
            if verb == "PUT":
                vectors, sparse, custom, multi = parse_create(orjson.loads(body or b"{}"))
                store.create_collection(name, vectors, sparse, custom, multi)
                return True
            if verb == "DELETE":
                return store.delete_collection(name)
        elif rest == ["exists"] and verb == "GET":
            return {"exists": store.exists(name)}
        elif rest == ["cluster"] and verb == "GET":
            return cluster_info(store.describe(name))
        elif rest == ["shards"] and verb == "PUT":
            store.create_shard_key(name, orjson.loads(body)["shard_key"])
            return True
        elif rest == ["points"] and verb == "POST":
            doc = orjson.loads(body)
            points = store.retrieve(name, list(doc.get("ids") or []), "rest")
            with_payload = doc.get("with_payload", True) is not False
            with_vector = bool(doc.get("with_vector", False))
            return [record_json(p, with_payload, with_vector) for p in points]
        elif rest == ["points", "scroll"] and verb == "POST":
            doc = orjson.loads(body or b"{}")
            points, next_id = store.scroll(name, doc.get("offset"), int(doc.get("limit") or 10))
            with_payload = doc.get("with_payload", True) is not False
            with_vector = bool(doc.get("with_vector", False))
            records = [record_json(p, with_payload, with_vector) for p in points]
            return {"points": records, "next_page_offset": next_id}
        elif rest == ["points", "count"] and verb == "POST":
            return {"count": store.count(name)}
        elif rest == ["points", "delete"] and verb == "POST":
            doc = orjson.loads(body or b"{}")
            ids = doc.get("points")
            conditions = (doc.get("filter") or {}).get("must") or []
            must = [(c["key"], c["match"]["value"]) for c in conditions if "key" in c]
            must += [(c["is_empty"]["key"], IS_EMPTY) for c in conditions if "is_empty" in c]
            for condition in conditions:  # HasIdCondition: the points among these ids
                if "has_id" in condition:
                    given = list(condition["has_id"])
                    ids = given if ids is None else [i for i in ids if i in given]
            store.delete_points(name, ids, must, doc.get("shard_key"))
            return {"operation_id": 0, "status": "completed"}
        return _NOT_FOUND

    def _upsert(self, name: str, body: bytes, query: dict[str, str]) -> None:
        store = self.server.store
        headers = {k.lower(): v for k, v in self.headers.items()}
        started = time.monotonic()
        admission = store.admission.admit(headers.get("api-key"))
        ids: tuple[Any, ...] = ()
        outcome, message = "ok", ""
        shard_key = None
        reply: Callable[[], None] | None = None  # sent after the log records the request: a client that
        # has its reply finds its request logged
        try:
            script = admission.script
            if admission.fault is not None:
                raise fault_error(admission.fault, script)
            if script.delay_s > 0:
                time.sleep(script.delay_s)
            if script.noop:
                reply = partial(self._ok, {"operation_id": admission.seq, "status": "acknowledged"}, started)
                return
            check_collection_name(name)  # the path, before the body
            try:
                doc = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                raise QdrantError("format", f"Format error in JSON body: {exc}") from None
            incoming = decode_points(doc)
            ids = tuple(p.id for p in incoming)
            shard_key = doc.get("shard_key")
            store.upsert(name, incoming, shard_key, id_error="rest")
            status = "completed" if query.get("wait", "false") == "true" else "acknowledged"
            reply = partial(self._ok, {"operation_id": admission.seq, "status": status}, started)
        except QdrantError as exc:
            outcome, message = exc.kind, exc.message
            if exc.kind == "dropped":
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
            else:
                reply = partial(self._error, exc, started)
        finally:
            store.admission.leave()
            store.record(
                UpsertLog(
                    seq=admission.seq,
                    transport="rest",
                    collection=name,
                    outcome=outcome,
                    ids=ids,
                    wait=query.get("wait") == "true" if "wait" in query else None,
                    ordering=query.get("ordering"),
                    shard_key=shard_key,
                    message=message,
                    headers=headers,
                    size=len(body),
                )
            )
            if reply is not None:
                reply()

    def _ok(self, result: Any, started: float) -> None:
        doc = {"result": result, "status": "ok", "time": time.monotonic() - started}
        self._reply(200, orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY))

    def _error(self, exc: QdrantError, started: float) -> None:
        status = HTTP_STATUS[exc.kind]
        message, extra = exc.message, {}
        if self.server.store.admission.script.echo_key:  # quote the request's key, in the body and a header
            key = self.headers.get("api-key")
            message, extra = echoed(message, key), {ECHO_HEADER: key or ""}
        if status == 401:  # Qdrant's auth middleware answers in plain text
            self._reply(401, message.encode(), "text/plain", extra=extra)
            return
        # Qdrant sends whole seconds (qdrant-client parses an int); ":g" keeps whole values whole and lets
        # tests script fractions of a second for the connector
        if status == 429:
            extra["Retry-After"] = f"{exc.retry_after_s:g}"
        doc = {"status": {"error": message}, "time": time.monotonic() - started}
        self._reply(status, orjson.dumps(doc), extra=extra)


_NOT_FOUND = object()


class _Server(TrackingHTTPServer):
    def __init__(self, port: int, store: QdrantStore) -> None:
        self.store = store
        super().__init__(port, _Handler)


class QdrantRestServer(ThreadedServer):
    """The REST server in a daemon thread on 127.0.0.1."""

    def __init__(self, port: int = 0, store: QdrantStore | None = None) -> None:
        self.store = store or QdrantStore()
        super().__init__(_Server(port, self.store), "qdrant-rest")
