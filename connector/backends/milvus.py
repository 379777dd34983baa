"""Milvus over gRPC: ``milvus://host:19530/[db/]collection``, and Milvus Lite (``milvus+lite://PATH``, a file path).

Data plane: ``/milvus.proto.milvus.MilvusService/Upsert`` with an ``UpsertRequest`` encoded by
hand (field numbers in WIRE.md §5): the key as VarChar ``string_data`` or Int64 ``long_data``, the
dense vectors as one packed FloatVector copied straight from the matrix buffer, sparse vectors as
SparseFloatVector rows of little-endian (uint32 index, float32 value) pairs, metadata keys that
name declared scalar fields into those fields and the rest into the dynamic ``$meta`` JSON field.
Rows the collection cannot hold (a non-integer id for an INT64 key, a required field missing, a
key with no field and no dynamic field) fail alone before sending. Milvus applies or rejects an
upsert whole: a rejection is raised as ``Rejected`` with the server's reason, and the engine
bisects it down to the rows at fault.

Control plane (``check_target``): HasCollection and DescribeCollection learn the key, vector and
scalar field names and check the dimension, so collections made elsewhere with other field
names work. ``create=true`` makes a missing collection the way pymilvus's quick setup does (key
``id``, FloatVector ``vector``, dynamic field on, AUTOINDEX with the option's metric, loaded).
The key type follows the data (integer ids → INT64, else VarChar(512)) unless option ``id_type``
fixes it, so a missing collection is created with the first batch, when ids and dimension are known.

Namespaces: if the collection has a partition-key field, the namespace is written into it;
otherwise it names a partition, created the first time it is seen (Milvus allows 1024 partitions
per collection by default: for many tenants give the collection a partition key). Creating the
collection and new partitions are the only calls outside ``check_target``; they run on the
encoding thread, once, before the first request that needs them.

Clearing (``clear_target``, behind ``Client.clear`` and Spark's overwrite) keeps the collection, its
indexes and partitions. The whole collection: TruncateCollection (Milvus ≥ 2.6.16), or on a server
without it a Delete whose expression every key satisfies. A namespace in a partition-key field: a
Delete by ``field == "namespace"``. A namespace that names a partition: the partition's keys are
queried a page at a time and deleted by key with ``partition_name`` set, because Milvus Lite
ignores ``partition_name`` in a Delete by expression (it deletes matching rows of every partition):
a server keeps each delete in the partition, and on Lite the keys themselves come from it. Deletes
and queries are Strong (the proto default), so rows written just before are seen and removed.

Milvus Lite: the URI's path is the data directory; ``embedded.ensure_server`` starts (or finds) the
one server for it, and released collections are loaded so what was written can be queried.
Credentials: option ``api_key`` is the token (``user:password`` or an API key), sent base64 in
``authorization`` metadata; option ``db_name`` (or ``milvus://host/db/collection``) in ``dbname``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import orjson

from .. import protowire as pw
from ..errors import (
    AuthError,
    ConfigError,
    ConnectError,
    DimensionMismatch,
    NotFound,
    Rejected,
    ServerError,
    Throttled,
    Unavailable,
)
from ..options import BackendOptions, parse_uri
from ..report import BatchFailure
from ..rows import RowBatch, RowRules, metadata_json_len
from ..transports.base import Transport, WireReply, WireRequest
from .base import Backend, BatchOutcome, RequestLimits

__all__ = [
    "Layout",
    "MilvusBackend",
    "MilvusOptions",
    "ScalarField",
    "all_rows_expr",
    "encode_delete",
    "encode_query_keys",
    "encode_upsert",
    "keys_of",
]

SERVICE = "/milvus.proto.milvus.MilvusService/"
UPSERT = SERVICE + "Upsert"
DEFAULT_PORT = 19530
LITE_SCHEME = "milvus+lite://"
DEFAULT_LITE_COLLECTION = "vectors"
DYNAMIC_FIELD = "$meta"
KEY_MAX_LENGTH = 512
METRICS = {"cosine": "COSINE", "euclidean": "L2", "dotproduct": "IP"}
CLEAR_PAGE_ROWS = 4096  # keys per Query page and per Delete when a partition is cleared key by key
# a Delete by expression runs on the server as a query plus deletes: give it longer than one upsert
CLEAR_TIMEOUT_S = 600.0

# schema.DataType values (WIRE.md §5)
BOOL, INT8, INT16, INT32, INT64, FLOAT, DOUBLE, STRING, VARCHAR, JSON = 1, 2, 3, 4, 5, 10, 11, 20, 21, 23
FLOAT_VECTOR, SPARSE_FLOAT_VECTOR = 101, 104
VECTOR_TYPES = frozenset({100, 101, 102, 103, 104, 105, 106})
SCALAR_TYPES = frozenset({BOOL, INT8, INT16, INT32, INT64, FLOAT, DOUBLE, STRING, VARCHAR, JSON})
INT_RANGES = {INT8: 7, INT16: 15, INT32: 31, INT64: 63}

# status codes (common.Status.code, and the legacy error_code enum)
_THROTTLE_CODES = frozenset({8, 49})  # RateLimit
_UNAVAILABLE_CODES = frozenset({9, 48, 53, 54, 56, 57})  # ForceDeny, quota exhausted, not ready
_NOT_FOUND_CODES = frozenset(
    {4, 28, 100}
)  # CollectionNotExists, CollectionNameNotFound, COLLECTION_NOT_FOUND
_AUTH_CODES = frozenset(
    {3}
)  # PermissionDenied (a bad token is a gRPC UNAUTHENTICATED, mapped by the transport)


class MilvusOptions(BackendOptions, kw_only=True, forbid_unknown_fields=True):
    db_name: str | None = None
    id_type: Literal["auto", "varchar", "int64"] = "auto"  # key type of a collection made by create=true
    vector_field: str | None = None  # which FloatVector field, when the collection has several
    index_type: str = "AUTOINDEX"  # index of a collection made by create=true


@dataclass(frozen=True, slots=True)
class ScalarField:
    """A declared scalar field that metadata keys of the same name fill."""

    name: str
    dtype: int
    required: bool  # not nullable and no default: every row needs a value


@dataclass(frozen=True, slots=True)
class Layout:
    """What an upsert into one collection needs: field names and types, learnt from DescribeCollection."""

    collection: str
    dim: int | None
    key: str = "id"
    key_int64: bool = False
    vector: str = "vector"
    sparse: str | None = None
    dynamic: bool = True
    scalars: tuple[ScalarField, ...] = ()
    partition_key: str | None = None  # a scalar field (also in ``scalars``) that takes the namespace


@dataclass(slots=True)
class Encoded:
    """An UpsertRequest body and the rows that were left out of it, with reasons."""

    body: bytes
    sent: int
    sent_ids: list[Any] | None = None  # None: every row was sent
    refused: list[BatchFailure] = field(default_factory=list)


class MilvusBackend(Backend[MilvusOptions]):
    name: ClassVar[str] = "milvus"
    options_type: ClassVar[type[BackendOptions]] = MilvusOptions

    # gRPC messages up to 64 MB are safe on every Milvus (proxy default maxRecvMsgSize is larger)
    limits = RequestLimits(max_rows=100_000, max_bytes=64 << 20, default_rows=1000, default_bytes=16 << 20)
    # integer ids stay integers (INT64 keys); the collection's own VarChar max_length is the server's check
    rules = RowRules(
        max_id_length=65_535, max_metadata_bytes=65_536, allow_sparse_only=False, numeric_ids=True
    )

    def __init__(self, options: MilvusOptions) -> None:
        super().__init__(options)
        self.db_name = options.db_name
        self.lite_path: str | None = None
        uri = options.uri
        if uri.startswith(LITE_SCHEME) or "://" not in uri:
            from ..embedded import lite_path

            self.lite_path = lite_path(uri)
            self.host, self.port, self.tls = "127.0.0.1", 0, False
            self.collection = options.collection or DEFAULT_LITE_COLLECTION
        else:
            self._parse_server_uri(uri)
        if not self.collection:
            raise ConfigError(
                "option uri: milvus needs a collection: milvus://host:19530/COLLECTION or option collection"
            )
        self._layout: Layout | None = None
        self._transport: Transport | None = None
        self._create_pending = False
        self._partitions: set[str] = set()

    def _parse_server_uri(self, uri: str) -> None:
        parsed = parse_uri(uri)
        if parsed.transport not in (None, "grpc"):
            raise ConfigError(
                f"option uri: milvus has no transport {parsed.transport!r}; use milvus:// (gRPC)"
            )
        if not parsed.host:
            raise ConfigError("option uri: milvus needs a host, e.g. milvus://127.0.0.1:19530/docs")
        self.host, self.port = parsed.host, parsed.port or DEFAULT_PORT
        self.tls = self.options.tls if self.options.tls is not None else self.port == 443
        parts = [p for p in parsed.path.split("/") if p]
        if len(parts) > 2:
            raise ConfigError(f"option uri: {parsed.path!r} is not [db/]collection")
        if len(parts) == 2:
            if self.db_name and self.db_name != parts[0]:
                raise ConfigError(
                    f"option db_name {self.db_name!r} disagrees with the URI's database {parts[0]!r}"
                )
            self.db_name = parts[0]
        from_uri = parts[-1] if parts else None
        if from_uri and self.options.collection and from_uri != self.options.collection:
            raise ConfigError(
                f"option collection {self.options.collection!r} disagrees with the URI's {from_uri!r}"
            )
        self.collection = from_uri or self.options.collection or ""

    def describe(self) -> str:
        if self.lite_path:
            return f"milvus+lite://{self.lite_path} collection {self.collection}"
        db = f"{self.db_name}/" if self.db_name else ""
        return f"milvus://{self.host}:{self.port}/{db}{self.collection}"

    def open_transport(self) -> Transport:
        from ..transports.grpc import GrpcTransport

        metadata: list[tuple[str, str]] = []
        token = self.options.credential()
        if token:
            metadata.append(("authorization", base64.b64encode(token.encode()).decode()))
        if self.db_name:
            metadata.append(("dbname", self.db_name))
        if self.lite_path:
            return _LiteTransport(self.lite_path, tuple(metadata), self.describe())
        target = f"{self.host}:{self.port}"
        return GrpcTransport(target, tls=self.tls, metadata=tuple(metadata), label=self.describe())

    # -- control plane ----------------------------------------------------------------------------

    def check_target(self, transport: Transport, dimension: int | None) -> None:
        """Learn the collection's fields and check its dimension; with ``create=true`` make it if missing."""
        self._transport = transport
        layout = self._describe()
        if layout is None:
            if not self.options.create:
                raise ConfigError(
                    f"milvus collection {self.collection!r} does not exist at {self.describe()}; "
                    "set create=true to create it"
                )
            self._create_pending = True
            id_type = self.options.id_type
            if dimension is None or id_type == "auto":
                return  # made with the first batch, whose ids and dimension say what it needs
            layout = self._create(dimension, key_int64=id_type == "int64", sparse=False)
        self._check_layout(layout, dimension)
        self._layout = layout
        if self.lite_path:
            self._load_if_released()

    def _call(self, method: str, body: bytes, *, timeout_s: float | None = None) -> pw.FieldReader:
        if self._transport is None:
            raise RuntimeError("MilvusBackend: check_target() must run before the first request")
        reply = self.control(self._transport, WireRequest(SERVICE + method, body), timeout_s=timeout_s)
        return pw.FieldReader(reply.body)

    def _expect_ok(self, method: str, status: pw.FieldReader | None, *, allow: tuple[str, ...] = ()) -> None:
        code, reason, retriable = status_of(status)
        if code and not any(word in reason.lower() for word in allow):
            raise error_for(code, reason, retriable, f"milvus {method} {self.collection!r}")

    def _describe(self) -> Layout | None:
        name = pw.string_field(3, self.collection)
        has = self._call("HasCollection", name)
        self._expect_ok("HasCollection", has.message(1))
        if not has.int(2):
            return None
        reply = self._call("DescribeCollection", name)
        code, reason, retriable = status_of(reply.message(1))
        if code in _NOT_FOUND_CODES:
            return None
        if code:
            raise error_for(code, reason, retriable, f"milvus DescribeCollection {self.collection!r}")
        schema = reply.message(2)
        if schema is None:
            raise ConfigError(f"milvus DescribeCollection {self.collection!r} returned no schema")
        return layout_from_schema(self.collection, schema, self.options.vector_field)

    def _check_layout(self, layout: Layout, dimension: int | None) -> None:
        if dimension is not None and layout.dim is not None and layout.dim != dimension:
            raise DimensionMismatch(
                f"dimension mismatch: collection {self.collection} has dim {layout.dim}, data has {dimension}",
                target_dimension=layout.dim,
            )

    def _create(self, dimension: int, *, key_int64: bool, sparse: bool) -> Layout:
        """Create the collection, its indexes, and load it; a concurrent creator's collection is reused."""
        schema = encode_schema(self.collection, dimension, key_int64=key_int64, sparse=sparse)
        status = self._call("CreateCollection", pw.string_field(3, self.collection) + pw.len_field(4, schema))
        self._expect_ok("CreateCollection", status, allow=("exist",))
        metric = METRICS[self.options.metric]
        index_type = self.options.index_type
        indexes = [("vector", index_type, metric)] + (
            [("sparse", "SPARSE_INVERTED_INDEX", "IP")] if sparse else []
        )
        for field_name, kind, metric_type in indexes:
            body = encode_create_index(self.collection, field_name, kind, metric_type)
            self._expect_ok("CreateIndex", self._call("CreateIndex", body), allow=("exist",))
        self._expect_ok("LoadCollection", self._call("LoadCollection", pw.string_field(3, self.collection)))
        layout = self._describe()
        if layout is None:
            raise ConfigError(f"milvus collection {self.collection!r} was created but cannot be described")
        self._create_pending = False
        return layout

    def _load_if_released(self) -> None:
        # GetLoadStateRequest{collection_name=2}; LoadState: NotLoad=1, Loading=2, Loaded=3
        reply = self._call("GetLoadState", pw.string_field(2, self.collection))
        self._expect_ok("GetLoadState", reply.message(1))
        if reply.int(2) not in (2, 3):
            self._expect_ok(
                "LoadCollection", self._call("LoadCollection", pw.string_field(3, self.collection))
            )

    def _ensure_partition(self, partition: str) -> None:
        if partition in self._partitions:
            return
        body = pw.string_field(3, self.collection) + pw.string_field(4, partition)
        has = self._call("HasPartition", body)
        self._expect_ok("HasPartition", has.message(1))
        if not has.int(2):
            self._expect_ok("CreatePartition", self._call("CreatePartition", body), allow=("exist",))
        self._partitions.add(partition)

    def _layout_for(self, batch: RowBatch) -> Layout:
        if self._layout is not None:
            return self._layout
        if not self._create_pending or batch.vectors is None:
            raise RuntimeError("MilvusBackend: check_target() must run before the first request")
        id_type = self.options.id_type
        key_int64 = id_type == "int64" or (
            id_type == "auto" and bool(batch.ids) and isinstance(batch.ids[0], int)
        )
        sparse = batch.sparse is not None and any(s is not None for s in batch.sparse)
        layout = self._create(batch.vectors.shape[1], key_int64=key_int64, sparse=sparse)
        self._check_layout(layout, batch.dimension)
        self._layout = layout
        return layout

    # -- clearing --------------------------------------------------------------------------------

    def clear_target(self, transport: Transport, namespace: str | None) -> str:
        """Delete every row of the collection, or of ``namespace``; the collection, indexes and partitions stay."""
        self._transport = transport
        layout = self._layout or self._describe()
        where = self.describe()
        if layout is None:
            return f"nothing to clear: {where} does not exist yet"
        # partitions are kept, but a later write checks them again rather than trust this cache
        self._partitions.clear()
        if namespace is None:
            return self._clear_collection(layout, where)
        if layout.partition_key is not None:
            return self._clear_partition_key(layout, namespace, where)
        return self._clear_partition(layout, namespace, where)

    def _clear_collection(self, layout: Layout, where: str) -> str:
        try:
            reply = self._call(
                "TruncateCollection", pw.string_field(3, self.collection), timeout_s=self._clear_timeout_s
            )
        except NotFound as exc:
            if exc.status != "UNIMPLEMENTED":
                raise
            deleted = self._delete(encode_delete(self.collection, all_rows_expr(layout)), "every row")
            return f"every row of {where} ({deleted} rows)"
        self._expect_ok("TruncateCollection", reply.message(1))
        return f"every row of {where}"

    def _clear_partition_key(self, layout: Layout, namespace: str, where: str) -> str:
        key_field = next(f for f in layout.scalars if f.name == layout.partition_key)
        if key_field.dtype not in (VARCHAR, STRING):
            raise ConfigError(
                f"milvus collection {self.collection!r}: its partition key {key_field.name!r} is not VarChar, "
                f"so namespace {namespace!r} names no rows"
            )
        expr = f"{key_field.name} == {_literal(namespace)}"
        deleted = self._delete(encode_delete(self.collection, expr), f"namespace {namespace!r}")
        return f"namespace {namespace!r} (partition key {key_field.name}) of {where} ({deleted} rows)"

    def _clear_partition(self, layout: Layout, namespace: str, where: str) -> str:
        body = pw.string_field(3, self.collection) + pw.string_field(4, namespace)
        has = self._call("HasPartition", body)
        self._expect_ok("HasPartition", has.message(1))
        if not has.int(2):
            return f"namespace {namespace!r} of {where}: nothing to clear (no partition {namespace!r})"
        deleted = 0
        previous: set[Any] = set()
        while True:
            page = self._query_keys(layout, namespace)
            if not page:
                return f"namespace {namespace!r} (partition {namespace}) of {where} ({deleted} rows)"
            if previous.intersection(page):
                # Strong consistency should hide deleted rows; stop rather than loop if it did not
                raise ServerError(
                    f"milvus collection {self.collection!r}: rows of partition {namespace!r} still "
                    "visible after their delete"
                )
            expr = f"{layout.key} in [{', '.join(_literal(k) for k in page)}]"
            deleted += self._delete(
                encode_delete(self.collection, expr, partition=namespace), f"namespace {namespace!r}"
            )
            previous = set(page)

    def _query_keys(self, layout: Layout, partition: str) -> list[Any]:
        body = encode_query_keys(self.collection, layout, partition, CLEAR_PAGE_ROWS)
        reply = self._call("Query", body)
        self._expect_ok("Query", reply.message(1))
        return keys_of(reply, layout)

    def _delete(self, body: bytes, what: str) -> int:
        reply = self._call("Delete", body, timeout_s=self._clear_timeout_s)
        self._expect_ok(f"Delete ({what})", reply.message(1))
        return reply.int(7)  # MutationResult.delete_cnt

    @property
    def _clear_timeout_s(self) -> float:
        return max(self.options.timeout_s, CLEAR_TIMEOUT_S)

    # -- sizes and encoding -----------------------------------------------------------------------

    def row_bytes(self, batch: RowBatch) -> np.ndarray:
        """Encoded size per row: exact for vectors and ids, JSON length for metadata."""
        n = len(batch)
        dense = 0 if batch.vectors is None else batch.vectors.shape[1] * 4
        sizes = np.full(n, dense + 8, dtype=np.int64)
        sizes += np.fromiter((len(str(i)) for i in batch.ids), dtype=np.int64, count=n)
        if batch.sparse is not None:
            sizes += np.fromiter((0 if s is None else len(s[0]) * 8 + 3 for s in batch.sparse), np.int64, n)
        if batch.metadata is not None:
            sizes += np.fromiter(((metadata_json_len(m) or 2) + 3 for m in batch.metadata), np.int64, n)
        return sizes

    def request_for(self, batch: RowBatch) -> WireRequest:
        layout = self._layout_for(batch)
        partition = None
        if batch.namespace and layout.partition_key is None:
            self._ensure_partition(batch.namespace)
            partition = batch.namespace
        encoded = encode_upsert(batch, layout, partition=partition)
        if encoded.sent == 0:
            # nothing left to write: a harmless call stands in for the upsert
            return WireRequest(
                SERVICE + "HasCollection", pw.string_field(3, layout.collection), context=encoded
            )
        return WireRequest(UPSERT, encoded.body, context=encoded)

    def outcome_of(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        encoded = request.context if isinstance(request.context, Encoded) else None
        refused = list(encoded.refused) if encoded else []
        sent = encoded.sent if encoded else len(batch)
        if sent:
            result = pw.FieldReader(reply.body)
            code, reason, retriable = status_of(result.message(1))
            if code:
                raise error_for(
                    code, reason, retriable, f"milvus rejected {sent} rows of {self.collection!r}"
                )
            errors = result.packed_varints(4)
            if errors:
                ids = encoded.sent_ids if encoded and encoded.sent_ids is not None else batch.ids
                bad = tuple(str(ids[i]) for i in errors if i < len(ids))
                refused.append(
                    BatchFailure(ids=bad, error=reason or "listed in err_index by the server", attempts=1)
                )
                sent -= len(bad)
        return BatchOutcome(written=sent, failures=refused)


class _LiteTransport:
    """gRPC to the embedded server for a path; if that server has gone (idle timeout), the next one.

    Not a retry layer: a request that could not connect is sent again once, and only when
    ``ensure_server`` gives a different address (a fresh server on the same data).
    """

    def __init__(self, path: str, metadata: tuple[tuple[str, str], ...], label: str) -> None:
        from ..embedded import ensure_server

        self._path, self._metadata, self._label = path, metadata, label
        self._inner = self._connect(ensure_server(path))

    def _connect(self, address: str) -> Transport:
        from ..transports.grpc import GrpcTransport

        self.address = address
        return GrpcTransport(address, tls=False, metadata=self._metadata, label=self._label)

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        from ..embedded import ensure_server

        try:
            return self._inner.send(request, timeout_s=timeout_s)
        except ConnectError:
            address = ensure_server(self._path)
            if address == self.address:
                raise
            self._inner = self._connect(address)
            return self._inner.send(request, timeout_s=timeout_s)

    def close(self) -> None:
        self._inner.close()


# --------------------------------------------------------------------------------------------------
# status → error


def status_of(status: pw.FieldReader | None) -> tuple[int, str, bool]:
    """``(code, reason, retriable)`` of a ``common.Status``; code 0 is success (new ``code`` or legacy ``error_code``)."""
    if status is None:
        return 0, "", False
    code = status.int(3) or status.int(1)
    if code >= 1 << 31:
        code -= 1 << 64  # a negative int32 arrives as a ten-byte varint
    return code, status.str(2), bool(status.int(4))


def error_for(code: int, reason: str, retriable: bool, where: str) -> ServerError:
    """The connector error for a Milvus status: throttling and unavailability retry, the rest does not."""
    message = f"{where}: {reason or 'no reason given'} (code {code})"
    kind: type[ServerError]
    if code in _THROTTLE_CODES:
        kind = Throttled
    elif code in _UNAVAILABLE_CODES or retriable:
        kind = Unavailable
    elif code in _NOT_FOUND_CODES:
        kind = NotFound
    elif code in _AUTH_CODES:
        kind = AuthError
    else:
        kind = Rejected
    return kind(message, status=code)


# --------------------------------------------------------------------------------------------------
# schema (DescribeCollection) → Layout


def layout_from_schema(collection: str, schema: pw.FieldReader, vector_field: str | None = None) -> Layout:
    """Read ``schema.CollectionSchema`` (name 1, autoID 3, fields 4, enable_dynamic_field 5)."""
    key: tuple[str, int] | None = None
    dense: list[tuple[str, int | None, bool]] = []
    sparse: list[str] = []
    scalars: list[ScalarField] = []
    partition_key = None
    for raw in schema.fields.get(4, []):
        f = pw.FieldReader(raw)
        # FieldSchema: name 2, is_primary_key 3, data_type 5, type_params 6, autoID 8,
        # default_value 11, is_dynamic 12, is_partition_key 13, nullable 15, is_function_output 16
        name, dtype = f.str(2), f.int(5)
        optional = bool(f.int(15)) or 11 in f.fields
        if f.int(3):
            if f.int(8) or schema.int(3):
                raise ConfigError(
                    f"milvus collection {collection!r} generates its own ids (autoID); the connector upserts by id: "
                    "use a collection whose primary key is not autoID"
                )
            key = (name, dtype)
        elif f.int(12) or f.int(16):
            continue  # the dynamic $meta field, and outputs of functions (e.g. BM25), are not ours to write
        elif dtype == FLOAT_VECTOR:
            dense.append((name, _dim_of(f), optional))
        elif dtype == SPARSE_FLOAT_VECTOR:
            sparse.append(name)
        elif dtype in SCALAR_TYPES:
            scalars.append(ScalarField(name, dtype, required=not optional))
            if f.int(13):
                partition_key = name
        elif not optional:
            kind = "vector" if dtype in VECTOR_TYPES else "field"
            raise ConfigError(
                f"milvus collection {collection!r} has a required {kind} {name!r} of data type {dtype}, "
                "which the connector cannot fill"
            )
    if key is None or key[1] not in (INT64, VARCHAR):
        raise ConfigError(f"milvus collection {collection!r} has no INT64 or VarChar primary key")
    vector = _pick_vector(collection, dense, vector_field)
    return Layout(
        collection=collection,
        dim=vector[1],
        key=key[0],
        key_int64=key[1] == INT64,
        vector=vector[0],
        sparse=sparse[0] if sparse else None,
        dynamic=bool(schema.int(5)),
        scalars=tuple(scalars),
        partition_key=partition_key,
    )


def _dim_of(f: pw.FieldReader) -> int | None:
    for raw in f.fields.get(6, []):
        kv = pw.FieldReader(raw)
        if kv.str(1) == "dim":
            return int(kv.str(2))
    return None


def _pick_vector(
    collection: str, dense: list[tuple[str, int | None, bool]], wanted: str | None
) -> tuple[str, int | None]:
    if wanted is not None:
        for name, dim, _ in dense:
            if name == wanted:
                others = [n for n, _, optional in dense if n != name and not optional]
                if others:
                    raise ConfigError(
                        f"milvus collection {collection!r} also requires vector field {others[0]!r}"
                    )
                return name, dim
        raise ConfigError(
            f"option vector_field: collection {collection!r} has no FloatVector field {wanted!r}"
        )
    if not dense:
        raise ConfigError(f"milvus collection {collection!r} has no FloatVector field")
    if len(dense) > 1:
        names = ", ".join(n for n, _, _ in dense)
        raise ConfigError(
            f"milvus collection {collection!r} has several FloatVector fields ({names}): set option vector_field"
        )
    return dense[0][0], dense[0][1]


# --------------------------------------------------------------------------------------------------
# encoding: control-plane messages


def _kv(key: str, value: str) -> bytes:
    return pw.string_field(1, key) + pw.string_field(2, value)


def encode_schema(collection: str, dimension: int, *, key_int64: bool, sparse: bool) -> bytes:
    """``CollectionSchema`` of a quick-setup collection: key ``id``, ``vector`` (and ``sparse``), dynamic field on."""
    key_field = (
        pw.string_field(2, "id") + pw.varint_field(3, 1) + pw.varint_field(5, INT64 if key_int64 else VARCHAR)
    )
    if not key_int64:
        key_field += pw.len_field(6, _kv("max_length", str(KEY_MAX_LENGTH)))
    vector_field = (
        pw.string_field(2, "vector")
        + pw.varint_field(5, FLOAT_VECTOR)
        + pw.len_field(6, _kv("dim", str(dimension)))
    )
    fields = [key_field, vector_field]
    if sparse:
        fields.append(pw.string_field(2, "sparse") + pw.varint_field(5, SPARSE_FLOAT_VECTOR))
    return (
        pw.string_field(1, collection) + b"".join(pw.len_field(4, f) for f in fields) + pw.varint_field(5, 1)
    )


def encode_create_index(collection: str, field_name: str, index_type: str, metric_type: str) -> bytes:
    """``CreateIndexRequest{collection_name 3, field_name 4, extra_params 5, index_name 6}``."""
    params = [("index_type", index_type), ("metric_type", metric_type), ("params", "{}")]
    return (
        pw.string_field(3, collection)
        + pw.string_field(4, field_name)
        + b"".join(pw.len_field(5, _kv(k, v)) for k, v in params)
        + pw.string_field(6, field_name)
    )


# --------------------------------------------------------------------------------------------------
# encoding: clearing


def _literal(value: Any) -> str:
    """A key or namespace as a Milvus expression literal: integers bare, strings double-quoted and escaped."""
    if isinstance(value, int):
        return str(value)
    return orjson.dumps(str(value)).decode()  # JSON escapes (\" \\ \n \uXXXX) are the parser's too


def all_rows_expr(layout: Layout) -> str:
    """An expression every key satisfies (Milvus needs one to delete or query by expression)."""
    if layout.key_int64:
        return f"{layout.key} <= 0 or {layout.key} > 0"  # -2**63 as a literal overflows the parser
    return f'{layout.key} >= ""'


def encode_delete(collection: str, expr: str, *, partition: str | None = None) -> bytes:
    """``DeleteRequest{collection_name 3, partition_name 4, expr 5}``; consistency_level 7 left Strong (0)."""
    return (
        pw.string_field(3, collection)
        + (pw.string_field(4, partition) if partition else b"")
        + pw.string_field(5, expr)
    )


def encode_query_keys(collection: str, layout: Layout, partition: str, limit: int) -> bytes:
    """``QueryRequest{collection_name 3, expr 4, output_fields 5, partition_names 6, query_params 9}``: a
    page of keys; consistency_level 11 and use_default_consistency 12 left unset, so Strong."""
    return (
        pw.string_field(3, collection)
        + pw.string_field(4, all_rows_expr(layout))
        + pw.string_field(5, layout.key)
        + pw.string_field(6, partition)
        + pw.len_field(9, _kv("limit", str(limit)))
    )


def keys_of(reply: pw.FieldReader, layout: Layout) -> list[Any]:
    """The key column of ``QueryResults{fields_data 2}``: ``long_data`` (3) or ``string_data`` (6)."""
    for raw in reply.fields.get(2, []):
        data = pw.FieldReader(raw)
        if data.str(2) != layout.key:
            continue
        scalars = data.message(3)
        if scalars is None:
            return []
        if layout.key_int64:
            longs = scalars.message(3)
            values = longs.packed_varints(1) if longs is not None else []
            return [v - (1 << 64) if v >= 1 << 63 else v for v in values]
        strings = scalars.message(6)
        return [bytes(v).decode() for v in strings.fields.get(1, [])] if strings is not None else []
    return []


# --------------------------------------------------------------------------------------------------
# encoding: the upsert


def _json(value: Any) -> bytes:
    return orjson.dumps(value, default=str, option=orjson.OPT_SERIALIZE_NUMPY)


def _message(field_number: int, parts: list[Any]) -> list[Any]:
    """A length-delimited field around ``parts`` without joining them: vectors are copied once, at the end."""
    return [pw.key(field_number, pw.LEN), pw.varint(sum(len(p) for p in parts)), *parts]


def _field_data(
    dtype: int, name: str, slot: int, payload: list[Any], *, dynamic: bool = False, valid: bytes = b""
) -> list[Any]:
    """``FieldData{type 1, field_name 2, scalars 3 | vectors 4, is_dynamic 6, valid_data 7}`` as request field 5."""
    parts = [pw.varint_field(1, dtype), pw.string_field(2, name), *_message(slot, payload)]
    if dynamic:
        parts.append(pw.varint_field(6, 1))
    if valid:
        parts.append(pw.len_field(7, valid))
    return _message(5, parts)


def _strings(values: list[str]) -> list[Any]:
    out: list[Any] = []
    for text in values:
        data = text.encode()
        out += [b"\x0a", pw.varint(len(data)), data]
    return out


def _blobs(values: list[bytes]) -> list[Any]:
    out: list[Any] = []
    for data in values:
        out += [b"\x0a", pw.varint(len(data)), data]
    return out


def _scalar_payload(dtype: int, values: list[Any]) -> list[Any]:
    """``ScalarField`` holding ``values`` (non-null ones only: nulls live in ``valid_data``)."""
    if dtype == BOOL:
        return _message(1, [pw.len_field(1, bytes(int(v) for v in values))] if values else [])
    if dtype in (INT8, INT16, INT32, INT64):
        slot = 3 if dtype == INT64 else 2
        packed = b"".join(pw.varint(int(v)) for v in values)
        return _message(slot, [pw.len_field(1, packed)] if values else [])
    if dtype in (FLOAT, DOUBLE):
        data = np.asarray(values, dtype="<f4" if dtype == FLOAT else "<f8").tobytes()
        return _message(4 if dtype == FLOAT else 5, [pw.len_field(1, data)] if values else [])
    if dtype in (VARCHAR, STRING):
        return _message(6, _strings(values))
    return _message(9, _blobs([_json(v) for v in values]))  # JSON


def _scalar_problem(f: ScalarField, value: Any) -> str | None:
    """Why ``value`` cannot go into field ``f``, or ``None`` if it can."""
    if f.dtype == JSON:
        return None
    ok: bool
    if f.dtype == BOOL:
        ok = isinstance(value, bool | np.bool_)
    elif f.dtype in INT_RANGES:
        bits = INT_RANGES[f.dtype]
        ok = (
            isinstance(value, int | np.integer)
            and not isinstance(value, bool)
            and bool(-(1 << bits) <= value < (1 << bits))
        )
    elif f.dtype in (FLOAT, DOUBLE):
        ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    else:
        ok = isinstance(value, str)
    return None if ok else f"field {f.name!r} (data type {f.dtype}) cannot hold {value!r}"


def _key_values(batch: RowBatch, layout: Layout, reasons: dict[int, str]) -> list[Any]:
    ids = batch.ids
    if not layout.key_int64:
        return [i if isinstance(i, str) else str(i) for i in ids]
    out: list[Any] = []
    for row, value in enumerate(ids):
        if isinstance(value, str):
            text = value.strip()
            value = int(text) if text.lstrip("-").isdigit() else None
        if not isinstance(value, int) or not -(1 << 63) <= value < (1 << 63):
            reasons.setdefault(
                row,
                f"id {ids[row]!r} is not a 64-bit integer; collection {layout.collection} has an INT64 primary key",
            )
            value = 0
        out.append(value)
    return out


def _split_metadata(
    batch: RowBatch, layout: Layout, reasons: dict[int, str]
) -> tuple[dict[str, list[Any]], list[bytes]]:
    """Per declared scalar field its column (``None`` = null), and the ``$meta`` JSON of each row."""
    n = len(batch)
    rows = batch.metadata if batch.metadata is not None else [None] * n
    columns: dict[str, list[Any]] = {f.name: [None] * n for f in layout.scalars}
    meta: list[bytes] = []
    if not layout.scalars:
        meta = [_json(md) if md else b"{}" for md in rows] if layout.dynamic else []
        if not layout.dynamic:
            for row, md in enumerate(rows):
                if md:
                    reasons.setdefault(row, _no_field(layout, next(iter(md))))
        return columns, meta
    declared = {f.name for f in layout.scalars}
    for row, md in enumerate(rows):
        md = md or {}
        for f in layout.scalars:
            value = batch.namespace if f.name == layout.partition_key and batch.namespace else md.get(f.name)
            if value is None:
                if f.required:
                    reasons.setdefault(
                        row, f"no value for field {f.name!r} of collection {layout.collection}"
                    )
                continue
            problem = _scalar_problem(f, value)
            if problem:
                reasons.setdefault(row, problem)
            else:
                columns[f.name][row] = value
        rest = {k: v for k, v in md.items() if k not in declared}
        if layout.dynamic:
            meta.append(_json(rest) if rest else b"{}")
        elif rest:
            reasons.setdefault(row, _no_field(layout, next(iter(rest))))
    return columns, meta


def _no_field(layout: Layout, name: str) -> str:
    return f"metadata key {name!r}: collection {layout.collection} has no such field and its dynamic field is off"


def _sparse_rows(batch: RowBatch, layout: Layout, reasons: dict[int, str]) -> list[bytes]:
    """Each row's ``(uint32 index, float32 value)`` little-endian pairs; an empty row where there is none."""
    if batch.sparse is None:
        return [b""] * len(batch) if layout.sparse else []
    if layout.sparse is None:
        for row, entry in enumerate(batch.sparse):
            if entry is not None:
                reasons.setdefault(
                    row, f"row has a sparse vector but collection {layout.collection} has no sparse field"
                )
        return []
    pair = np.dtype([("index", "<u4"), ("value", "<f4")])
    out: list[bytes] = []
    for entry in batch.sparse:
        if entry is None or not len(entry[0]):
            out.append(b"")
            continue
        indices, values = entry
        pairs = np.empty(len(indices), dtype=pair)
        pairs["index"], pairs["value"] = indices, values
        out.append(pairs.tobytes())  # indices arrive sorted ascending (rows.py checks)
    return out


def encode_upsert(batch: RowBatch, layout: Layout, *, partition: str | None = None) -> Encoded:
    """``UpsertRequest{collection_name 3, partition_name 4, fields_data 5, num_rows 7}`` for the rows it can hold."""
    reasons: dict[int, str] = {}
    keys = _key_values(batch, layout, reasons)
    columns, meta = _split_metadata(batch, layout, reasons)
    sparse = _sparse_rows(batch, layout, reasons)
    matrix = batch.vectors
    if matrix is None:
        raise ConfigError(f"milvus collection {layout.collection} needs a dense vector in every row")
    refused: list[BatchFailure] = []
    sent_ids: list[Any] | None = None
    if reasons:
        by_reason: dict[str, list[str]] = {}
        for row, reason in sorted(reasons.items()):
            by_reason.setdefault(reason, []).append(str(batch.ids[row]))
        refused = [
            BatchFailure(ids=tuple(ids), error=reason, error_type="Invalid")
            for reason, ids in by_reason.items()
        ]
        keep = [i for i in range(len(batch)) if i not in reasons]
        if not keep:
            return Encoded(body=b"", sent=0, sent_ids=[], refused=refused)
        keys = [keys[i] for i in keep]
        columns = {name: [col[i] for i in keep] for name, col in columns.items()}
        meta = [meta[i] for i in keep] if meta else meta
        sparse = [sparse[i] for i in keep] if sparse else sparse
        matrix = matrix[keep]
        sent_ids = [batch.ids[i] for i in keep]
    n = len(keys)
    parts: list[Any] = [pw.string_field(3, layout.collection)]
    if partition:
        parts.append(pw.string_field(4, partition))
    if layout.key_int64:
        key_payload = _message(3, [pw.len_field(1, b"".join(pw.varint(k) for k in keys))])
        parts += _field_data(INT64, layout.key, 3, key_payload)
    else:
        parts += _field_data(VARCHAR, layout.key, 3, _message(6, _strings(keys)))
    raw = memoryview(np.ascontiguousarray(matrix, dtype="<f4")).cast("B")  # type: ignore[arg-type]
    dim = matrix.shape[1]
    parts += _field_data(
        FLOAT_VECTOR,
        layout.vector,
        4,
        [pw.varint_field(1, dim), *_message(2, [b"\x0a", pw.varint(len(raw)), raw])],
    )
    if layout.sparse:
        # as pymilvus's row upsert: contents only; the server reads each row's pairs (no dim fields)
        parts += _field_data(SPARSE_FLOAT_VECTOR, layout.sparse, 4, _message(6, _blobs(sparse)))
    for f in layout.scalars:
        column = columns[f.name]
        valid = b"" if f.required else bytes(v is not None for v in column)
        values = [v for v in column if v is not None]
        parts += _field_data(f.dtype, f.name, 3, _scalar_payload(f.dtype, values), valid=valid)
    if layout.dynamic:
        parts += _field_data(JSON, DYNAMIC_FIELD, 3, _message(9, _blobs(meta)), dynamic=True)
    parts.append(pw.varint_field(7, n))
    return Encoded(body=b"".join(parts), sent=n, sent_ids=sent_ids, refused=refused)
