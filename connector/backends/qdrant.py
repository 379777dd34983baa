"""Qdrant: ``qdrant://host[:6333]/collection`` (REST, JSON) and ``qdrant+grpc://host[:6334]/collection`` (gRPC).

REST: ``PUT /collections/{c}/points?wait=true`` with a columnar ``PointsBatch`` body whose vectors
are written from the float32 matrix (``jsonvec``: shortest float32 reprs, never doubles). gRPC:
``/qdrant.Points/Upsert`` with ``UpsertPoints`` encoded by hand (field numbers in WIRE.md), each
vector copied straight from the matrix buffer into ``Vector.dense``. The control plane (describe,
create, clear) goes over the same transport, so a gRPC-only deployment needs no REST port.

Ids follow ``connector.ids``: unsigned integers and UUIDs as they are, any other id its UUIDv5,
with the original kept in the payload key ``original_id_key``. The namespace is a payload key
(``namespace_key``) or, with ``namespace_mode="shard_key"``, the request's shard key. Qdrant
applies or rejects a request whole and its refusals name no point ("Vector dimension error:
expected dim: 768, got 1024"), so the engine isolates the refused rows by splitting.

Deletes: ``POST /collections/{c}/points/delete`` / ``/qdrant.Points/Delete`` (same ``wait`` and
``ordering``), the points by id, ids mapped as upserts map them. In a namespace, only that
namespace's: with ``namespace_mode=payload`` a filter ``has_id`` and the namespace key's match (a point
another namespace wrote stays), with ``shard_key`` the request's shard key. A missing id is no error.
In payload mode the default namespace, ``""`` as much as none, is the points without the namespace key:
an upsert in it writes none, and a delete of no namespace or ``""``, or a clear of ``""``, matches
``is_empty`` on the key (a delete by ids alone would remove them from every namespace).

Names: a collection name Qdrant takes in no request (over 255 characters, ``/`` or NUL) is a ``ConfigError``
at once; what only a create refuses (a collection or vector name holding ``< > : " \\ | ? *`` or ``\\x1F``, a
vector name over 200 bytes, a size outside 1 to 65,536) just before ``create=true`` would send one: a
collection that is there may be older than those rules, and is written.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar, Literal
from urllib.parse import quote

import msgspec
import numpy as np
import orjson

from .. import protowire as pw
from .. import speedups
from ..errors import AuthError, ConfigError, DimensionMismatch, NotFound, Rejected, ServerError
from ..ids import MAX_UINT64, ORIGINAL_ID_KEY, converted, point_id
from ..jsonvec import json_rows
from ..options import BackendOptions, collection_of, parse_uri
from ..report import BatchFailure
from ..rows import DELETE, MultiVectors, RowBatch, RowRules
from ..rows.checks import metadata_json
from ..transports.base import Transport, WireReply, WireRequest
from ..transports.http import error_for_status as http_error
from . import sizing
from .base import Backend, BatchOutcome, RequestLimits, left_out_problem
from .integers import INT64, integer_outside
from .sizing import json_bytes_per_float

__all__ = [
    "QdrantBackend",
    "QdrantOptions",
    "encode_grpc",
    "encode_grpc_delete",
    "encode_json",
    "encode_json_delete",
]

REST_PORT, GRPC_PORT = 6333, 6334
GRPC_UPSERT = "/qdrant.Points/Upsert"
GRPC_DELETE = "/qdrant.Points/Delete"
GRPC_GET_COLLECTION = "/qdrant.Collections/Get"
GRPC_CREATE_COLLECTION = "/qdrant.Collections/Create"
GRPC_CREATE_SHARD_KEY = "/qdrant.Collections/CreateShardKey"
GRPC_CLUSTER_INFO = "/qdrant.Collections/CollectionClusterInfo"

DISTANCE = {"cosine": "Cosine", "euclidean": "Euclid", "dotproduct": "Dot"}
_GRPC_DISTANCE = {"Cosine": 1, "Euclid": 2, "Dot": 3}
_GRPC_ORDERING = {"weak": 0, "medium": 1, "strong": 2}
_CLOCK_REJECTED = 3  # UpdateStatus.ClockRejected: the update was refused, nothing applied

# Qdrant's names and sizes (qdrant/qdrant lib/common/common/src/validation.rs, VectorParams): a collection
# name has 1 to 255 characters, none of _NAME_CHARS to be created (a collection made before Qdrant 1.5 may
# hold all but / and NUL, so only those are refused in a name that is there); a vector name at most 200 UTF-8
# bytes and none of _NAME_CHARS to be created (Qdrant 1.18+); a vector 1 to 65,536 floats
_DIGITS = re.compile(r"0|[1-9][0-9]{0,19}")  # an unsigned integer as Qdrant writes a numeric shard key
_NAME_CHARS = '<>:"/\\|?*\0\x1f'
_LEGACY_NAME_CHARS = "/\0"
MAX_COLLECTION_NAME_CHARS, MAX_VECTOR_NAME_BYTES, MAX_DIMENSION = 255, 200, 65_536
# a multi-vector's floats, all its vectors together (MAX_MULTIVECTOR_FLATTENED_LEN, release builds): Qdrant's
# validation refuses the whole request for one such row, so it fails alone before sending
MAX_MULTIVECTOR_FLOATS = 1024 * 1024
logger = logging.getLogger("vectordb.connector.qdrant")
# Qdrant applies no update of a custom-sharded collection without a shard key ("Shard key not specified")
_NO_SHARD_KEY = (
    "option namespace_mode=shard_key: {what} names no shard key, and Qdrant takes no update of a "
    "custom-sharded collection without one; give the namespace (option namespace or namespace_column, or "
    "the call's namespace), one call per shard key"
)
# a namespace_column cell that is null or "", or a dict row without a namespace among rows with one (and no
# call namespace to stand in): its rows fail, not the write
_NO_ROW_SHARD_KEY = (
    "{what} row's namespace is null or empty, and with option "
    "namespace_mode=shard_key a row's namespace is its shard key (Qdrant takes no update of a custom-sharded "
    "collection without one); give the row a namespace (or the call one for rows without)"
)
GRPC_HEALTH_CHECK = "/qdrant.Qdrant/HealthCheck"
# the statuses of a refused request (REST, gRPC): a delete in a missing shard key is read, not raised
_REFUSED: frozenset[int | str] = frozenset({400, "INVALID_ARGUMENT"})
_SHOWN_CHARS = '< > : " / \\ | ? * NUL and \\x1F'
# a filter's key is a JSON path (qdrant/qdrant lib/segment/src/json_path/parse.rs): a key of these characters
# as it is, any other in double quotes, which take every character but '"' and '\\' (no escapes)
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _collection_name_problem(name: str, *, create: bool) -> str | None:
    """Why Qdrant refuses ``name`` for a collection (``create``: to make one; else in any request), or None."""
    if not 1 <= len(name) <= MAX_COLLECTION_NAME_CHARS:
        return f"is {len(name)} characters long; Qdrant takes 1 to {MAX_COLLECTION_NAME_CHARS}"
    bad = next((c for c in (_NAME_CHARS if create else _LEGACY_NAME_CHARS) if c in name), None)
    if bad is None:
        return None
    return f"holds {bad!r}, and Qdrant makes no collection whose name holds any of {_SHOWN_CHARS}"


def _vector_name_problem(name: str) -> str | None:
    """Why Qdrant refuses ``name`` for a vector of a collection it makes, or None."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_VECTOR_NAME_BYTES:
        return f"is {size} bytes long; Qdrant takes at most {MAX_VECTOR_NAME_BYTES}"
    bad = next((c for c in _NAME_CHARS if c in name), None)
    if bad is None:
        return None
    return f"holds {bad!r}, and Qdrant makes no vector whose name holds any of {_SHOWN_CHARS}"


class QdrantOptions(BackendOptions, kw_only=True, forbid_unknown_fields=True):
    vector_name: str | None = None  # a named dense vector; None: the collection's unnamed vector
    sparse_vector_name: str = "sparse"  # the named sparse vector that option sparse_column fills
    namespace_mode: Literal["payload", "shard_key"] = "payload"
    namespace_key: str = "namespace"  # payload key holding the namespace (namespace_mode=payload)
    original_id_key: str = ORIGINAL_ID_KEY  # payload key keeping an id that was turned into a UUID
    wait: bool = True  # false: Qdrant acknowledges before applying (use ordering for consistency)
    ordering: Literal["weak", "medium", "strong"] | None = None
    # namespace_mode=shard_key: a namespace is sent as a text shard key, or as a number (Qdrant's keys are
    # either); None: as the collection's keys are, read by check_target (a new collection's: text)
    shard_key_type: Literal["text", "number"] | None = None


def _check_sparse_name(options: QdrantOptions) -> None:
    """Refuse a dense or multi-vector name equal to ``sparse_vector_name`` when ``sparse_column`` fills it:
    a point holds one vector a name, so one of the two would be lost (over gRPC the sparse one, silently;
    over REST the dense one, and Qdrant refuses every row), and Qdrant 1.13+ refuses such a collection."""
    if options.sparse_column is None:
        return
    name = options.sparse_vector_name
    for option in ("vector_columns", "multi_vector_columns"):
        if name in (getattr(options, option) or {}):
            raise ConfigError(
                f"options {option} and sparse_vector_name: both name the vector {name!r}; a point holds "
                "one vector a name, so give the sparse vector another name (option sparse_vector_name)"
            )
    if options.vector_name == name:
        raise ConfigError(
            f"options vector_name and sparse_vector_name: both name the vector {name!r}; a point holds one "
            "vector a name, so give the sparse vector another name (option sparse_vector_name)"
        )


