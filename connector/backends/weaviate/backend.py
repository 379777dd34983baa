"""The Weaviate backend: REST for the schema, gRPC ``weaviate.v1.Weaviate/BatchObjects`` for the rows."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import quote

import msgspec
import numpy as np
import orjson

from ...errors import ConfigError, DimensionMismatch, NotFound, Rejected, ServerError, TransportError
from ...ids import ORIGINAL_ID_KEY, as_uuid, converted
from ...options import BackendOptions, collection_of, parse_uri, tls_for
from ...report import BatchFailure
from ...rows import DELETE, RowBatch, RowRules, metadata_json_len
from ...transports.base import Host, Transport, WireReply, WireRequest
from ..base import Backend, BatchOutcome, RequestLimits, left_out_problem
from ..integers import FLOAT64_EXACT, integer_outside
from .schema import DEFAULT_VECTOR, Collection, class_body, class_name, collection_from, property_name
from .wire import MAX_DIMENSION, MAX_MULTI_DIMENSION, encode_batch, formless, kind_of, read_errors

__all__ = ["WeaviateBackend", "WeaviateOptions", "WeaviateTransport"]

REST_PORT, GRPC_PORT = 8080, 50051
BATCH_OBJECTS = "/weaviate.v1.Weaviate/BatchObjects"
_CLASS_NAME = re.compile(r"^[A-Z][_0-9A-Za-z]{0,254}$")
_VECTOR_NAME = re.compile(r"^[_A-Za-z][_0-9A-Za-z]{0,229}$")  # the server's TargetVectorNameRegex
_PROPERTY_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,230}")  # the server's PropertyNameRegex, matched whole
# names the server refuses for a property ("is a reserved property name"), after lower-casing the first letter
RESERVED_PROPERTIES = frozenset({"id", "_id", "_additional"})
_TENANT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # the server's ShardNameRegexCore, matched whole
# a tenant in a 422's reason (the server's ErrTenantNotFound, ErrTenantNotActive); no tenant name has a space
TENANT_NOT_FOUND, TENANT_NOT_ACTIVE = "tenant not found", "tenant not active"
# tenants' activityStatus: those a request reaches, and those autoTenantActivation wakes for one
ACTIVE, ACTIVATED = frozenset({"HOT", "ACTIVE"}), frozenset({"COLD", "INACTIVE"})
CLEAR_ROUNDS = 100_000  # batch deletes of up to QUERY_MAXIMUM_RESULTS (10,000) objects each
QUERY_MAXIMUM_RESULTS = 10_000  # the server's default: the most objects one batch delete matches
# objects a page read to learn each vector's dimension: the first object usually holds every name
STORED_PAGES = (1, 10, 100)


# canonical UUID text, a byte at a time, as bytes.translate classes it: hex digit "h", hyphen, newline
_UUID_CLASSES = bytes(
    ord("h") if chr(b) in "0123456789abcdef" else b if b in b"-\n" else ord("?") for b in range(256)
)
_UUID_LINE = b"hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh\n"


def uuids_of(ids: list[Any]) -> list[str]:
    """Each id's UUID (``as_uuid``). Ids that are all canonical UUID text already (the usual case when
    the caller's ids are UUIDs) come back as the list itself, told by one ``translate`` of their joined
    bytes rather than a match an id; any other list is mapped an id at a time."""
    if ids and set(map(type, ids)) == {str}:
        text = "\n".join(ids) + "\n"
        if text.isascii() and text.encode("ascii").translate(_UUID_CLASSES) == _UUID_LINE * len(ids):
            return ids
    return [as_uuid(i) for i in ids]


class WeaviateOptions(BackendOptions, kw_only=True, forbid_unknown_fields=True):
    vector_name: str | None = None  # a named vector; None: "default", or a collection's unnamed vector
    grpc_host: str | None = None  # None: the URI's host (Weaviate Cloud serves gRPC on grpc-HOST:443)
    grpc_port: Annotated[int, msgspec.Meta(ge=1, le=65_535)] = GRPC_PORT
    consistency_level: Literal["one", "quorum", "all"] | None = None  # None: the server's (QUORUM)
    original_id_key: str = ORIGINAL_ID_KEY  # property keeping an id that was turned into a UUID


class WeaviateTransport:
    """REST (``"VERB /path"``) and gRPC (``"/service/Method"``) behind one ``send``: the schema and the
    rows go to different ports, and often hosts, of one Weaviate."""

    def __init__(self, rest: Transport, grpc: Transport) -> None:
        self.rest, self.grpc = rest, grpc

    # The engine stops a write whose host never answered, and waits for one that answered and went
    # away (restarting). The schema's REST port answering says nothing of the gRPC port the rows go to
    # (another port, often another host): the rows' host is the gRPC one. Schema calls (``control``)
    # go to the REST transport and wait on its own host's answers.
    @property
    def host(self) -> Host:
        return self.grpc.host

    def __repr__(self) -> str:
        return f"WeaviateTransport({self.rest!r}, {self.grpc!r})"

    def send(self, request: WireRequest, *, timeout_s: float) -> WireReply:
        transport = self.grpc if request.method.startswith("/") else self.rest
        return transport.send(request, timeout_s=timeout_s)

    def close(self) -> None:
        self.rest.close()
        self.grpc.close()


class WeaviateBackend(Backend[WeaviateOptions]):
    name: ClassVar[str] = "weaviate"
    named_vectors = multi_vectors = "yes"  # BatchObject.vectors: one entry per name (check_named_target)
    options_type: ClassVar[type[BackendOptions]] = WeaviateOptions

    # Weaviate takes gRPC messages up to GRPC_MAX_MESSAGE_SIZE (104,858,000 bytes by default) and
    # counts no rows.
    limits = RequestLimits(
        max_rows=100_000,
        max_bytes=100 << 20,
        default_rows=256,
        default_bytes=16 << 20,
        max_delete_rows=QUERY_MAXIMUM_RESULTS,
    )
    # ids are objects' UUIDs (a UUID in any spelling is one object), per tenant
    rules = RowRules(max_id_length=65_535, max_metadata_bytes=None, allow_sparse_only=False, uuid_ids=True)

    def __init__(self, options: WeaviateOptions) -> None:
        super().__init__(options)
        uri = parse_uri(options.uri)
        if uri.transport not in (None, "grpc"):
            raise ConfigError(f"option uri: weaviate has no transport {uri.transport!r}; use weaviate://")
        if not uri.host:
            raise ConfigError("option uri: weaviate needs a host, e.g. weaviate://localhost:8080/Docs")
        collection = collection_of(uri.path, options.collection, same=class_name)
        if not collection or not _CLASS_NAME.match(class_name(collection)):
            raise ConfigError(
                "option uri: weaviate needs one collection name of letters, digits and underscores, "
                "starting with a letter, as weaviate://host:8080/COLLECTION or with option collection"
                + (f" (not {collection!r})" if collection else "")
            )
        if options.sparse_column:
            raise ConfigError(
                "option sparse_column: weaviate stores no sparse vectors (it builds BM25 itself)"
            )
        if options.vector_name == "":
            raise ConfigError("option vector_name: give a name, or leave it out")
        key = options.original_id_key
        if not _PROPERTY_NAME.fullmatch(key) or property_name(key) in RESERVED_PROPERTIES:
            # else every row whose id becomes a UUID fails, with a reason naming no option
            raise ConfigError(
                f"option original_id_key: Weaviate takes property names of ASCII letters, digits and "
                "underscores, starting with a letter or underscore, at most 231 long, and not "
                f"{', '.join(sorted(RESERVED_PROPERTIES))} (not {key!r})"
            )
        problem = None if options.namespace is None else _tenant_problem(options.namespace)
        if problem:  # before create=true makes a collection no write could use
            raise ConfigError(f"option namespace: {problem}")
        # several vectors a row: name -> is a multi-vector, dense names first (the order they are sent in)
        self._named: dict[str, bool] = {
            **dict.fromkeys(options.vector_columns or {}, False),
            **dict.fromkeys(options.multi_vector_columns or {}, True),
        }
        if self._named:
            if options.vector_name is not None:
                raise ConfigError(
                    "option vector_name: names the single vector; with vector_columns or "
                    "multi_vector_columns every vector is written under its own name"
                )
            for name, multi in self._named.items():
                if not _VECTOR_NAME.match(name):
                    option = "multi_vector_columns" if multi else "vector_columns"
                    raise ConfigError(
                        f"option {option}: Weaviate takes vector names of letters, digits and "
                        f"underscores, starting with a letter or underscore, up to 230 long (not {name!r})"
                    )
        self.host, self.port = uri.host, uri.port or REST_PORT
        self.tls = uri.tls(options.tls)
        self.grpc_host = options.grpc_host or uri.host
        self.grpc_tls = tls_for(self.grpc_host, options.tls)
        self.collection = class_name(collection)  # as Weaviate writes it
        self._path = f"/v1/schema/{quote(self.collection, safe='')}"
        self._transport: Transport | None = None
        self._target: Collection | None = None
        self._learnt_dimension: int | None = None
        self._tenants: set[str] = set()  # tenants known to exist
        # create=true: keys so far seen holding only empty lists, not yet declared (_declare_properties)
        self._untyped: frozenset[str] = frozenset()
        # what BatchObject carries the vector in: a name (vectors = 23), None: the unnamed one (vector_bytes)
        self._send_name: str | None = options.vector_name

    def describe(self) -> str:
        where = f"weaviate://{self.host}:{self.port}/{self.collection}"
        if (self.grpc_host, self.grpc_port) != (self.host, GRPC_PORT):
            where += f" (gRPC {self.grpc_host}:{self.grpc_port})"
        return where

    @property
    def grpc_port(self) -> int:
        return self.options.grpc_port

    def open_transport(self) -> Transport:
        from ...transports.grpc import GrpcTransport
        from ...transports.http import HttpTransport

        key = self.options.credential()
        auth = (("authorization", f"Bearer {key}"),) if key else ()
        rest = HttpTransport(
            f"{'https' if self.tls else 'http'}://{self.host}:{self.port}",
            secrets=self.secrets,
            headers=(*auth, ("Content-Type", "application/json")),
            max_connections=8,
            label=self.describe(),
        )
        grpc = GrpcTransport(
            f"{self.grpc_host}:{self.grpc_port}",
            tls=self.grpc_tls,
            secrets=self.secrets,
            metadata=auth,
            label=self.describe(),
        )
        return WeaviateTransport(rest, grpc)

    # -- the control plane ------------------------------------------------------------------------

    def _rest(self, verb: str, path: str, body: Any = None, *, transport: Transport | None = None) -> Any:
        """A REST call through the retried control path; the reply's JSON (``None`` if empty)."""
        payload = b"" if body is None else orjson.dumps(body)
        reply = self._control(WireRequest(f"{verb} {path}", payload), transport)
        return orjson.loads(reply.body) if reply.body.strip() else None

    def _control(self, request: WireRequest, transport: Transport | None = None) -> WireReply:
        """``request`` to the REST port through the retried control path (``transport``: the one
        ``check_target`` was given)."""
        transport = transport or self._transport
        if transport is None:
            raise RuntimeError("WeaviateBackend: check_target() must run before the first request")
        rest = transport.rest if isinstance(transport, WeaviateTransport) else transport  # its host answers
        return self.control(rest, request)

    def check_target(self, transport: Transport, dimension: int | None) -> None:
        """Read the collection (with ``create=true``, make a missing one: no vectorizer, one vector index
        with ``metric``, multi-tenancy when rows carry a namespace), check the vector name, the tenancy and
        the job's tenant against it, and learn its dimension from stored objects. With named vectors,
        ``check_named_target`` with the dimensions option ``vector_dimensions`` states."""
        if self._named:
            stated = self.options.vector_dimensions or {}
            self.check_named_target(transport, {name: stated.get(name) for name in self._named})
            return
        given = self.options.dimension
        if given is not None and given > MAX_DIMENSION:
            raise ConfigError(
                f"option dimension: {given:,} floats; Weaviate takes vectors of at most {MAX_DIMENSION:,}"
            )
        target = self._read_target(transport)
        if target is None:
            if dimension is not None and dimension > MAX_DIMENSION:  # learnt from the rows: none could land
                raise ConfigError(
                    f"option vector_column: the vectors (column {self.options.vector_column!r}) hold "
                    f"{dimension:,} floats; Weaviate takes at most {MAX_DIMENSION:,}, so {self.describe()} "
                    f"cannot make collection {self.collection!r} for them"
                )
            target = self._create_target(None)
        self._send_name = self._vector_for(target)
        if self.options.op_column is None and self._send_name is not None:
            # every row upserts: refused here, on a job's driver before any task (refuse(): with op_column)
            self._check_unnamed_kept(target, {self._send_name}, option="vector_name")
        self._check_tenancy(target)
        stored = self._stored_vectors(
            self.options.namespace if target.multi_tenant else None, {self._send_name: False}
        )
        stored_dimension = _length(stored.get(self._send_name), multi=False)
        if stored_dimension is not None:
            self._learnt_dimension = stored_dimension
            if dimension and dimension != stored_dimension:
                raise DimensionMismatch(
                    f"dimension mismatch: {self.describe()} holds vectors of dimension {stored_dimension}, "
                    f"the data has {dimension}",
                    target_dimension=stored_dimension,
                )

    def check_named_target(
        self, transport: Transport, dimensions: Mapping[str, int | None]
    ) -> dict[str, int]:
        """``Backend.check_named_target``: every name must be one of the collection's named vectors
        (``vectorConfig``), a multi-vector one (``multivector`` enabled) where the write's is, else a
        ``ConfigError`` naming the name and its option; so must every one of the collection's vectors
        (``_check_unnamed_kept``). With ``create=true`` a missing collection is made with every name
        (``class_body``) at once: Weaviate's schema holds no dimension (an index takes its first vector's
        length). The dimensions returned are those of stored objects' vectors (``_stored_vectors``); one
        option ``vector_dimensions`` states that differs is a ``ConfigError``, one the rows gave yields to
        the stored one (rows of another length fail alone), and a multi-vector length learnt from the rows
        that Weaviate cannot take fails those rows (``refuse``), not the write."""
        opts = self.options
        stated = opts.vector_dimensions or {}
        for name, multi in self._named.items():
            if multi and stated.get(name, 0) > MAX_MULTI_DIMENSION:
                raise ConfigError(
                    f"option vector_dimensions: multi-vector {name!r} has vectors of {stated[name]:,} floats; "
                    f"Weaviate's multi-vectors hold vectors of at most {MAX_MULTI_DIMENSION:,}"
                )
            if not multi and stated.get(name, 0) > MAX_DIMENSION:
                raise ConfigError(
                    f"option vector_dimensions: vector {name!r} has {stated[name]:,} floats; Weaviate takes "
                    f"vectors of at most {MAX_DIMENSION:,}"
                )
        # Weaviate's schema holds no dimension (an index takes its first vector's length): a missing
        # collection is made at once, so a write that deletes before it upserts finds it
        target = self._read_target(transport)
        if target is None:
            for name, multi in self._named.items():
                size = dimensions.get(name)
                if not multi and size is not None and size > MAX_DIMENSION:  # learnt: none could land
                    raise ConfigError(
                        f"option vector_columns: vector {name!r} (column {self._column_of(name)!r}) holds "
                        f"{size:,} floats; Weaviate takes at most {MAX_DIMENSION:,}, so {self.describe()} "
                        f"cannot make collection {self.collection!r} for it"
                    )
            target = self._create_target(self._named)
        if not target.named_vectors:
            raise ConfigError(
                f"option {self._option_of(next(iter(self._named)))}: collection {self.collection!r} has one "
                "unnamed vector and no named vectors (vectorConfig); write it with vector_column"
            )
        for name, multi in self._named.items():
            option = self._option_of(name)
            if name not in target.named_vectors:
                raise ConfigError(
                    f"option {option}: collection {self.collection!r} has no vector {name!r} "
                    f"(it has {sorted(target.named_vectors)})"
                )
            if multi != (name in target.multi_vectors):
                has = "a multi-vector index (multivector enabled)" if not multi else "a single-vector index"
                wants = "multi_vector_columns" if not multi else "vector_columns"
                raise ConfigError(
                    f"option {option}: vector {name!r} of collection {self.collection!r} has {has}; "
                    f"write it with option {wants}"
                )
        self._check_unnamed_kept(target, set(self._named), option=None)
        self._check_tenancy(target)
        names: dict[str | None, bool] = dict(self._named.items())
        stored = self._stored_vectors(opts.namespace if target.multi_tenant else None, names)
        fixed: dict[str, int] = {}
        for name, multi in self._named.items():
            length = _length(stored.get(name), multi=multi)
            if length is None:
                continue
            fixed[name] = length
            if name in stated and stated[name] != length:
                raise ConfigError(
                    f"option vector_dimensions: {self.describe()} holds {name!r} vectors of dimension "
                    f"{length}, not {stated[name]}"
                )
        return fixed

    def _option_of(self, name: str) -> str:
        return "multi_vector_columns" if self._named.get(name) else "vector_columns"

    def _column_of(self, name: str) -> str:
        """The input column of dense vector ``name``."""
        return (self.options.vector_columns or {}).get(name, name)

    def _dense_problem(self, batch: RowBatch) -> str | None:
        """Why Weaviate cannot take the batch's dense vectors (a batch's rows share each one's length),
        or ``None``: one over ``MAX_DIMENSION`` floats was sent and refused with a reason naming neither
        the vector nor its column, after costing requests to isolate the rows."""
        dense = [(self._send_name, self.options.vector_column, batch.dimension)]
        dense += [(name, self._column_of(name), m.shape[1]) for name, m in batch.named_vectors.items()]
        for name, column, dim in dense:
            if dim is not None and dim > MAX_DIMENSION:
                what = "the vector" if name is None else f"vector {name!r}"
                return f"{what} (column {column!r}) holds {dim:,} floats; Weaviate takes at most {MAX_DIMENSION:,}"
        return None

    def _check_unnamed_kept(self, target: Collection, written: set[str], *, option: str | None) -> None:
        """Refuse a write whose upserts leave out some of the collection's named vectors (``written``:
        those it names; ``left_out_problem``). ``option``: the one to blame (``None``: the option of the
        first left out)."""
        stored = {
            name: "multi_vector_columns" if name in target.multi_vectors else "vector_columns"
            for name in target.named_vectors
        }
        problem = left_out_problem(
            stored,
            written,
            collection=self.collection,
            database="Weaviate",
            item="object",
            columns="options vector_columns and multi_vector_columns",
            option=option,
        )
        if problem:
            raise ConfigError(problem)

    def _read_target(self, transport: Transport) -> Collection | None:
        """The collection; ``None`` when it is missing and option ``create`` would make it, else a
        ``ConfigError``."""
        self._transport = transport
        try:
            return collection_from(self._rest("GET", self._path))
        except NotFound:
            if not self.options.create:
                raise ConfigError(
                    f"{self.describe()}: collection {self.collection!r} does not exist "
                    "(option create=true makes it)"
                ) from None
        return None

    def _create_target(self, vectors: Mapping[str, bool] | None) -> Collection:
        """Make the collection: no vectorizer, an HNSW index per name of ``vectors`` (name → is a
        multi-vector) or one for the single vector, multi-tenancy when rows carry a namespace."""
        opts = self.options
        body = class_body(
            self.collection,
            vector_name=opts.vector_name,
            metric=opts.metric,
            multi_tenant=opts.namespace is not None or opts.namespace_column is not None,
            vectors=vectors,
        )
        try:
            self._rest("POST", "/v1/schema", body)
        except Rejected as exc:  # made meanwhile by another task: use it
            if "already exists" not in str(exc):
                raise
        return collection_from(self._rest("GET", self._path))

    def _check_tenancy(self, target: Collection) -> None:
        """The write's namespaces against the collection's multi-tenancy; the job's tenant made sure of."""
        opts = self.options
        tenants = opts.namespace is not None or opts.namespace_column is not None
        # a multi-tenant collection without either: the call's namespace or the rows' own may name the
        # tenant, which each batch shows (_tenancy_problem)
        if tenants and not target.multi_tenant:
            raise ConfigError(
                f"option namespace: collection {self.collection!r} has multi-tenancy off, and a namespace "
                "is a tenant in Weaviate (create=true makes a new collection with multi-tenancy on)"
            )
        self._target = target
        if opts.namespace is not None:
            self._ensure_tenant(opts.namespace)

    def needs_namespace(self) -> str | None:
        target = self._target
        if target is None or not target.multi_tenant:
            return None
        return f"collection {self.collection!r} is multi-tenant: each row needs a tenant name"

    def _tenancy_problem(self, batch: RowBatch) -> str | None:
        """Why the batch's rows cannot go to its namespace's tenant, or ``None``: no tenant name, none in a
        multi-tenant collection, one in a collection without multi-tenancy. Rows that name their own
        namespace (``namespace_column``, dict rows, Beam elements) fail alone; a namespace the call gave,
        or none where nothing could give one, is a ``ConfigError``: every batch of the write is the same."""
        namespace, target = batch.namespace, self._target
        where = f"collection {self.collection!r}"
        if target is not None and target.multi_tenant and not namespace:
            # sent as tenant "", which Weaviate answers UNKNOWN: read as a server that is down, retried
            what = "null" if namespace is None else "empty"
            if self.options.namespace_column:
                return (
                    f"option namespace_column: the row's namespace is {what}, and {where} is multi-tenant: "
                    "each row needs a tenant name"
                )
            if batch.own_namespaces:
                return (
                    f"the row's namespace is {what}, and {where} is multi-tenant: give the row a "
                    "'namespace' (a tenant name), or the call a namespace for rows without one"
                )
            raise ConfigError(
                f"option namespace: {where} is multi-tenant; name the tenant (option namespace, "
                "namespace_column for one per row, or the call's namespace)"
            )
        if target is not None and not target.multi_tenant and namespace:
            # options namespace and namespace_column were refused by check_target: this is the call's or a row's
            if batch.own_namespaces:
                return (
                    f"the row's namespace {namespace!r} (its own or the call's) is a tenant in Weaviate, and "
                    f"{where} has multi-tenancy off: write the row without a namespace"
                )
            raise ConfigError(
                f"namespace {namespace!r} (the call's): {where} has multi-tenancy off, and a namespace is a "
                "tenant in Weaviate; leave the namespace out (create=true makes a multi-tenant collection "
                "only when option namespace or namespace_column is given)"
            )
        return None if namespace is None else _tenant_problem(namespace)

    def _vector_for(self, target: Collection) -> str | None:
        """The vector name to send (``None``: the collection's one unnamed vector)."""
        wanted = self.options.vector_name
        if not target.named_vectors:
            if wanted is not None:
                raise ConfigError(
                    f"option vector_name: collection {self.collection!r} has one unnamed vector, "
                    f"not {wanted!r}; leave vector_name out"
                )
            return None
        name = wanted or DEFAULT_VECTOR
        if name not in target.named_vectors:
            raise ConfigError(
                f"option vector_name: collection {self.collection!r} has no vector {name!r} "
                f"(it has {sorted(target.named_vectors)}); say which one to write"
            )
        if name in target.multi_vectors:
            # sent as a single vector, the server stores it on the object yet refuses it to the index
            # ("AddBatch called on multivector index"): the rows read as failed and are there all the same
            option = "vector_name" if wanted is not None else "vector_column"
            raise ConfigError(
                f"option {option}: vector {name!r} of collection {self.collection!r} has a multi-vector index "
                f"(multivector enabled), and a single vector goes to it; write it with option "
                f"multi_vector_columns (e.g. multi_vector_columns='{name}:COLUMN')"
            )
        return name

    def _stored_vectors(self, tenant: str | None, names: Mapping[str | None, bool]) -> dict[str | None, Any]:
        """Per name of ``names`` (name → is a multi-vector; ``None``: the unnamed vector), a stored
        object's vector of that shape, read a page of objects at a time (``STORED_PAGES``) until each
        name was seen: an object may lack one (written by another client, or before writes naming only
        some were refused). Weaviate's schema has no dimension, an index takes its first vector's
        length. Empty for an empty collection, one with tenants per row, or a tenant that does not
        exist or is inactive; a name no object in those pages holds is left out."""
        target = self._target
        if target is None or (target.multi_tenant and tenant is None):
            return {}
        found: dict[str | None, Any] = {}
        after: str | None = None
        for limit in STORED_PAGES:
            path = f"/v1/objects?class={quote(self.collection)}&limit={limit}&include=vector"
            if tenant is not None:
                path += f"&tenant={quote(tenant)}"
            if after is not None:
                path += f"&after={quote(after)}"
            try:
                objects = (self._rest("GET", path) or {}).get("objects") or []
            except Rejected as exc:
                # a tenant the server makes on the first write, or an inactive (COLD) one it may activate
                # then: no stored vector to learn from; the write goes on, and the server judges its rows
                if exc.status == 422 and (TENANT_NOT_FOUND in str(exc) or TENANT_NOT_ACTIVE in str(exc)):
                    return {}
                raise
            for obj in objects:
                vectors = {None: obj.get("vector"), **(obj.get("vectors") or {})}
                for name, multi in names.items():
                    if name not in found and _length(vectors.get(name), multi=multi) is not None:
                        found[name] = vectors[name]
            if len(found) == len(names) or len(objects) < limit:
                break
            after = str(objects[-1].get("id"))
        return found

    def _ensure_tenant(self, tenant: str) -> None:
        """Make sure ``tenant`` exists: with ``create=true`` (or a collection that makes its tenants) a
        missing one is created; otherwise it is a ``ConfigError``."""
        if tenant in self._tenants:
            return
        target = self._target
        try:
            self._rest("GET", f"{self._path}/tenants/{quote(tenant, safe='')}")
        except NotFound:
            if not self.options.create:
                if target is not None and target.auto_tenants:
                    return  # the server makes it with the first object
                raise ConfigError(
                    f"{self.describe()}: collection {self.collection!r} has no tenant {tenant!r} "
                    "(option create=true makes it)"
                ) from None
            self._rest("POST", f"{self._path}/tenants", [{"name": tenant}])  # a second create is a no-op
        self._tenants.add(tenant)

    def fixed_dimension(self) -> int | None:
        """Learnt from stored objects (a collection's vector index takes its first vector's length).
        ``create`` stays as given for tasks: they declare properties and tenants their rows bring."""
        return self._learnt_dimension

    # -- rows Weaviate would change, and the schema a batch needs ---------------------------------

    def refuse(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """Rows whose values Weaviate would store changed (integers beyond ±2^53: it keeps numbers as
        float64; lists holding nulls), or whose properties have no form on its wire, fail here. With ``create=true``, properties the batch brings that
        the collection lacks are declared first, typed from the values (Arrow's types), so an ``int64``
        column is an ``int`` property (Weaviate's auto-schema would make it ``number``); and a tenant the
        collection lacks is created. A property or tenant Weaviate refuses fails the rows that need it,
        with Weaviate's reason; one it could not be asked for within the retries (down, silent) fails
        them too, retryable, instead of raising over the rows earlier chunks of the write have stored.
        A property no value has typed yet (only empty lists so far) is not declared, and its empty lists
        are left out of the objects until one is: auto-schema would declare it ``text[]`` from them.
        A namespace that is no tenant name fails its rows, before Weaviate is asked (it would answer
        as if it were down), and so do dense vectors over 65,535 floats and multi-vectors Weaviate cannot
        frame, naming the vector. With option ``op_column`` (a write that may only delete, which erases no
        vector), upserts of the single vector into a collection with other named vectors are a
        ``ConfigError`` here (``_check_unnamed_kept``); without it ``check_target`` refused the write.
        Runs on the client's thread, before the batch is sized."""
        if (
            batch.op != DELETE
            and self.options.op_column
            and self._send_name is not None
            and self._target is not None
            and not self._named
        ):
            self._check_unnamed_kept(self._target, {self._send_name}, option="vector_name")
        problem = self._tenancy_problem(batch)
        if problem is None and len(batch):
            problem = self._dense_problem(batch)
        for name, multi in batch.multi_vectors.items():
            if problem is None and len(multi) and not 0 < multi.dim <= MAX_MULTI_DIMENSION:
                problem = (  # a batch's rows share the name's length: each row holds such vectors
                    f"multi-vector {name!r} holds vectors of {multi.dim:,} floats; Weaviate's multi-vectors "
                    f"hold vectors of 1 to {MAX_MULTI_DIMENSION:,} (their length is sent as a uint16)"
                )
        if problem:
            return batch.without(dict.fromkeys(range(len(batch)), problem))
        reasons: dict[int, str] = {}
        if batch.metadata is not None:
            own_id = property_name(self.options.original_id_key)
            for i, meta in enumerate(batch.metadata):
                problem = _unstorable(meta) if meta else None
                if problem is None and meta and own_id in map(property_name, meta):
                    row_id = batch.ids[i]
                    if converted(row_id):  # the row's own id goes there: the value would be lost
                        problem = (
                            f"property {self.options.original_id_key!r} is where the row's id {row_id!r} is "
                            "kept (it is no UUID): rename the metadata key, or set option original_id_key"
                        )
                if problem:
                    reasons[i] = problem
        refused: dict[int, str] = {}  # when asking Weaviate for a tenant or a property
        errors: dict[str, ServerError | TransportError] = {}  # their messages' errors
        if self.options.create and self._target is not None and self._transport is not None:
            if batch.namespace is not None and self._target.multi_tenant and not self._target.auto_tenants:
                try:
                    self._ensure_tenant(batch.namespace)
                except (ServerError, TransportError) as exc:
                    if not _fails_rows(exc):
                        raise
                    refused, errors[str(exc)] = dict.fromkeys(range(len(batch)), str(exc)), exc
            if not refused:
                refused = self._declare_properties(batch, self._target, skip=reasons, errors=errors)
        kept, failures = batch.without({**reasons, **refused})
        return kept, [_schema_failure(f, errors[f.error]) if f.error in errors else f for f in failures]

    def _declare_properties(
        self,
        batch: RowBatch,
        target: Collection,
        skip: dict[int, str],
        errors: dict[str, ServerError | TransportError],
    ) -> dict[int, str]:
        """Declare the batch's new properties; the rows carrying one Weaviate refuses (or could not be
        asked for: the later ones are not asked either), with the reason, kept in ``errors``."""
        kinds: dict[str, set[str | None]] = {}
        rows_with: dict[str, list[int]] = {}
        empties: set[str] = set()
        objects: dict[str, list[Mapping[str, Any]]] = {}  # keys holding objects: their values
        # once the original-id property is declared, no row's id need be turned into a UUID here
        need_uuids = property_name(self.options.original_id_key) not in target.properties
        uuids = [as_uuid(i) for i in batch.ids] if need_uuids else None
        for i, props in enumerate(self._properties(batch, uuids)):
            if i in skip:
                continue
            for key, value in props.items():
                if value is None or property_name(key) in target.properties:
                    continue
                if isinstance(value, Mapping):
                    kinds.setdefault(key, set()).add("object")
                    objects.setdefault(key, []).append(value)
                else:
                    kinds.setdefault(key, set()).add(kind_of(value))
                rows_with.setdefault(key, []).append(i)
                if _empty_list(value):
                    empties.add(key)
        refused: dict[int, str] = {}
        unreached: ServerError | TransportError | None = None  # asking again would wait as long
        for key, found in kinds.items():
            found.discard(None)
            kind = found.pop() if len(found) == 1 else "number" if found == {"int", "number"} else None
            body: dict[str, Any] = {"name": key, "dataType": [kind]}
            if kind == "object":
                body["nestedProperties"] = _nested_properties(objects[key])
            if kind is None or body.get("nestedProperties") == []:
                # empty lists only, mixed kinds, objects whose fields do not tell: Weaviate's auto-schema decides
                continue
            if unreached is not None:
                refused.update(dict.fromkeys(rows_with[key], str(unreached)))
                continue
            try:
                self._rest("POST", f"{self._path}/properties", body)
            except (ServerError, TransportError) as exc:
                if not _fails_rows(exc):
                    raise
                # "already in use": declared meanwhile by another task, fine
                if not (isinstance(exc, Rejected) and "already in use" in str(exc)):
                    refused.update(dict.fromkeys(rows_with[key], str(exc)))
                    errors[str(exc)] = exc
                    if not isinstance(exc, Rejected):
                        unreached = exc
                    continue
            target.properties[property_name(key)] = kind
        # an empty list sent for an undeclared property makes auto-schema declare it text[], and every
        # later row of numbers in it fails: it is left out (request_for) until a value types it
        untyped = self._untyped | empties
        if untyped:
            self._untyped = frozenset(k for k in untyped if property_name(k) not in target.properties)
        return refused

    # -- the clearing -----------------------------------------------------------------------------

    def clear_target(self, transport: Transport, namespace: str | None) -> str:
        """Delete the objects of tenant ``namespace``, or of every tenant (or the whole collection), in
        batch deletes of up to the server's QUERY_MAXIMUM_RESULTS each; the collection, its properties
        and its tenants stay. An inactive tenant among them (``COLD``, ``FROZEN``…), which a batch delete
        cannot reach, is a ``ConfigError`` before anything is deleted, unless the collection activates
        its tenants on a request (``autoTenantActivation``; a ``COLD`` one then becomes ``HOT``)."""
        self._transport = transport
        try:
            target = collection_from(self._rest("GET", self._path))
        except NotFound:
            return f"nothing to clear: {self.describe()} does not exist yet"
        tenants: list[str | None] = [None]
        if target.multi_tenant:
            if namespace is not None:
                problem = _tenant_problem(namespace)
                if problem:
                    raise ConfigError(f"option namespace: {problem}")
                tenants = [namespace]
                try:
                    status = {
                        namespace: self._rest("GET", f"{self._path}/tenants/{quote(namespace, safe='')}")
                    }
                except NotFound:  # nothing in it to delete
                    status = {}
            else:
                status = {str(t["name"]): t for t in self._rest("GET", f"{self._path}/tenants") or []}
                tenants = list(status)
            self._check_reachable(target, status)
        elif namespace is not None:
            raise ConfigError(f"option namespace: collection {self.collection!r} has multi-tenancy off")
        deleted = sum(self._delete_all(tenant) for tenant in tenants)
        where = (
            f"tenant {namespace!r}"
            if namespace is not None
            else "every tenant"
            if target.multi_tenant
            else ""
        )
        return f"{deleted} objects in {where + ' of ' if where else ''}{self.describe()}"

    def _check_reachable(self, target: Collection, tenants: Mapping[str, Any]) -> None:
        """Refuse a clear that would stop part way: a batch delete in an inactive tenant fails ("tenant not
        active"), and the tenants before it would be emptied already. ``tenants``: name → the server's
        tenant document (``activityStatus``)."""
        wakes = ACTIVATED if target.auto_activation else frozenset()
        inactive = {
            name: status
            for name, doc in tenants.items()
            if (status := str((doc or {}).get("activityStatus") or "HOT")) not in ACTIVE | wakes
        }
        if inactive:
            listed = ", ".join(f"{name!r} ({status})" for name, status in sorted(inactive.items()))
            raise ConfigError(
                f"{self.describe()}: cannot clear: tenants {listed} are inactive and a batch delete cannot reach "
                "them; nothing was deleted. Activate them (activityStatus HOT), or enable the collection's "
                "autoTenantActivation, then clear again"
            )

    def _delete_all(self, tenant: str | None) -> int:
        """Delete every object of ``tenant`` (``None``: the collection's), a request's limit at a time;
        a tenant that does not exist holds none."""
        request = self._batch_delete(tenant, {"path": ["id"], "operator": "Like", "valueText": "*"})
        deleted = 0
        for _ in range(CLEAR_ROUNDS):
            results = self._delete_results(self._control(request))
            matches, done = int(results.get("matches") or 0), int(results.get("successful") or 0)
            deleted += done
            if results.get("failed"):
                raise ServerError(
                    f"{self.describe()}: a batch delete failed for {results['failed']} of {matches} objects"
                )
            if matches == 0 or done == 0:
                return deleted
        return deleted

    # -- sizes and encoding -----------------------------------------------------------------------

    def row_bytes(self, batch: RowBatch) -> np.ndarray:
        """Encoded size per row: the vector's bytes exactly; properties at twice their JSON size."""
        n = len(batch)
        if batch.op == DELETE:
            return np.full(n, 40, dtype=np.int64)  # a quoted UUID and a comma
        dense = 0 if batch.vectors is None else batch.vectors.shape[1] * 4
        fixed = dense + 64 + len(self.collection) + len(batch.namespace or "") + len(self._send_name or "")
        fixed += sum(m.shape[1] * 4 + len(name) + 16 for name, m in batch.named_vectors.items())
        sizes = np.full(n, fixed, dtype=np.int64)
        for name, multi in batch.multi_vectors.items():  # each a uint16 length and its rows' floats
            sizes += multi.counts() * (multi.dim * 4) + (len(name) + 18)
        if batch.metadata is not None:
            sizes += np.fromiter((2 * metadata_json_len(m) for m in batch.metadata), np.int64, n)
        sizes += np.fromiter((len(str(i)) for i in batch.ids), np.int64, n)  # an id kept as a property
        return sizes

    def _properties(self, batch: RowBatch, uuids: list[str] | None) -> list[dict[str, Any]]:
        """Each row's properties: its metadata, and the original of an id that became a UUID (``uuids``:
        the rows' UUIDs, computed once a batch by the caller; ``None`` leaves the ids out)."""
        key = self.options.original_id_key
        metadata: list[dict[str, Any] | None] = [None] * len(batch)
        if batch.metadata is not None:
            metadata = list(batch.metadata)
        if uuids is None:
            return [meta or {} for meta in metadata]
        out = []
        for raw, uid, meta in zip(batch.ids, uuids, metadata, strict=True):
            props = meta or {}
            if uid != raw and converted(raw):  # equal: canonical text already, no UUIDv5
                props = {**props, key: str(raw)}
            out.append(props)
        return out

    def request_for(self, batch: RowBatch) -> WireRequest:
        if batch.op == DELETE:
            return self._delete_request(batch)
        uuids = uuids_of(batch.ids)  # once a batch: _properties compares them with the ids
        properties = self._properties(batch, uuids)
        untyped = self._untyped
        if untyped:
            properties = [_without_empty_lists(props, untyped) for props in properties]
        body = encode_batch(
            batch,
            uuids,
            properties,
            collection=self.collection,
            vector_name=self._send_name,
            consistency=self.options.consistency_level,
        )
        return WireRequest(BATCH_OBJECTS, body)

    def _batch_delete(self, tenant: str | None, where: dict[str, Any]) -> WireRequest:
        """A batch delete of the objects ``where`` matches in ``tenant``; failed objects are listed, and a
        422 is the reply's to read (``_delete_results``)."""
        query = []
        if tenant is not None:
            query.append(f"tenant={quote(tenant, safe='')}")
        if self.options.consistency_level:
            query.append(f"consistency_level={self.options.consistency_level.upper()}")
        path = "/v1/batch/objects" + ("?" + "&".join(query) if query else "")
        body = {"match": {"class": self.collection, "where": where}, "output": "minimal"}
        return WireRequest(f"DELETE {path}", orjson.dumps(body), answers=frozenset({422}))

    def _delete_results(self, reply: WireReply) -> dict[str, Any]:
        """A batch delete reply's ``results``; a tenant that does not exist holds nothing (422 "tenant not
        found": no match); any other 422 refuses the request."""
        if reply.status == 422:
            from ...transports.http import reason_of

            reason = reason_of(reply.body, self.secrets)
            if TENANT_NOT_FOUND not in reason:
                raise Rejected(f"{self.describe()}: batch delete: HTTP 422: {reason}", status=422)
            return {}
        try:
            return _delete_results_of(reply.body)
        except (ValueError, TypeError, AttributeError):  # orjson's error is a ValueError
            # a proxy's page, a truncated body, counts that are no numbers: the request's rows fail
            # (MalformedReply) instead of an error no report accounts for stopping the write
            raise self.not_its_reply(reply, "a batch delete") from None

    def refuse_deletes(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """Deletes whose tenant is at fault (``_tenancy_problem``) fail alone, unsent, as upserts do."""
        problem = self._tenancy_problem(batch)
        if problem is None:
            return batch, []
        return None, [batch.failure(range(len(batch)), problem, error_type="Invalid")]

    def _delete_request(self, batch: RowBatch) -> WireRequest:
        """A batch delete of the rows' objects, by UUID, in their tenant."""
        where = {"path": ["id"], "operator": "ContainsAny", "valueTextArray": uuids_of(batch.ids)}
        return self._batch_delete(batch.namespace, where)

    def _delete_outcome(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        """Objects the reply lists as failed fail with their reason, the other rows are deleted. A reply
        that matched more objects than it tried (a server's ``QUERY_MAXIMUM_RESULTS``, 10,000 by default,
        caps a request) is followed by the same request until one tries all it matches; if one fails
        objects before that, the rows it does not name may remain, and none of them counts as deleted."""
        results = self._delete_results(reply)
        while _matched_more(results) and int(results.get("successful") or 0) and not results.get("failed"):
            results = self._delete_results(self._control(request))  # the objects still left
        failed, cut_short = int(results.get("failed") or 0), _matched_more(results)
        if not failed and not cut_short:
            return BatchOutcome(written=len(batch))
        rows_of: dict[str, list[int]] = {}
        for i, row_id in enumerate(batch.ids):
            rows_of.setdefault(as_uuid(row_id), []).append(i)
        by_reason: dict[str, list[int]] = {}
        for obj in results.get("objects") or ():
            if obj.get("status") != "FAILED":
                continue
            errors = ((obj.get("errors") or {}).get("error")) or [{}]
            reason = self.secrets.blank("; ".join(str(e.get("message") or "failed") for e in errors))
            by_reason.setdefault(reason, []).extend(rows_of.get(str(obj.get("id")), ()))
        named = {i for rows in by_reason.values() for i in rows}
        failures = [
            batch.failure(sorted(rows), reason, attempts=1) for reason, rows in by_reason.items() if rows
        ]
        if cut_short or len(named) < failed:  # objects it did not name may remain: none counts as deleted
            others = [i for i in range(len(batch)) if i not in named]
            message = f"Weaviate's batch delete failed {failed} objects without naming them all"
            if cut_short:
                message = (
                    f"Weaviate's batch delete matched {results.get('matches')} objects and tried "
                    f"{int(results.get('successful') or 0) + failed} (at most {results.get('limit')} a "
                    f"request: QUERY_MAXIMUM_RESULTS), failing {failed}; these rows' objects may remain "
                    "(deleting them again is safe)"
                )
            if others:
                failures.append(batch.failure(others, message, error_type="Unattributed", attempts=1))
            return BatchOutcome(written=0, failures=failures)
        return BatchOutcome(written=len(batch) - len(named), failures=failures)

    def outcome_of(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        """The rows ``BatchObjectsReply.errors`` names fail with Weaviate's reason; the others are written.
        An error naming an index outside the request cannot be pinned on a row: then no unnamed row is
        counted as written either (they fail saying why; writing them again is safe, upserts are by id)."""
        if batch.op == DELETE:
            return self._delete_outcome(batch, request, reply)
        n = len(batch)
        by_row: dict[int, list[str]] = {}
        stray: list[tuple[int, str]] = []
        for index, message in read_errors(reply.body, self.secrets):
            if 0 <= index < n:
                by_row.setdefault(index, []).append(message)
            else:
                stray.append((index, message))
        by_reason: dict[str, list[int]] = {}
        for i in sorted(by_row):
            by_reason.setdefault("; ".join(by_row[i]), []).append(i)
        failures = [batch.failure(rows, reason, attempts=1) for reason, rows in by_reason.items()]
        if stray:
            shown = "; ".join(f"index {i}: {m}" for i, m in stray[:3])
            failures.append(
                batch.failure(
                    [i for i in range(n) if i not in by_row],
                    f"Weaviate reported {len(stray)} error(s) for objects outside this request of {n} "
                    f"({shown}); which rows they meant is unknown, so these rows are not counted as "
                    "written (they may be: writing them again is safe)",
                    error_type="Unattributed",
                    attempts=1,
                )
            )
            return BatchOutcome(written=0, failures=failures)
        return BatchOutcome(written=n - len(by_row), failures=failures)


def _empty_list(value: Any) -> bool:
    return isinstance(value, list | tuple | np.ndarray) and len(value) == 0


def _without_empty_lists(props: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """``props`` without the empty lists of ``keys`` (properties no value has typed yet); the row's own
    dict is not changed (dead letters read it again)."""
    drop = [k for k in keys & props.keys() if _empty_list(props[k])]
    return {k: v for k, v in props.items() if k not in drop} if drop else props


def _nested_properties(objects: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``nestedProperties`` for an ``object`` property, typed from its objects' fields as a property is
    from its values (an ``int64`` struct field is ``int``; auto-schema would make it ``number``); empty
    where they do not tell (fields of mixed kinds, names Weaviate would not take), leaving the property
    to auto-schema. A field holding only nulls or empty lists so far is left out: auto-schema adds it
    with its first value."""
    kinds: dict[str, set[str | None]] = {}
    inner: dict[str, list[Mapping[str, Any]]] = {}
    for obj in objects:
        for key, value in obj.items():
            if value is None:
                continue
            if not isinstance(key, str) or not _PROPERTY_NAME.fullmatch(key):
                return []
            if isinstance(value, Mapping):
                kinds.setdefault(key, set()).add("object")
                inner.setdefault(key, []).append(value)
            else:
                kinds.setdefault(key, set()).add(kind_of(value))
    if len({property_name(k) for k in kinds}) < len(kinds):  # two fields Weaviate would make one
        return []
    out: list[dict[str, Any]] = []
    for key, found in sorted(kinds.items()):
        found.discard(None)
        if not found:
            continue
        kind = found.pop() if len(found) == 1 else "number" if found == {"int", "number"} else None
        if kind is None:
            return []
        field: dict[str, Any] = {"name": key, "dataType": [kind]}
        if kind == "object":
            field["nestedProperties"] = _nested_properties(inner[key])
            if not field["nestedProperties"]:
                return []
        out.append(field)
    return out


def _length(stored: Any, *, multi: bool) -> int | None:
    """The dimension of a vector as Weaviate's REST API hands it back: a dense vector's length, a
    multi-vector's vectors' length; ``None`` where there is none (an object without it) or it has the
    other shape."""
    if not isinstance(stored, list) or not stored:
        return None
    nested = isinstance(stored[0], list)
    if nested != multi:
        return None
    return len(stored[0]) if multi else len(stored)


def _tenant_problem(name: str) -> str | None:
    """Why ``name`` cannot be a tenant (Weaviate's rule: 1 to 64 letters, digits, '_' and '-'), or
    ``None``. Checked before asking: a collection that makes its tenants answers a bad name over gRPC
    with UNKNOWN, which reads as a server that is down."""
    if _TENANT_NAME.fullmatch(name):
        return None
    if not name:
        return "an empty namespace names no Weaviate tenant"
    return f"namespace {name!r} is no Weaviate tenant name: 1 to 64 letters, digits, '_' and '-'"


def _delete_results_of(body: bytes) -> dict[str, Any]:
    """A batch delete reply's ``results``, checked to be what ``_delete_outcome`` reads: numbers for the
    counts, objects with their errors. Raises ``ValueError``, ``TypeError`` or ``AttributeError`` otherwise."""
    results = dict((orjson.loads(body or b"{}") or {}).get("results") or {})
    for key in ("matches", "successful", "failed", "limit"):
        int(results.get(key) or 0)
    for obj in results.get("objects") or ():
        for error in ((obj.get("errors") or {}).get("error")) or ():
            error.get("message")
    return results


def _matched_more(results: Mapping[str, Any]) -> bool:
    """A batch delete reply that matched objects it did not try: the server's limit a request cut it."""
    tried = int(results.get("successful") or 0) + int(results.get("failed") or 0)
    return int(results.get("matches") or 0) > tried


def _fails_rows(exc: ServerError | TransportError) -> bool:
    """A schema call's error that fails the rows needing the tenant or property: Weaviate refused it, or
    could not be asked within the retries. Others (credentials, a collection gone) stop the write."""
    return not exc.fatal and (isinstance(exc, Rejected) or exc.retryable)


def _schema_failure(failure: BatchFailure, exc: ServerError | TransportError) -> BatchFailure:
    """The rows' failure as the schema call's error has it: refused (as if sent), or retryable and
    never sent."""
    if isinstance(exc, Rejected):
        return msgspec.structs.replace(failure, error_type="Rejected", attempts=1)
    return msgspec.structs.replace(failure, error_type=type(exc).__name__, retryable=True)


def _unstorable(meta: dict[str, Any]) -> str | None:
    """Why Weaviate would not store this row's properties as given, or ``None``: a key that is no property
    name (auto-schema's refusal of a non-ASCII one holds invalid UTF-8, which fails the whole batch),
    two keys that are one property (Weaviate lower-cases a name's first letter), a list holding a null,
    an integer beyond ±2^53 at any depth, a value with no form on the wire (``_formless``)."""
    names: dict[str, str] = {}
    for key in meta:
        if not _PROPERTY_NAME.fullmatch(key):
            return (
                f"metadata key {key!r} is no Weaviate property name: ASCII letters, digits and underscores, "
                "starting with a letter or underscore, at most 231 long ([_A-Za-z][_0-9A-Za-z]{0,230})"
            )
        other = names.setdefault(property_name(key), key)
        if other != key:
            return (
                f"properties {other!r} and {key!r} are one Weaviate property, {property_name(key)!r} (it "
                "lower-cases a name's first letter): one would overwrite the other; rename one"
            )
    for key, value in meta.items():
        if isinstance(value, list | tuple | np.ndarray) and any(v is None for v in value):
            return f"property {key!r}: a list holding a null, which Weaviate cannot store"
        big = integer_outside(value, FLOAT64_EXACT)
        if big is not None:
            return (
                f"property {key!r}: {big} is beyond ±2^53; Weaviate keeps numbers as float64 "
                "and would store another value"
            )
    return _formless(meta)


def _formless(meta: dict[str, Any]) -> str | None:
    """Why a property has no form on Weaviate's wire (a value the rows' checks let through, an
    ``orjson.Fragment`` say), naming the key, or ``None``: checked row by row here, as raised while the
    batch was encoded it stopped the whole write."""
    for key, value in meta.items():
        problem = formless(value)
        if problem is not None:
            return f"property {key!r}: {problem}; Weaviate cannot store it"
    return None