def _check_payload_keys(options: QdrantOptions) -> None:
    """Refuse payload keys the connector cannot keep apart or filter on: an empty one, a ``namespace_key``
    no filter path can name (``"`` or ``\\``: ``_filter_key``), and one key for both the namespace and the
    original id (one would overwrite the other)."""
    for option in ("namespace_key", "original_id_key"):
        if not getattr(options, option):
            raise ConfigError(
                f"option {option}: give a payload key; an empty one is no key Qdrant can filter on"
            )
    key = options.namespace_key
    bad = next((c for c in '"\\' if c in key), None)
    if bad is not None:
        raise ConfigError(
            f"option namespace_key: {key[:80]!r} holds {bad!r}, which no Qdrant filter path can name "
            "(deletes and clears filter on the namespace's key); choose another key"
        )
    if key == options.original_id_key:
        raise ConfigError(
            f"options namespace_key and original_id_key: both are {key!r}; a point's namespace and its "
            "original id need a payload key each"
        )


def _filter_key(key: str) -> str:
    """A payload key as a filter names it: a JSON path, so a key of other characters than letters, digits,
    ``_`` and ``-`` goes in double quotes (``"tenant.id"``: the one key, not ``tenant`` then ``id``)."""
    return key if _PLAIN_KEY.fullmatch(key) else f'"{key}"'


class _Target:
    """What ``check_target`` learnt: the collection's dense size, sparse names and sharding."""

    __slots__ = ("dimension", "multi", "named", "sharded", "sparse_names")

    def __init__(
        self,
        dimension: int | None,
        named: dict[str, int],
        sparse_names: set[str],
        sharded: bool,
        multi: set[str] | None = None,
    ):
        self.dimension = dimension  # the unnamed vector's size, if the collection has one
        self.named = named  # named dense vectors (multi-vectors included) and their sizes
        self.sparse_names = sparse_names
        self.sharded = sharded  # sharding_method = custom
        self.multi = multi or set()  # the named vectors with a multivector_config (max_sim)


class QdrantBackend(Backend[QdrantOptions]):
    name: ClassVar[str] = "qdrant"
    named_vectors = multi_vectors = "yes"
    options_type: ClassVar[type[BackendOptions]] = QdrantOptions

    # Qdrant takes 32 MB per request by default (service.max_request_size_mb, REST and gRPC) and
    # counts no rows; 256 rows keep several requests in flight for a partition of a few thousand rows.
    limits = RequestLimits(max_rows=100_000, max_bytes=32 << 20, default_rows=256, default_bytes=16 << 20)
    # ids are points' ids (a UUID in any spelling is one point); one point per id whatever its namespace,
    # unless the namespace is a shard key (each shard its own points)
    rules = RowRules(
        max_id_length=65_535, max_metadata_bytes=None, allow_sparse_only=True, numeric_ids=True, uuid_ids=True
    )

    def __init__(self, options: QdrantOptions) -> None:
        super().__init__(options)
        uri = parse_uri(options.uri)
        if uri.transport not in (None, "grpc", "rest", "http", "https"):
            raise ConfigError(
                f"option uri: qdrant has no transport {uri.transport!r}; use qdrant:// or qdrant+grpc://"
            )
        if not uri.host:
            raise ConfigError("option uri: qdrant needs a host, e.g. qdrant://localhost:6333/docs")
        collection = collection_of(uri.path, options.collection)
        if not collection or "/" in collection:
            raise ConfigError(
                "option uri: qdrant needs one collection name, as qdrant://host:6333/COLLECTION "
                "or with option collection"
            )
        self._collection_option = "uri" if uri.path else "collection"  # the option that names it
        problem = _collection_name_problem(collection, create=False)
        if problem:  # no request of Qdrant's takes it
            raise ConfigError(
                f"option {self._collection_option}: collection name {collection[:80]!r} {problem}"
            )
        if options.vector_name == "":
            raise ConfigError('option vector_name: give a name, or leave it out for the unnamed vector ""')
        if options.vector_name is not None and (options.vector_columns or options.multi_vector_columns):
            raise ConfigError(
                "option vector_name: names the one dense vector; with vector_columns or multi_vector_columns "
                f"each vector is written under its own name (e.g. vector_columns='{options.vector_name}:COLUMN')"
            )
        _check_sparse_name(options)
        _check_payload_keys(options)
        self.rules = dataclasses.replace(type(self).rules, namespaced=options.namespace_mode == "shard_key")
        self.grpc = uri.transport == "grpc"
        self.host = uri.host
        self.port = uri.port or (GRPC_PORT if self.grpc else REST_PORT)
        self.tls = uri.tls(options.tls)
        self.collection = collection
        self._path = f"/collections/{quote(collection, safe='')}"
        self._target: _Target | None = None
        # create=true, the collection missing and a dimension not known yet: it is made by the first upsert
        self._awaiting_create = False
        # create=true with namespace_mode=shard_key: the transport check_target used, and the shard keys made
        # or found through it; refuse() makes each namespace's key the first time a batch brings it
        self._shard_transport: Transport | None = None
        self._shard_keys_made: set[str] = set()
        self._made = False  # this write's create=true made the collection (for _unheld_sparse's advice)

    def describe(self) -> str:
        return f"{'qdrant+grpc' if self.grpc else 'qdrant'}://{self.host}:{self.port}/{self.collection}"

    def open_transport(self) -> Transport:
        key = self.options.credential()
        auth = (("api-key", key),) if key else ()
        if self.grpc:
            from ..transports.grpc import GrpcTransport

            return GrpcTransport(
                f"{self.host}:{self.port}",
                tls=self.tls,
                secrets=self.secrets,
                metadata=auth,
                label=self.describe(),
            )
        from ..transports.http import HttpTransport

        scheme = "https" if self.tls else "http"
        return HttpTransport(
            f"{scheme}://{self.host}:{self.port}",
            secrets=self.secrets,
            headers=(*auth, ("Content-Type", "application/json")),
            max_connections=max(8, self.options.max_concurrency),
            label=self.describe(),
        )

    # -- the control plane ------------------------------------------------------------------------

    def check_target(self, transport: Transport, dimension: int | None) -> None:
        """Read the collection's vectors config (with ``create=true``, make a missing collection from
        the data's dimension and ``metric``), and check the vector names and the dimension against it.
        Without option ``op_column`` every row upserts, so a write of the one dense vector into a collection
        with other vectors is refused here (``_check_one_vector_kept``), before any row or task."""
        try:
            target = self._describe_collection(transport)
        except NotFound:
            if not self.options.create:
                raise ConfigError(
                    f"{self.describe()}: collection {self.collection!r} does not exist "
                    "(option create=true makes it)"
                ) from None
            self._check_creatable({self.options.vector_name or "": dimension})
            self._create_collection(transport, dimension)
            target = self._describe_collection(transport)
        self._create_shard_keys(transport)
        self._target = target
        self._check_names(target)
        if self.options.op_column is None:  # every row upserts: refused here, on a job's driver
            self._check_one_vector_kept(target)
        size = target.named.get(self.options.vector_name) if self.options.vector_name else target.dimension
        if dimension and size and dimension != size:
            raise DimensionMismatch(
                f"dimension mismatch: {self.describe()} has vectors of dimension {size}, the data has {dimension}",
                target_dimension=size,
            )

    @property
    def _named_mode(self) -> bool:
        return bool(self.options.vector_columns or self.options.multi_vector_columns)

    def check_named_target(
        self, transport: Transport, dimensions: Mapping[str, int | None]
    ) -> dict[str, int]:
        """Check every name of the write against the collection's vectors config (``Backend``): present,
        dense or multi-vector (``multivector_config``) as asked, and a stated size (option
        ``vector_dimensions``) its size; with ``create=true``, make a missing collection with every name
        once every dimension is known. Returns each name's size in the collection."""
        opts = self.options
        multi = set(opts.multi_vector_columns or {})
        try:
            target = self._describe_collection(transport)
        except NotFound:
            if not opts.create:
                raise ConfigError(
                    f"{self.describe()}: collection {self.collection!r} does not exist "
                    "(option create=true makes it)"
                ) from None
            self._check_creatable(dimensions)  # the names at once, each size once known
            if any(size is None for size in dimensions.values()):
                self._awaiting_create = True  # a delete sent meanwhile finds nothing to delete
                return {}  # made once every name's dimension is known
            self._create_collection(
                transport, None, {n: int(d) for n, d in dimensions.items() if d is not None}
            )
            target = self._describe_collection(transport)
        self._awaiting_create = False
        self._create_shard_keys(transport)
        self._target = target
        self._check_names(target)
        stated = opts.vector_dimensions or {}
        fixed: dict[str, int] = {}
        for name in dimensions:
            option = "multi_vector_columns" if name in multi else "vector_columns"
            if name not in target.named:
                raise ConfigError(
                    f"option {option}: collection {self.collection!r} has no vector {name!r} "
                    f"(it has {sorted(target.named) or 'only an unnamed vector'})"
                )
            if (name in multi) != (name in target.multi):
                kind, other = (
                    ("a multi-vector (multivector_config max_sim)", "multi_vector_columns")
                    if name in target.multi
                    else ("a dense vector (no multivector_config)", "vector_columns")
                )
                raise ConfigError(
                    f"option {option}: vector {name!r} of collection {self.collection!r} is {kind}; "
                    f"write it with option {other}"
                )
            have = target.named[name]
            if name in stated and stated[name] != have:
                what = "its vectors' length" if name in multi else "dimension"
                raise ConfigError(
                    f"option vector_dimensions: vector {name!r} of {self.describe()} has {what} {have}, "
                    f"not {stated[name]}"
                )
            fixed[name] = have  # rows whose vectors have another length fail alone
        self._check_none_left_out(target, set(dimensions))
        return fixed

    def refuse(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """Every row but those with a multi-vector of ``MAX_MULTIVECTOR_FLOATS`` floats or more, those
        carrying a sparse vector the collection has no sparse vector to hold (``_unheld_sparse``), and with
        ``namespace_mode=shard_key`` those whose namespace cell names no shard key. With option
        ``op_column`` (a write that may only delete, which erases no vector), ``check_target`` lets a write of
        the one dense vector into a collection with other vectors through: its upserts are refused here."""
        no_shard_key = self._no_shard_key(batch)
        if no_shard_key is not None:
            return None, [no_shard_key]
        if (
            batch.op != DELETE
            and self.options.op_column
            and not self._named_mode
            and self._target is not None
        ):
            self._check_one_vector_kept(self._target)
        if batch.namespace:  # create=true, namespace_mode=shard_key: its shard key, before its first rows
            self._made_shard_key(batch.namespace)
        reasons = self._payload_key_problems(batch)
        unheld = self._unheld_sparse() if batch.sparse is not None else None
        if unheld is not None and batch.sparse is not None:
            for i in (i for i, sparse in enumerate(batch.sparse) if sparse is not None):
                reasons.setdefault(i, unheld)
        for name, multi in batch.multi_vectors.items():  # a row Qdrant's validation would refuse
            floats = multi.counts() * multi.dim
            for i in np.flatnonzero(floats >= MAX_MULTIVECTOR_FLOATS).tolist():
                reasons.setdefault(
                    i,
                    f"multi-vector {name!r} holds {int(floats[i]):,} floats; Qdrant takes fewer than "
                    f"{MAX_MULTIVECTOR_FLOATS:,} (its vectors times their length)",
                )
        return batch.without(reasons)

    def _unheld_sparse(self) -> str | None:
        """Why a row carrying a sparse vector fails, where the collection has no sparse vector
        ``sparse_vector_name`` to hold it, or None. Without option ``sparse_column`` dict rows (``sparse_values``)
        and Beam elements (a Chunk's ``sparse_embedding``) still carry one, which the encoders send under that
        name: Qdrant refused every such row with "Not existing vector name error: sparse", which says
        nothing of the option or the collection."""
        opts, target = self.options, self._target
        name = opts.sparse_vector_name
        if target is None or name in target.sparse_names:
            return None
        key = opts.sparse_column or "sparse_values"
        source = (
            f"option sparse_column {key!r}"
            if opts.sparse_column
            else f"{key!r}: a dict row's key, a Beam Chunk's sparse_embedding"
        )
        if self._made:
            fix = (
                f"this write's create=true made it without one, as it does unless option sparse_column names "
                f"the rows' sparse key: delete the collection and write again with sparse_column={key!r}"
            )
        else:
            fix = (
                "name a sparse vector it has with option sparse_vector_name, or write into a collection made "
                f"with one (create=true makes it when option sparse_column names the rows' sparse key, "
                f"sparse_column={key!r})"
            )
        return (
            f"the row carries a sparse vector ({source}), and collection {self.collection!r} has no sparse "
            f"vector {name!r} to hold it (its sparse vectors: {sorted(target.sparse_names) or 'none'}); {fix}"
        )

    def _no_shard_key(self, batch: RowBatch) -> BatchFailure | None:
        """With ``namespace_mode=shard_key``, a batch of no namespace: the failure of its rows alone where
        rows could name one (null or ``""`` cells of ``namespace_column``; dict rows and Beam elements
        without a ``namespace``, wherever they come in the write), else a ``ConfigError``: nothing could give
        one (no option ``namespace`` or ``namespace_column``, no call namespace, rows that cannot carry one),
        raised at the first batch, before any row is sent."""
        opts = self.options
        if opts.namespace_mode != "shard_key":
            return None
        if batch.namespace:  # where the shard keys are numbers, one that is none fails its rows alone
            problem = _number_problem(batch.namespace, opts)
            return (
                None if problem is None else batch.failure(range(len(batch)), problem, error_type="Invalid")
            )
        if opts.namespace_column:
            reason = _NO_ROW_SHARD_KEY.format(what=f"option namespace_column {opts.namespace_column!r}: the")
        elif batch.own_namespaces:
            reason = _NO_ROW_SHARD_KEY.format(what="the")
        else:
            what = "a delete without a namespace" if batch.op == DELETE else "a write without a namespace"
            raise ConfigError(_NO_SHARD_KEY.format(what=what))
        return batch.failure(range(len(batch)), reason, error_type="Invalid")

    def _payload_key_problems(self, batch: RowBatch) -> dict[int, str]:
        """Rows whose metadata holds a payload key the connector writes itself, with another value: the
        namespace's (``namespace_key``, payload mode), and on a row whose id becomes a UUID the original id's
        (``original_id_key``). Written over, the metadata would be lost; with no namespace, it would put the
        point into the namespace it names, where deletes in the row's own namespace do not find it."""
        if batch.metadata is None:
            return {}
        opts = self.options
        namespace_key = opts.namespace_key if opts.namespace_mode == "payload" else None
        namespace = _payload_namespace(batch, opts)
        ids: list[int | str] | None = None
        reasons: dict[int, str] = {}
        for i, metadata in enumerate(batch.metadata):
            if not metadata:
                continue
            if namespace_key in metadata:
                value = metadata[namespace_key]
                same = value is None if namespace is None else isinstance(value, str) and value == namespace
                if not same:
                    where = f"namespace {namespace!r}" if namespace else "the default namespace"
                    reasons[i] = (
                        f"metadata key {namespace_key!r} is the payload key of the point's namespace (option "
                        f"namespace_key), and the row is in {where}; rename the key or choose another "
                        "namespace_key"
                    )
                    continue
            wide = _wide_metadata(metadata)
            if wide is not None:
                reasons[i] = wide
                continue
            if opts.original_id_key in metadata:
                ids = ids if ids is not None else _point_ids(batch.ids)
                raw = batch.ids[i]
                if _converted(raw, ids[i]) and metadata[opts.original_id_key] != _original_id(raw):
                    reasons[i] = (
                        f"metadata key {opts.original_id_key!r} is the payload key that keeps the row's own id, "
                        "which Qdrant stores as a UUID (option original_id_key); rename the key or choose "
                        "another original_id_key"
                    )
        return reasons

    def _check_creatable(self, dimensions: Mapping[str, int | None]) -> None:
        """Refuse, before the create is sent, what Qdrant would refuse in it (so nothing is made): the
        collection's name, the write's vector names, and each known size (``dimensions``: per name, ``""`` the
        unnamed vector). Checked only here: a collection that is there may be older than these rules."""
        opts = self.options
        problem = _collection_name_problem(self.collection, create=True)
        if problem:
            raise ConfigError(
                f"option {self._collection_option}: {self.describe()} cannot create collection: its name "
                f"{self.collection[:80]!r} {problem}"
            )
        named = [("vector_name", opts.vector_name)] if opts.vector_name is not None else []
        named += [("vector_columns", name) for name in opts.vector_columns or {}]
        named += [("multi_vector_columns", name) for name in opts.multi_vector_columns or {}]
        if opts.sparse_column:
            named.append(("sparse_vector_name", opts.sparse_vector_name))
        for option, name in named:
            problem = _vector_name_problem(name)
            if problem:
                raise ConfigError(
                    f"option {option}: vector name {name[:80]!r} {problem}; {self.describe()} cannot create "
                    f"collection {self.collection!r} with it"
                )
        multi = set(opts.multi_vector_columns or {})
        for name, size in sorted(dimensions.items()):
            if size is not None and not 1 <= size <= MAX_DIMENSION:
                option = "vector_column"
                if self._named_mode:
                    option = "multi_vector_columns" if name in multi else "vector_columns"
                what = f"vector {name!r} has" if self._named_mode else "the vectors have"
                raise ConfigError(
                    f"option {option}: {what} dimension {size}; Qdrant's vectors have 1 to {MAX_DIMENSION:,} "
                    f"floats, so {self.describe()} cannot make collection {self.collection!r} with it"
                    + (" (state its size with option vector_dimensions)" if size < 1 else "")
                )

    def _check_none_left_out(self, target: _Target, names: set[str], *, option: str | None = None) -> None:
        """Refuse a write that leaves out some of the collection's vectors (``names``: the dense and
        multi-vector names it writes; ``left_out_problem``)."""
        opts = self.options
        stored = {
            name: "multi_vector_columns" if name in target.multi else "vector_columns"
            for name in target.named
        }
        stored |= dict.fromkeys(target.sparse_names, "sparse_column")
        written = names | ({opts.sparse_vector_name} if opts.sparse_column else set())
        problem = left_out_problem(
            stored,
            written,
            collection=self.collection,
            database="Qdrant",
            item="point",
            columns="vector_columns, multi_vector_columns, sparse_column",
            option=option,
        )
        if problem:
            raise ConfigError(problem)

    def _check_one_vector_kept(self, target: _Target) -> None:
        """``_check_none_left_out`` for a write of the one dense vector (option ``vector_name``, or the
        unnamed one)."""
        name = self.options.vector_name
        dense, option = ({name}, "vector_name") if name is not None else (set(), "vector_column")
        self._check_none_left_out(target, dense, option=option)

    def _check_names(self, target: _Target) -> None:
        opts = self.options
        if self._named_mode:
            pass  # every name is checked by check_named_target
        elif opts.vector_name is not None and opts.vector_name not in target.named:
            raise ConfigError(
                f"option vector_name: collection {self.collection!r} has no dense vector {opts.vector_name!r} "
                f"(it has {sorted(target.named) or 'only an unnamed vector'})"
            )
        elif opts.vector_name is None and target.dimension is None and target.named:
            raise ConfigError(
                f"option vector_name: collection {self.collection!r} has named vectors only "
                f"({sorted(target.named)}); say which one to write"
            )
        if opts.sparse_column and opts.sparse_vector_name not in target.sparse_names:
            raise ConfigError(
                f"option sparse_vector_name: collection {self.collection!r} has no sparse vector "
                f"{opts.sparse_vector_name!r} (it has {sorted(target.sparse_names) or 'none'})"
            )
        if opts.namespace_mode == "shard_key" and not target.sharded:
            raise ConfigError(
                f"option namespace_mode=shard_key: collection {self.collection!r} is not sharded by "
                "shard keys (sharding_method custom)"
            )

    def _describe_collection(self, transport: Transport) -> _Target:
        if not self.grpc:
            reply = self.control(transport, WireRequest(f"GET {self._path}", b""))
            params = ((orjson.loads(reply.body or b"{}").get("result") or {}).get("config") or {}).get(
                "params"
            ) or {}
            vectors = params.get("vectors") or {}
            multi: set[str] = set()
            # the unnamed vector's params, not a map whose vector is named "size" (or "distance")
            if isinstance(vectors.get("size"), int) and isinstance(vectors.get("distance"), str):
                dimension, named = int(vectors["size"]), {}
            else:
                dimension, named = None, {k: int(v["size"]) for k, v in vectors.items()}
                multi = {k for k, v in vectors.items() if v.get("multivector_config")}
            return _Target(
                dimension,
                named,
                set(params.get("sparse_vectors") or {}),
                params.get("sharding_method") == "custom",
                multi,
            )
        body = pw.string_field(1, self.collection)  # GetCollectionInfoRequest{collection_name=1}
        reply = self.control(transport, WireRequest(GRPC_GET_COLLECTION, body))
        info = pw.FieldReader(reply.body).message(1)  # GetCollectionInfoResponse.result
        config = info.message(7) if info else None  # CollectionInfo.config
        params = config.message(1) if config else None  # CollectionConfig.params
        if params is None:
            return _Target(None, {}, set(), False)
        vectors = params.message(5)  # CollectionParams.vectors_config
        dimension, named, multi = None, {}, set()
        if vectors is not None and vectors.message(1) is not None:  # VectorsConfig.params
            dimension = vectors.message(1).int(1)  # type: ignore[union-attr]
        elif vectors is not None and vectors.message(2) is not None:  # VectorsConfig.params_map
            for entry in vectors.message(2).fields.get(1, []):  # type: ignore[union-attr]
                item = pw.FieldReader(entry)
                vector_params = item.message(2) or pw.FieldReader(b"")
                named[item.str(1)] = vector_params.int(1)
                if (
                    7 in vector_params.fields
                ):  # VectorParams.multivector_config (MaxSim is 0: an empty message)
                    multi.add(item.str(1))
        sparse = params.message(10)  # sparse_vectors_config: map = 1
        sparse_names = {pw.FieldReader(e).str(1) for e in (sparse.fields.get(1, []) if sparse else [])}
        return _Target(dimension, named, sparse_names, params.int(9) == 1, multi)

    def _create_collection(
        self, transport: Transport, dimension: int | None, named: dict[str, int] | None = None
    ) -> None:
        """Make the collection: one unnamed (or ``vector_name``) vector of ``dimension``, or with ``named``
        every named vector of a write with several (multi-vector names with ``multivector_config``).

        The sparse vector ``sparse_vector_name`` is made when option ``sparse_column`` is given (Milvus's
        ``_makes_sparse`` rule): what the driver and every task know alike. Not whenever rows might carry
        one: a collection that has a sparse vector is one every later write must fill
        (``_check_none_left_out``: an upsert replaces a point whole), so a dense-only write made with it would
        be refused right after the create and on every later run. Not by the rows of the batch that happens
        to come first: the create runs before any row is read where the dimension is stated (Spark's and
        Beam's drivers, option ``dimension``), and Beam's workers race to make it. Rows that carry a sparse
        vector without the option (dict rows' ``sparse_values``, a Chunk's ``sparse_embedding``) then fail
        alone before sending, saying so (``_unheld_sparse``)."""
        opts = self.options
        distance = DISTANCE[opts.metric]
        sparse = [opts.sparse_vector_name] if opts.sparse_column else []
        if dimension is None and not sparse and not named:
            raise ConfigError(
                f"{self.describe()}: cannot create collection {self.collection!r} without a dimension "
                "(option dimension, or rows with vectors)"
            )
        multi = set(opts.multi_vector_columns or {})
        custom = opts.namespace_mode == "shard_key"
        if self.grpc:
            body = pw.string_field(1, self.collection)
            if named:
                entries = b""
                for name, size in sorted(named.items()):
                    params = pw.varint_field(1, size) + pw.varint_field(2, _GRPC_DISTANCE[distance])
                    if name in multi:  # multivector_config=7 {comparator=1 MaxSim=0}: present, empty
                        params += pw.len_field(7, b"")
                    entries += pw.len_field(1, _map_entry(name, params))
                body += pw.len_field(10, pw.len_field(2, entries))  # VectorsConfig.params_map
            elif dimension is not None:
                params = pw.varint_field(1, dimension) + pw.varint_field(2, _GRPC_DISTANCE[distance])
                if opts.vector_name is None:
                    vectors = pw.len_field(1, params)
                else:
                    vectors = pw.len_field(2, pw.len_field(1, _map_entry(opts.vector_name, params)))
                body += pw.len_field(10, vectors)
            if custom:
                body += pw.varint_field(15, 1)  # ShardingMethod.Custom
            if sparse:
                body += pw.len_field(16, b"".join(pw.len_field(1, _map_entry(name, b"")) for name in sparse))
            request = WireRequest(GRPC_CREATE_COLLECTION, body)
        else:
            doc: dict[str, Any] = {}
            if named:
                doc["vectors"] = {
                    name: {"size": size, "distance": distance}
                    | ({"multivector_config": {"comparator": "max_sim"}} if name in multi else {})
                    for name, size in named.items()
                }
            elif dimension is not None:
                params_json = {"size": dimension, "distance": distance}
                doc["vectors"] = params_json if opts.vector_name is None else {opts.vector_name: params_json}
            if sparse:
                doc["sparse_vectors"] = {name: {} for name in sparse}
            if custom:
                doc["sharding_method"] = "custom"
            request = WireRequest(f"PUT {self._path}", orjson.dumps(doc))
        try:
            self.control(transport, request)
        except Rejected as exc:  # made meanwhile by another task (409 / ALREADY_EXISTS): use it
            if "already exists" not in str(exc):
                raise
        self._made = True

    def _learn_shard_key_type(self, transport: Transport) -> None:
        """Read whether the collection's shard keys are text or numbers (unless option shard_key_type says),
        so that namespace "1" names key 1 in a collection made with numbers, and check option namespace
        against it. Tasks get the kind the driver read (``resolved_options``)."""
        opts = self.options
        if opts.shard_key_type is None:
            try:
                keys = self._shard_keys(transport)
            except AuthError as exc:  # a key for points only may not read the cluster info (Qdrant: 403)
                logger.warning(
                    "%s: cannot read the collection's shard keys (%s); namespaces go as text keys: set option "
                    "shard_key_type=number if its keys are numbers",
                    self.describe(),
                    exc,
                )
                keys = []
            kinds = {type(k) for k in keys}
            if kinds == {int, str}:
                shown = ", ".join(repr(k) for k in sorted(keys, key=str)[:6])
                raise ConfigError(
                    f"option shard_key_type: collection {self.collection!r} has shard keys of both kinds, text "
                    f"and numbers ({shown}); say which kind the namespaces name (shard_key_type=text or number)"
                )
            self.options = opts = msgspec.structs.replace(
                opts, shard_key_type="number" if kinds == {int} else "text"
            )
        problem = None if opts.namespace is None else _number_problem(opts.namespace, opts)
        if problem is not None:
            raise ConfigError(f"option namespace: {problem} of {self.describe()}")

    def _shard_keys(self, transport: Transport) -> list[str | int]:
        """The collection's shard keys, as Qdrant keeps them: text or numbers (its cluster info's shards)."""
        keys: list[str | int] = []
        if self.grpc:  # CollectionClusterInfoResponse{local_shards=3, remote_shards=4}: {shard_key=4}
            body = pw.string_field(1, self.collection)
            info = pw.FieldReader(self.control(transport, WireRequest(GRPC_CLUSTER_INFO, body)).body)
            for field in (3, 4):
                for shard in info.fields.get(field, []):
                    key = pw.FieldReader(shard).message(4)  # ShardKey{keyword=1, number=2}
                    if key is not None:
                        keys.append(key.str(1) if 1 in key.fields else key.int(2))
            return keys
        reply = self.control(transport, WireRequest(f"GET {self._path}/cluster", b""))
        result = orjson.loads(reply.body or b"{}").get("result") or {}
        for shard in (result.get("local_shards") or []) + (result.get("remote_shards") or []):
            key = shard.get("shard_key") if isinstance(shard, dict) else None
            if isinstance(key, str) or (isinstance(key, int) and not isinstance(key, bool)):
                keys.append(key)
        return keys

    def _create_shard_keys(self, transport: Transport) -> None:
        """With ``create=true`` and ``namespace_mode=shard_key``: make option namespace's shard key, and keep
        the transport so that ``refuse`` makes any other namespace's (``write(namespace=...)``,
        ``namespace_column``) before its first rows go. First, the kind of key the namespaces name."""
        if self.options.namespace_mode == "shard_key":
            self._learn_shard_key_type(transport)
        opts = self.options
        if not (opts.create and opts.namespace_mode == "shard_key"):
            return
        self._shard_transport = transport
        if opts.namespace:
            self._made_shard_key(opts.namespace)

    def _made_shard_key(self, key: str) -> None:
        """Make shard key ``key`` once (one that is there already counts as made)."""
        if key in self._shard_keys_made or self._shard_transport is None:
            return
        self._create_shard_key(self._shard_transport, key)
        self._shard_keys_made.add(key)

    def _create_shard_key(self, transport: Transport, key: str) -> None:
        if (
            self.grpc
        ):  # CreateShardKeyRequest{collection_name=1, request=2 CreateShardKey{shard_key=1 ShardKey}}
            inner = pw.len_field(1, _shard_key_field(shard_key_of(key, self.options)))
            request = WireRequest(
                GRPC_CREATE_SHARD_KEY, pw.string_field(1, self.collection) + pw.len_field(2, inner)
            )
        else:
            body = orjson.dumps({"shard_key": shard_key_of(key, self.options)})
            request = WireRequest(f"PUT {self._path}/shards", body)
        try:
            self.control(transport, request)
        except Rejected as exc:
            if "already exists" not in str(exc):
                raise

    def clear_target(self, transport: Transport, namespace: str | None) -> str:
        """Delete the points of ``namespace`` (its payload key, or its shard key), or every point."""
        opts = self.options
        if self._awaiting_create:  # create=true makes it with the first upsert: no point to delete yet
            return f"no point: {self.describe()} does not exist yet"
        if opts.namespace_mode == "shard_key" and not namespace:
            raise ConfigError(_NO_SHARD_KEY.format(what="a clear of every namespace (clear() without one)"))
        by_payload = namespace is not None and opts.namespace_mode == "payload"
        shard = namespace if namespace is not None and opts.namespace_mode == "shard_key" else None
        problem = None if shard is None else _number_problem(shard, opts)
        if problem is not None:
            raise ConfigError(f"clear: {problem} of {self.describe()}")
        if self.grpc:
            condition = b""
            if by_payload:  # Filter{must=2 Condition}
                condition = pw.len_field(2, _grpc_namespace_condition(opts.namespace_key, namespace or ""))
            body = (
                pw.string_field(1, self.collection)
                + pw.varint_field(2, 1)
                + pw.len_field(3, pw.len_field(2, condition))  # PointsSelector{filter=2}
                + (pw.len_field(5, _shard_selector(shard_key_of(shard, opts))) if shard is not None else b"")
            )
            request = WireRequest(GRPC_DELETE, body)
        else:
            doc: dict[str, Any] = {"filter": {}}
            if by_payload:
                doc["filter"] = {"must": [_json_namespace_condition(opts.namespace_key, namespace or "")]}
            if shard is not None:
                doc["shard_key"] = shard_key_of(shard, opts)
            request = WireRequest(f"POST {self._path}/points/delete?wait=true", orjson.dumps(doc))
        if shard is not None:
            request = dataclasses.replace(request, answers=_REFUSED)
        reply = self.control(transport, request)
        if reply.status in _REFUSED:
            if self._no_such_shard_key(reply, shard):
                return f"no point (shard key {shard!r} does not exist) in {self.describe()}"
            raise self._refused(request, reply)
        where = f"namespace {namespace!r}" if namespace is not None else "every namespace"
        return f"every point in {where} of {self.describe()}"

    def needs_namespace(self) -> str | None:
        if self.options.namespace_mode != "shard_key":
            return None
        return "namespace_mode=shard_key: Qdrant takes no update of a custom-sharded collection without a shard key"

    def resolved_options(self) -> dict[str, Any]:
        """The collection exists once the driver has checked it: tasks need not create it (no race). With
        ``namespace_mode=shard_key`` they keep ``create``: a row's namespace (``namespace_column``) is a shard
        key a task may be the first to meet, and makes it (``_made_shard_key``; one made meanwhile is kept)."""
        if self.options.namespace_mode == "shard_key":
            return {"shard_key_type": self.options.shard_key_type} if self.options.shard_key_type else {}
        return {"create": False}

    def fixed_dimension(self) -> int | None:
        target = self._target
        if target is None:
            return None
        size = target.named.get(self.options.vector_name) if self.options.vector_name else target.dimension
        return size or None

    # -- sizes ------------------------------------------------------------------------------------

    def row_bytes(self, batch: RowBatch) -> np.ndarray:
        """Estimated encoded size per row: exact for gRPC vectors; for JSON, measured on a sample."""
        if batch.op == DELETE:
            return np.full(len(batch), 48, dtype=np.int64)  # a UUID or an integer, and its framing
        sizes = sizing.row_bytes(batch, grpc=self.grpc, fixed=64)  # id (a UUID), framing, names
        sizes += self._payload_keys_bytes(batch)
        for name, matrix in batch.named_vectors.items():
            per_float = 4 if self.grpc else json_bytes_per_float(matrix)
            sizes += int(matrix.shape[1] * per_float) + len(name) + 16
        for name, multi in batch.multi_vectors.items():
            block = multi.values[int(multi.offsets[0]) : int(multi.offsets[-1])]
            # gRPC: each vector's two headers (at most 6 bytes); JSON: its brackets and comma
            per_vector = multi.dim * 4 + 6 if self.grpc else multi.dim * json_bytes_per_float(block) + 3
            sizes += (multi.counts() * per_vector).astype(np.int64) + len(name) + 16
        return sizes

    def _payload_keys_bytes(self, batch: RowBatch) -> np.ndarray | int:
        """What the payload keys the backend adds take a row: the namespace (payload mode) and the original of a
        text id (every text id counted, a UUID's too: at most its 36 characters over), as JSON writes them
        (escapes included) or, over gRPC, a map entry's framing; 16 bytes a key for the framing."""
        opts = self.options
        extra = 0
        namespace = _payload_namespace(batch, opts)
        if namespace is not None:
            extra = len(orjson.dumps(namespace)) + len(opts.namespace_key.encode()) + 16
        if not any(isinstance(i, str) for i in batch.ids):
            return extra
        per_key = len(opts.original_id_key.encode()) + 16

        def text_bytes(text: str) -> int:
            return len(text.encode("utf-8", "surrogatepass")) if self.grpc else len(orjson.dumps(text))

        sizes = (text_bytes(i) + per_key if isinstance(i, str) else 0 for i in batch.ids)
        return extra + np.fromiter(sizes, np.int64, len(batch))

    # -- encoding ---------------------------------------------------------------------------------

    def request_for(self, batch: RowBatch) -> WireRequest:
        no_shard_key = self._no_shard_key(batch)  # deletes: the client's refuse() step is for upserts only
        if no_shard_key is not None:
            # its rows fail alone: a harmless call (Qdrant's health check) stands in, and outcome_of reads
            # the failure it carries
            health = GRPC_HEALTH_CHECK if self.grpc else "GET /"
            return WireRequest(health, b"", context=no_shard_key)
        # a delete before the collection is made (create=true): Qdrant's "doesn't exist" is read by outcome_of;
        # so is a delete in a shard key the collection does not have (Qdrant refuses any update naming one)
        missing: frozenset[int | str] = (
            frozenset({"NOT_FOUND", 404}) if self._awaiting_create else frozenset()
        )
        if self.options.namespace_mode == "shard_key":
            missing |= _REFUSED
        if self.grpc:
            if batch.op == DELETE:
                body = encode_grpc_delete(batch, self.collection, self.options)
                return WireRequest(GRPC_DELETE, body, answers=missing)
            return WireRequest(GRPC_UPSERT, encode_grpc(batch, self.collection, self.options))
        query = f"?wait={'true' if self.options.wait else 'false'}"
        if self.options.ordering:
            query += f"&ordering={self.options.ordering}"
        if batch.op == DELETE:
            return WireRequest(
                f"POST {self._path}/points/delete{query}",
                encode_json_delete(batch, self.options),
                answers=missing,
            )
        return WireRequest(f"PUT {self._path}/points{query}", encode_json(batch, self.options))

    def outcome_of(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        """Qdrant applies a request whole; only a clock rejection (an update refused as stale) fails it.

        A 2xx reply that is not Qdrant's (a proxy's truncated page) is ``MalformedReply``: its rows fail,
        so the report still accounts for every row, instead of a decoding error escaping from a sender.
        """
        if isinstance(request.context, BatchFailure):  # refused before sending: see request_for
            return BatchOutcome(written=0, failures=[request.context])
        if reply.status in request.answers:
            if reply.status not in _REFUSED:
                self._deleted_nothing(reply)
            elif not self._no_such_shard_key(reply, batch.namespace):
                raise self._refused(request, reply)
            return BatchOutcome(written=len(batch))
        try:
            refused = self._clock_rejected(reply)
        except (ValueError, TypeError, IndexError, AttributeError):  # orjson's error is a ValueError
            raise self.not_its_reply(reply, f"a request of {len(batch)} rows") from None
        if refused:
            failure = batch.failure(range(len(batch)), "update rejected by clock (ClockRejected)", attempts=1)
            return BatchOutcome(written=0, failures=[failure])
        return BatchOutcome(written=len(batch))

    def _deleted_nothing(self, reply: WireReply) -> None:
        """A delete's NOT_FOUND where the collection is not made yet (``create=true``, a dimension not known):
        no point to delete, as for a missing id. Any other NOT_FOUND (a wrong path) is fatal as before."""
        if f"Collection `{self.collection}` doesn't exist" not in reply.body.decode("utf-8", "replace"):
            text = self.secrets.blank(reply.body.decode("utf-8", "replace"))[:500]
            raise NotFound(f"{self.describe()} delete: {reply.status}: {text}", status=reply.status)

    def _no_such_shard_key(self, reply: WireReply, key: Any) -> bool:
        """Whether a refused delete's reply is Qdrant's ``Shard key <key> not found`` (``split_by_shard``
        refuses any update naming a shard key the collection does not have): nothing there to delete."""
        text: Any = reply.body.decode("utf-8", "replace")
        if not self.grpc:  # {"status": {"error": "Wrong input: Shard key \"us\" not found"}, ...}
            try:
                status = orjson.loads(reply.body).get("status")
                text = status.get("error") if isinstance(status, dict) else None
            except (ValueError, AttributeError):
                return False
        # Qdrant shows a text key quoted (ShardKey's Display: Shard key "us" not found), a number bare
        shown = (f'Shard key "{key}" not found', f"Shard key {key} not found")
        return isinstance(text, str) and key is not None and text.endswith(shown)

    def _refused(self, request: WireRequest, reply: WireReply) -> ServerError:
        """The error the transport raises for a refusal the request let through (``answers``) that is not
        the one awaited: the same type and words."""
        where = f"{self.describe()} {request.method}"
        if self.grpc:
            text = reply.body.decode("utf-8", "replace")
            return Rejected(f"{where}: {reply.status}: {text}", status=reply.status)
        return http_error(int(reply.status), reply.body, where, reply.headers, secrets=self.secrets)

    def _clock_rejected(self, reply: WireReply) -> bool:
        """True if Qdrant refused the update as stale; raises if the body is not Qdrant's reply."""
        if self.grpc:
            result = pw.FieldReader(reply.body).message(1)  # PointsOperationResponse.result
            return result is not None and result.int(2) == _CLOCK_REJECTED
        if not reply.body.strip():  # nothing to read, nothing refused
            return False
        doc = orjson.loads(reply.body)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        result = doc.get("result")
        return isinstance(result, dict) and result.get("status") == "clock_rejected"


_native_ids: Callable[..., list[int | str]] | None = speedups.native("point_ids")
_native_heads: Callable[..., list[bytes]] | None = speedups.native("qdrant_point_heads")


def _point_ids(ids: list[Any]) -> list[int | str]:
    """``[point_id(i) for i in ids]``: natively where the speedups are built (the UUIDv5 of a text id is
    about a microsecond in Python), which hand any id but an exact ``int`` or ``str`` back to ``point_id``."""
    if _native_ids is not None and type(ids) is list:
        return _native_ids(ids, point_id)
    return [point_id(i) for i in ids]


def _payloads(
    raw_ids: list[Any],
    ids: list[int | str],
    metadata: list[dict[str, Any]] | None,
    namespace: str | None,
    options: QdrantOptions,
) -> list[dict[str, Any]] | None:
    """Each row's payload: its metadata, the namespace (payload mode, else ``None``) and the original of an
    id that ``point_id`` made a UUIDv5 (``raw_ids`` the rows' ids, ``ids`` what Qdrant gets); ``None`` where no
    row has any."""
    keep_original = [_converted(raw, pid) for pid, raw in zip(ids, raw_ids, strict=True)]
    if metadata is None and namespace is None and not any(keep_original):
        return None
    out: list[dict[str, Any]] = []
    for i, raw in enumerate(raw_ids):
        payload = dict(metadata[i]) if metadata is not None and metadata[i] else {}
        if namespace is not None:
            payload[options.namespace_key] = namespace
        if keep_original[i]:
            payload[options.original_id_key] = _original_id(raw)
        out.append(payload)
    return out


def _wide_metadata(metadata: dict[str, Any]) -> str | None:
    """Why a row's metadata cannot go as Qdrant's gRPC payload, or None: an integer outside int64 (gRPC's
    ``Value`` has none wider) or a value with no ``Value`` form at all (an ``orjson.Fragment``, which the
    rows' checks let through). Such a row fails over both transports instead of being stored otherwise
    over one, or of stopping a gRPC write as its encoding error."""
    for key, value in metadata.items():
        problem = pw.value_problem(value)
        if problem is not None:
            return f"metadata {key!r}: {problem}; Qdrant's gRPC payload cannot hold it"
        number = integer_outside(value, INT64)
        if number is not None:
            return (
                f"metadata {key!r} holds the integer {number}, outside the 64-bit signed integers Qdrant's "
                "gRPC payload takes; write it as a string or a float"
            )
    return None


def _converted(raw: Any, pid: int | str) -> bool:
    """Whether ``point_id`` made the row's id ``raw`` into a UUIDv5 ``pid`` (its original then goes in the
    payload): ``ids.converted``, Weaviate's rule too. An unsigned integer, or a UUID in another spelling,
    is the id itself and keeps nothing."""
    return isinstance(pid, str) and converted(raw)


def _original_id(raw: Any) -> Any:
    """The payload's original of a changed id: the id, an integer outside int64 as its text (no JSON
    integer of Qdrant's, nor gRPC's ``integer_value``, holds it)."""
    if isinstance(raw, int) and not _INT64_MIN <= raw <= _INT64_MAX:
        return str(raw)
    return raw


def encode_json(batch: RowBatch, options: QdrantOptions) -> bytes:
    """The REST body: columnar ``{"batch": {"ids", "vectors", "payloads"?}, "shard_key"?}`` for dense rows,
    whose matrix is written whole (one float32 buffer, shortest reprs); a point list
    ``{"points": [{"id", "vector": {name: ...}, "payload"?}]}`` when rows carry sparse vectors, which
    some rows may lack (a batch cannot say "none" for one row).
    """
    ids = _point_ids(batch.ids)
    namespace = _payload_namespace(batch, options)
    payloads = _payloads(batch.ids, ids, batch.metadata, namespace, options)
    body: dict[str, Any]
    named = _json_named(batch)
    if batch.sparse is not None and any(s is not None for s in batch.sparse):
        dense_name = options.vector_name or ""
        rows = None if batch.vectors is None else json_rows(batch.vectors)
        points: list[dict[str, Any]] = []
        for i, pid in enumerate(ids):
            vector: dict[str, Any] = {name: column[i] for name, column in named.items()}
            if rows is not None:
                vector[dense_name] = rows[i]
            sparse = batch.sparse[i]
            if sparse is not None:
                vector[options.sparse_vector_name] = {"indices": sparse[0], "values": sparse[1]}
            point: dict[str, Any] = {"id": pid, "vector": vector}
            if payloads is not None:
                point["payload"] = payloads[i]
            points.append(point)
        body = {"points": points}
    else:
        vectors: Any
        if named:
            vectors = named
        else:
            vectors = json_rows(
                batch.vectors if batch.vectors is not None else np.zeros((len(ids), 0), np.float32)
            )
            if options.vector_name is not None:
                vectors = {options.vector_name: vectors}
        columns: dict[str, Any] = {"ids": ids, "vectors": vectors}
        if payloads is not None:
            columns["payloads"] = payloads
        body = {"batch": columns}
    if options.namespace_mode == "shard_key" and batch.namespace:
        body["shard_key"] = shard_key_of(batch.namespace, options)
    return metadata_json(body)  # payloads as every database's metadata: decimals as their text


def _json_named(batch: RowBatch) -> dict[str, Any]:
    """Each named vector's column of a REST body: a dense name's rows (``json_rows``), a multi-vector's
    rows each the list of its vectors (slices of one ``json_rows`` of the batch's block of values)."""
    out: dict[str, Any] = {name: json_rows(matrix) for name, matrix in batch.named_vectors.items()}
    for name, multi in batch.multi_vectors.items():
        start = int(multi.offsets[0])
        rows = json_rows(multi.values[start : int(multi.offsets[-1])])
        bounds = (multi.offsets - start).tolist()
        out[name] = [rows[bounds[i] : bounds[i + 1]] for i in range(len(multi))]
    return out


def _payload_namespace(batch: RowBatch, options: QdrantOptions) -> str | None:
    """The namespace a batch's points carry in their payload: none outside payload mode, and none for
    ``""``, the default namespace, which is no namespace too (its points have no namespace key)."""
    return (batch.namespace or None) if options.namespace_mode == "payload" else None


def _json_namespace_condition(key: str, namespace: str) -> dict[str, Any]:
    """The points of a payload namespace: its value under ``key``; the default one (``""``) has no key."""
    path = _filter_key(key)
    return {"is_empty": {"key": path}} if namespace == "" else {"key": path, "match": {"value": namespace}}


def _grpc_namespace_condition(key: str, namespace: str) -> bytes:
    """``_json_namespace_condition`` as a ``Condition``: ``is_empty=2 IsEmptyCondition{key=1}``, or
    ``field=1 FieldCondition{key=1, match=2 Match{keyword=1}}``."""
    path = _filter_key(key)
    if namespace == "":
        return pw.len_field(2, pw.string_field(1, path))
    return pw.len_field(1, pw.string_field(1, path) + pw.len_field(2, pw.string_field(1, namespace)))


def encode_json_delete(batch: RowBatch, options: QdrantOptions) -> bytes:
    """The REST body of a delete: in payload mode ``{"filter": {"must": [{"has_id": ids}, <the namespace's
    condition>]}}``, the default namespace's (``is_empty``) for none or ``""``, so a row with no namespace
    never deletes a point of another; with ``shard_key``, ``{"points": ids, "shard_key": ...}``."""
    ids = _point_ids(batch.ids)
    body: dict[str, Any]
    if options.namespace_mode == "payload":  # no namespace is the default one: never every namespace's
        match = _json_namespace_condition(options.namespace_key, batch.namespace or "")
        body = {"filter": {"must": [{"has_id": ids}, match]}}
    else:
        body = {"points": ids}
    if options.namespace_mode == "shard_key" and batch.namespace:
        body["shard_key"] = shard_key_of(batch.namespace, options)
    return orjson.dumps(body)


# -- gRPC -------------------------------------------------------------------------------------------

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def encode_grpc(batch: RowBatch, collection: str, options: QdrantOptions) -> bytes:
    """``UpsertPoints{collection_name=1, wait=2, points=3, ordering=4, shard_key_selector=5}``.

    ``PointStruct{id=1 PointId{num=1|uuid=2}, payload=3 map<string, qdrant.Value>, vectors=4
    Vectors{vector=1 | vectors=2 NamedVectors{map<string, Vector>}}}``; a dense ``Vector`` is
    ``dense=101 DenseVector{data=1 packed float}`` and a sparse one ``sparse=102 SparseVector{values=1,
    indices=2}``. Rows are written one after another; each vector is one slice of the matrix buffer.
    """
    heads = _point_heads(batch, options)
    matrix = batch.vectors
    raw: memoryview | None = None
    row_len = 0
    dense_head = b""
    if matrix is not None and len(matrix):
        row_len = 4 * matrix.shape[1]
        raw = np.ascontiguousarray(matrix, dtype="<f4").data.cast("B")
        # Vector{dense=101: DenseVector{data=1}}: tag 101/LEN is b"\xaa\x06"
        inner = b"\x0a" + pw.varint(row_len)
        dense_head = b"\xaa\x06" + pw.varint(len(inner) + row_len) + inner
    dense_name = options.vector_name
    sparse_name = options.sparse_vector_name
    several = _NamedGrpc(batch, sparse_name) if batch.named_vectors or batch.multi_vectors else None
    head = pw.string_field(1, collection) + (
        b"\x10\x01" if options.wait else b"\x10\x00"
    )  # wait: sent either way
    tail = b""
    if options.ordering:
        tail += pw.len_field(4, pw.varint_field(1, _GRPC_ORDERING[options.ordering]))
    if options.namespace_mode == "shard_key" and batch.namespace:
        tail += pw.len_field(5, _shard_selector(shard_key_of(batch.namespace, options)))
    if raw is not None and several is None and dense_name is None and batch.sparse is None:
        # one unnamed dense vector a point: every point is its id and payload, then the same Vectors header
        # and its row of the matrix, framed around the matrix in one pass (protowire.frame_rows)
        vector = b"\x0a" + pw.varint(len(dense_head) + row_len) + dense_head  # Vectors.vector=1
        vectors_head = b"\x22" + pw.varint(len(vector) + row_len) + vector  # PointStruct.vectors=4
        return pw.frame_rows(3, heads, vectors_head, matrix, prefix=head, suffix=tail)  # type: ignore[arg-type]
    parts: list[Any] = [head]
    for i, point_head in enumerate(heads):
        if several is not None:  # the vectors go as slices of the batch's buffers, copied once, by the join
            row_entries, size = several.row(i)
            named_head = b"\x12" + pw.varint(size)  # Vectors.vectors=2 NamedVectors
            vectors_head = b"\x22" + pw.varint(len(named_head) + size)  # PointStruct.vectors=4
            point_size = len(point_head) + len(vectors_head) + len(named_head) + size
            parts += (b"\x1a", pw.varint(point_size), point_head, vectors_head, named_head, *row_entries)
            continue
        sparse = batch.sparse[i] if batch.sparse is not None else None
        dense = raw[i * row_len : (i + 1) * row_len] if raw is not None else None
        vectors = b""
        if dense is not None and dense_name is None and sparse is None:
            vectors = b"\x0a" + pw.varint(len(dense_head) + row_len) + dense_head + dense  # Vectors.vector=1
        else:
            entries: list[bytes] = []
            named: list[tuple[str, bytes]] = []
            if dense is not None:
                named.append((dense_name or "", dense_head + bytes(dense)))
            if sparse is not None:
                indices, values = sparse
                named.append(
                    (
                        sparse_name,
                        pw.len_field(102, pw.packed_floats(1, values) + pw.packed_uint32(2, indices)),
                    )
                )
            for name, vector in sorted(named):
                entries.append(pw.len_field(1, _map_entry(name, vector)))
            if entries:
                vectors = pw.len_field(2, b"".join(entries))  # Vectors.vectors=2 NamedVectors{vectors=1 map}
        point_parts = (point_head, pw.len_field(4, vectors) if vectors else b"")
        size = sum(len(p) for p in point_parts)
        parts += (b"\x1a", pw.varint(size), *point_parts)
    parts.append(tail)
    return b"".join(parts)


def _point_heads(batch: RowBatch, options: QdrantOptions) -> list[bytes]:
    """Each point's ``PointStruct`` fields before its vectors: ``id=1 PointId{num=1 | uuid=2}`` and
    ``payload=3``, a map entry a key, in key order. Written natively where the speedups are built: the same
    bytes, any row they cannot write exactly (an id that is no ``int`` or ``str``, metadata that is no
    ``dict`` or has keys that are no ``str``) by ``_point_head``, any value but plain ``None``, ``bool``,
    ``int``, ``float``, ``str``, ``dict``, ``list`` and ``tuple`` by ``_value``: 0.4 µs a row against 5 µs in
    Python (a text id and one metadata field, or an int id and three, on a loaded 2-core machine)."""
    namespace = _payload_namespace(batch, options)
    raw_ids, metadata = batch.ids, batch.metadata
    if _native_heads is not None and type(raw_ids) is list and (metadata is None or type(metadata) is list):
        row = partial(_point_head, namespace=namespace, options=options)
        key, original = options.namespace_key, options.original_id_key
        return _native_heads(raw_ids, metadata, key, namespace, original, row, _value, _struct_fields)
    return _python_heads(raw_ids, metadata, namespace, options)


def _python_heads(
    raw_ids: list[Any], metadata: list[dict[str, Any]] | None, namespace: str | None, options: QdrantOptions
) -> list[bytes]:
    ids = [point_id(i) for i in raw_ids]
    payloads = _payloads(raw_ids, ids, metadata, namespace, options)
    if payloads is None:
        return [pw.len_field(1, _point_id(pid)) for pid in ids]
    return [
        pw.len_field(1, _point_id(pid)) + _payload_fields(payload)
        for pid, payload in zip(ids, payloads, strict=True)
    ]


def _point_head(
    raw: Any, metadata: dict[str, Any] | None, *, namespace: str | None, options: QdrantOptions
) -> bytes:
    """One row's head in Python: the native writer's for a row it cannot write exactly."""
    return _python_heads([raw], None if metadata is None else [metadata], namespace, options)[0]


def _payload_fields(payload: Mapping[str, Any]) -> bytes:
    """``PointStruct.payload=3``: a map entry a key, in key order."""
    if not payload:
        return b""
    return b"".join(pw.len_field(3, _map_entry(k, _value(v))) for k, v in sorted(payload.items()))


class _NamedGrpc:
    """The ``NamedVectors`` map entries of each row of a batch with named vectors, in key order, as parts
    that slice the batch's buffers: the request's join is their one copy.

    A dense name's entry is ``{key=1 name, value=2 Vector{dense=101 DenseVector{data=1}}}``, one header
    for every row and the row's slice of the matrix. A multi-vector's is ``Vector{multi_dense=103
    MultiDenseVector{vectors=1 DenseVector{data=1}}}``: every vector of the batch gets its two headers (the
    same for all) in one numpy copy of the values block, and a row is then one slice of that frame.
    A sparse vector (option ``sparse_column``) joins them under its name where the row has one.
    """

    __slots__ = ("_sparse", "_sparse_name", "entries")

    def __init__(self, batch: RowBatch, sparse_name: str) -> None:
        self._sparse = batch.sparse
        self._sparse_name = sparse_name
        names = {*batch.named_vectors, *batch.multi_vectors}
        if batch.sparse is not None:
            names.add(sparse_name)
        self.entries: list[tuple[str, Any]] = []
        for name in sorted(names):
            key = pw.len_field(1, name.encode())  # MapEntry.key=1 (an empty name too: Qdrant's default)
            if name in batch.named_vectors:
                self.entries.append(("dense", _dense_entry(key, batch.named_vectors[name])))
            elif name in batch.multi_vectors:
                self.entries.append(("multi", _multi_frames(key, batch.multi_vectors[name])))
            else:
                self.entries.append(("sparse", name))

    def row(self, i: int) -> tuple[list[Any], int]:
        """Row ``i``'s map entries (parts to join) and their size in bytes."""
        parts: list[Any] = []
        size = 0
        for kind, entry in self.entries:
            if kind == "dense":
                prefix, raw, row_len = entry
                parts += (prefix, raw[i * row_len : (i + 1) * row_len])
                size += len(prefix) + row_len
            elif kind == "multi":
                key, frames, frame, bounds = entry
                body = (bounds[i + 1] - bounds[i]) * frame
                vector = b"\xba\x06" + pw.varint(body)  # Vector.multi_dense=103
                vector_len = len(vector) + body
                value = b"\x12" + pw.varint(vector_len)  # MapEntry.value=2
                prefix = b"\x0a" + pw.varint(len(key) + len(value) + vector_len) + key + value + vector
                parts += (prefix, frames[bounds[i] * frame : bounds[i + 1] * frame])
                size += len(prefix) + body
            else:
                sparse = self._sparse[i] if self._sparse is not None else None
                if sparse is None:
                    continue
                indices, values = sparse
                vector = pw.len_field(102, pw.packed_floats(1, values) + pw.packed_uint32(2, indices))
                item = pw.len_field(1, _map_entry(self._sparse_name, vector))
                parts.append(item)
                size += len(item)
        return parts, size


def _dense_entry(key: bytes, matrix: np.ndarray) -> tuple[bytes, memoryview, int]:
    """A dense name's map entry up to its floats (the same for every row), the matrix's bytes, a row's length."""
    row_len = 4 * matrix.shape[1]
    raw = np.ascontiguousarray(matrix, dtype="<f4").data.cast("B")
    inner = b"\x0a" + pw.varint(row_len)  # DenseVector.data=1
    vector = b"\xaa\x06" + pw.varint(len(inner) + row_len) + inner  # Vector.dense=101
    vector_len = len(vector) + row_len
    value = b"\x12" + pw.varint(vector_len)  # MapEntry.value=2
    prefix = b"\x0a" + pw.varint(len(key) + len(value) + vector_len) + key + value + vector
    return prefix, raw, row_len


def _multi_frames(key: bytes, multi: MultiVectors) -> tuple[bytes, memoryview, int, list[int]]:
    """Every vector of the batch's rows framed as ``MultiDenseVector.vectors=1 DenseVector{data=1}``, one
    after another (one copy of the values block), the length of one frame, and each row's first vector."""
    start, stop = int(multi.offsets[0]), int(multi.offsets[-1])
    block = np.ascontiguousarray(multi.values[start:stop], dtype="<f4")
    data_len = 4 * multi.dim
    data = b"\x0a" + pw.varint(data_len)  # DenseVector.data=1
    head = np.frombuffer(b"\x0a" + pw.varint(len(data) + data_len) + data, np.uint8)  # vectors=1
    frame = len(head) + data_len
    frames = np.empty((len(block), frame), np.uint8)
    frames[:, : len(head)] = head
    frames[:, len(head) :] = block.view(np.uint8).reshape(len(block), data_len)
    return key, frames.reshape(-1).data.cast("B"), frame, (multi.offsets - start).tolist()


def _point_id(pid: int | str) -> bytes:
    """``PointId{num=1 | uuid=2}``; num 0 is written (a set oneof member)."""
    if isinstance(pid, int):
        return b"\x08\x00" if pid == 0 else pw.varint_field(1, pid)
    return pw.string_field(2, pid)


def encode_grpc_delete(batch: RowBatch, collection: str, options: QdrantOptions) -> bytes:
    """``DeletePoints{collection_name=1, wait=2, points=3, ordering=4, shard_key_selector=5}``, whose
    ``PointsSelector`` is, in payload mode, ``filter=2 Filter{must=2 [Condition{has_id=3
    HasIdCondition{has_id=1}}, <the namespace's condition>]}`` (the default namespace's for none or ``""``),
    and with ``shard_key`` ``points=1 PointsIdsList{ids=1}``."""
    points = _point_ids(batch.ids)
    if points and all(type(p) is int for p in points):
        # every PointId{num=1} framed at once, {0x0a, size, 0x08, varint}: Python varints of ids from
        # 16,384 on cost more than the rest of the request
        nums = np.array(points, dtype=np.uint64)
        width = np.ones(len(nums), dtype=np.int64)  # the varint's bytes
        for k in range(1, 10):
            width += nums >= np.uint64(1 << (7 * k))
        starts = np.concatenate(([0], np.cumsum(3 + width[:-1])))
        out = np.empty(int(starts[-1] + 3 + width[-1]), dtype=np.uint8)
        out[starts], out[starts + 1], out[starts + 2] = 0x0A, width + 1, 0x08
        for j in range(int(width.max())):
            more = width > j
            low = ((nums[more] >> np.uint64(7 * j)) & np.uint64(0x7F)).astype(np.uint8)
            out[starts[more] + 3 + j] = low | np.where(width[more] > j + 1, 0x80, 0).astype(np.uint8)
        ids = out.tobytes()
    else:
        ids = b"".join(pw.len_field(1, _point_id(p)) for p in points)
    if options.namespace_mode == "payload":  # no namespace is the default one: never every namespace's
        condition = _grpc_namespace_condition(options.namespace_key, batch.namespace or "")
        must = pw.len_field(2, pw.len_field(3, ids)) + pw.len_field(2, condition)
        selector = pw.len_field(2, must)
    else:
        selector = pw.len_field(1, ids)
    parts = [
        pw.string_field(1, collection),
        b"\x10\x01" if options.wait else b"\x10\x00",
        pw.len_field(3, selector),
    ]
    if options.ordering:
        parts.append(pw.len_field(4, pw.varint_field(1, _GRPC_ORDERING[options.ordering])))
    if options.namespace_mode == "shard_key" and batch.namespace:
        parts.append(pw.len_field(5, _shard_selector(shard_key_of(batch.namespace, options))))
    return b"".join(parts)


def _map_entry(key: str, value: bytes) -> bytes:
    """A map entry ``{key=1, value=2}``; the value is written even when empty (a present message)."""
    return pw.len_field(1, key.encode()) + pw.len_field(2, value)


def _shard_selector(key: str | int) -> bytes:
    """``ShardKeySelector{shard_keys=1 ShardKey}``."""
    return pw.len_field(1, _shard_key_field(key))


def _shard_key_field(key: str | int) -> bytes:
    """A ``ShardKey{keyword=1 | number=2}``'s fields."""
    return pw.varint_field(2, key) if isinstance(key, int) else pw.len_field(1, key.encode())


def shard_key_of(namespace: str, options: QdrantOptions) -> str | int:
    """The shard key a namespace names: its text, or with ``shard_key_type=number`` the number its digits
    are (checked before: ``_number_problem``)."""
    return int(namespace) if options.shard_key_type == "number" else namespace


def _number_problem(namespace: str, options: QdrantOptions) -> str | None:
    """Why ``namespace`` names no shard key where the keys are numbers (``shard_key_type=number``), or None."""
    if options.shard_key_type != "number" or (
        _DIGITS.fullmatch(namespace) is not None and int(namespace) <= MAX_UINT64
    ):
        return None
    return (
        f"namespace {namespace[:80]!r} is not an unsigned integer, and the shard keys are numbers "
        "(option shard_key_type=number)"
    )


QDRANT_VALUE = pw.ValueFields(null=1, number=2, integer=3, string=4, boolean=5, struct=6, list=7)


def _value(value: Any) -> bytes:
    """A ``qdrant.Value``: ``protowire.encode_value`` with Qdrant's field numbers (null 1, double 2,
    integer 3 (int64), string 4, bool 5, struct 6, list 7); the native point heads hand values here."""
    return pw.encode_value(value, QDRANT_VALUE)


def _struct_fields(value: dict[Any, Any]) -> bytes:
    """A ``qdrant.Struct``'s ``fields=1``: a map entry a key, in key order, each key as its text."""
    return pw.encode_struct(value, QDRANT_VALUE)
