from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from ... import protowire as pw
from ...errors import ConfigError, DimensionMismatch, NotFound, Rejected, ServerError
from ...options import BackendOptions, collection_of, did_you_mean, parse_uri
from ...report import BatchFailure
from ...rows import DELETE, RowBatch, RowRules
from ...rows.checks import metadata_json
from ...rows.types import id_sizes
from ...transports.base import Transport, WireReply, WireRequest
from ..base import Backend, BatchOutcome, RequestLimits
from .schema import (
    STRING,
    VARCHAR,
    Layout,
    encode_create_index,
    encode_schema,
    layout_from_schema,
    type_name,
)
from .status import Status, error_for, status_of
from .wire import (
    DYNAMIC_FIELD,
    Encoded,
    all_rows_expr,
    delete_keys,
    encode_delete,
    encode_delete_rows,
    encode_query_keys,
    encode_upsert,
    expr_literal,
    keys_expr,
    keys_of,
)

__all__ = ["MilvusBackend", "MilvusOptions"]

SERVICE = "/milvus.proto.milvus.MilvusService/"
UPSERT = SERVICE + "Upsert"
DEFAULT_PORT = 19530
DEFAULT_LITE_COLLECTION = "vectors"
LITE_SCHEME = "milvus+lite://"
METRICS = {"cosine": "COSINE", "euclidean": "L2", "dotproduct": "IP"}
DEFAULT_PARTITION = "_default"  # every collection's partition for rows written without a namespace
CLEAR_PAGE_ROWS = 4096  # keys per Query page and per Delete when a partition is cleared key by key
# a Delete by expression runs on the server as a query plus deletes: give it longer than one upsert
CLEAR_TIMEOUT_S = 600.0
# the index types Milvus documents for a FloatVector field (milvus.io "Index explained", 2.6; GPU_* on GPU
# servers): create=true made whatever it was given, FOO and SPARSE_INVERTED_INDEX included
FLOAT_INDEX_TYPES = frozenset(
    {"AUTOINDEX", "FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "IVF_RABITQ", "HNSW", "HNSW_SQ", "HNSW_PQ"}
    | {"HNSW_PRQ", "DISKANN", "SCANN", "GPU_IVF_FLAT", "GPU_IVF_PQ", "GPU_BRUTE_FORCE", "GPU_CAGRA"}
)
DATABASE_NOT_FOUND = 800  # Status code (merr) of a call in a database that does not exist
NOT_LOADED = 101  # Status code of a query on a released collection (legacy CollectionNotLoaded; Milvus 101)
# Milvus's documented rule for a collection's or a field's name (milvus.io "Limits"; proxy
# validateCollectionNameOrAlias): a letter or _, then letters, digits or _, at most 255 (MaxNameLength's
# default). Milvus Lite checks less ("bad-name", "1abc", "sp ace" made collections no Milvus takes)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
NAME_RULE = "a letter or _, then letters, digits or _; at most 255 characters"
# a partition name every Milvus takes (proxy validatePartitionTag: letters, digits, '_', at most 255; a
# first digit passes its check, '$' and '-' only some versions'); Milvus Lite checks none, and makes a
# directory of the name: "../../x" one outside the collection, 300 characters "File name too long"
PARTITION_NAME = re.compile(r"[A-Za-z0-9_]{1,255}")
# Milvus's sparse indices are "less than 2^32-1"; the row checks allow 2^32-1 (other databases take it)
SPARSE_INDEX_LIMIT = 2**32 - 1


class MilvusOptions(BackendOptions, kw_only=True, forbid_unknown_fields=True):
    db_name: str | None = None
    id_type: Literal["auto", "varchar", "int64"] = "auto"  # key type of a collection made by create=true
    vector_field: str | None = None  # which FloatVector field, when the collection has several
    index_type: str = "AUTOINDEX"  # index of a collection made by create=true


@dataclass(slots=True)
class _InPartition(Encoded):
    """A delete in a partition on Milvus Lite, encoded when sent (``MilvusBackend._delete_in_partition``)."""

    partition: str = ""


class MilvusBackend(Backend[MilvusOptions]):
    name: ClassVar[str] = "milvus"
    named_vectors = "yes"  # several FloatVector fields, one per name
    multi_vectors = "no"
    vectors_refused: ClassVar[Mapping[str, str]] = {
        "multi_vector_columns": (
            "Milvus 2.6 keeps them as ArrayOfVector fields of a struct array (EmbeddingList, MAX_SIM), which "
            "Milvus Lite 3.2 (the embedded server the connector runs and tests against) lacks: it drops "
            "struct array fields from a schema and refuses ArrayOfVector data; write them to qdrant or weaviate"
        )
    }
    options_type: ClassVar[type[BackendOptions]] = MilvusOptions

    # gRPC messages up to 64 MB are safe on every Milvus (proxy default maxRecvMsgSize is larger)
    limits = RequestLimits(max_rows=100_000, max_bytes=64 << 20, default_rows=1000, default_bytes=16 << 20)
    # integer ids stay integers (INT64 keys); the collection's own VarChar max_length is the server's check
    rules = RowRules(
        max_id_length=65_535,
        max_metadata_bytes=None,  # Milvus's limit is per JSON value: wire.MAX_JSON_BYTES
        allow_sparse_only=False,
        numeric_ids=True,
        integer_text=True,
        namespaced=False,  # one row per key across partitions
    )

    def __init__(self, options: MilvusOptions) -> None:
        super().__init__(options)
        self.db_name = options.db_name
        self.lite_path: str | None = None
        # whether the server is Milvus Lite (``_server_is_lite``): learnt from it in check_target, since a
        # milvus:// URI may name a ``milvus-lite server`` as well as a Milvus
        self.lite_server = False
        uri = options.uri
        if uri.startswith(LITE_SCHEME) or "://" not in uri:
            from .lite import lite_path  # the server side of lite.py runs as __main__: import it late

            self.lite_path = lite_path(uri)
            self.host, self.port, self.tls = "127.0.0.1", 0, False
            self.collection = options.collection or DEFAULT_LITE_COLLECTION
        else:
            self._parse_server_uri(uri)
        if not self.collection:
            raise ConfigError(
                "option uri: milvus needs a collection: milvus://host:19530/COLLECTION or option collection"
            )
        if not NAME.fullmatch(self.collection):
            # checked here, not left to CreateCollection: its refusal was a Rejected naming no option, and
            # Milvus Lite made collections of names a Milvus refuses, or ran into its own path rules ("a/b")
            option = "collection" if options.collection else "uri"
            raise ConfigError(
                f"option {option}: {self.collection[:100]!r}{'...' if len(self.collection) > 100 else ''} "
                f"({len(self.collection)} characters) is not a Milvus collection name ({NAME_RULE})"
            )
        # named vectors (option vector_columns): each name is a FloatVector field of that name
        self._names = tuple(options.vector_columns or {})
        if self._names and options.vector_field is not None:
            raise ConfigError(
                "option vector_field: names the field of the single vector; with option vector_columns each "
                "name is its own field"
            )
        self._named_dims: dict[str, int] = {}  # create=true: the fields the collection is made with
        self.index_type = options.index_type.strip().upper()
        if self.index_type not in FLOAT_INDEX_TYPES:
            near = did_you_mean(self.index_type, [kind.lower() for kind in FLOAT_INDEX_TYPES])
            raise ConfigError(
                f"option index_type: {options.index_type!r} is not an index type Milvus has for a float vector"
                f"{near}; one of {', '.join(sorted(FLOAT_INDEX_TYPES))}"
            )
        self._layout: Layout | None = None
        self._transport: Transport | None = None
        self._create_pending = False
        self._partitions: set[str] = set()

    def _parse_server_uri(self, uri: str) -> None:
        parsed = parse_uri(uri)
        if parsed.transport not in (None, "grpc"):
            near = did_you_mean(f"milvus+{parsed.transport}", ("milvus+lite", "milvus+grpc"))
            raise ConfigError(
                f"option uri: milvus has no transport {parsed.transport!r}{near}; use milvus:// (gRPC), "
                "or milvus+lite://PATH (or a file path) for the embedded Milvus Lite"
            )
        if not parsed.host:
            raise ConfigError("option uri: milvus needs a host, e.g. milvus://127.0.0.1:19530/docs")
        self.host, self.port = parsed.host, parsed.port or DEFAULT_PORT
        self.tls = parsed.tls(self.options.tls)
        parts = [p for p in parsed.path.split("/") if p]
        if len(parts) > 2:
            raise ConfigError(f"option uri: {parsed.path!r} is not [db/]collection")
        if len(parts) == 2:
            if self.db_name and self.db_name != parts[0]:
                raise ConfigError(
                    f"option db_name {self.db_name!r} disagrees with the URI's database {parts[0]!r}"
                )
            self.db_name = parts[0]
        self.collection = collection_of(parts[-1] if parts else None, self.options.collection)

    def describe(self) -> str:
        if self.lite_path:
            return f"milvus+lite://{self.lite_path} collection {self.collection}"
        db = f"{self.db_name}/" if self.db_name else ""
        return f"milvus://{self.host}:{self.port}/{db}{self.collection}"

    def open_transport(self) -> Transport:
        from ...transports.grpc import GrpcTransport

        metadata: list[tuple[str, str]] = []
        token = self.options.credential()
        if token:
            metadata.append(("authorization", base64.b64encode(token.encode()).decode()))
        if self.db_name:
            metadata.append(("dbname", self.db_name))
        if self.lite_path:
            from .lite import LiteTransport

            return LiteTransport(self.lite_path, tuple(metadata), self.describe(), self.secrets)
        target = f"{self.host}:{self.port}"
        return GrpcTransport(
            target, tls=self.tls, secrets=self.secrets, metadata=tuple(metadata), label=self.describe()
        )

    # -- control plane ----------------------------------------------------------------------------

    def check_target(self, transport: Transport, dimension: int | None) -> None:
        """Learn the collection's fields and check its dimension; with ``create=true`` make it if missing."""
        self._transport = transport
        layout = self._describe_or_create()
        self.lite_server = self._server_is_lite()
        if layout is None:
            self._create_pending = True
            self._check_namespace_option()
            self._check_created_names(self.options.metadata_columns or (), self._makes_sparse)
            id_type = self.options.id_type
            if dimension is None or id_type == "auto":
                return  # made with the first batch, whose ids and dimension say what it needs
            layout = self._create(dimension, key_int64=id_type == "int64", sparse=self._makes_sparse)
        self._check_layout(layout, dimension)
        self._accept(layout)

    def fixed_dimension(self) -> int | None:
        return None if self._layout is None else self._layout.dim

    def _describe_or_create(self) -> Layout | None:
        """The collection's layout; ``None``: it does not exist and ``create=true`` will make it."""
        layout = self._describe()
        if layout is None and not self.options.create:
            raise ConfigError(
                f"milvus collection {self.collection!r} does not exist at {self.describe()}; "
                "set create=true to create it"
            )
        return layout

    def check_named_target(
        self, transport: Transport, dimensions: Mapping[str, int | None]
    ) -> dict[str, int]:
        """Named vectors (option ``vector_columns``): each name a FloatVector field of that name, of the
        dim option ``vector_dimensions`` states (``dimensions`` the rows gave only make a collection); with
        ``create=true`` a missing collection gets one per name, each indexed as the single vector is
        (``index_type``, ``metric``), once every dimension is known (with ``id_type=auto``, with the first
        batch, whose ids give the key's type). Returns each field's dim: the write's."""
        self._transport = transport
        layout = self._describe_or_create()
        self.lite_server = self._server_is_lite()
        if layout is None:
            known = {name: dim for name, dim in dimensions.items() if dim is not None}
            if len(known) < len(dimensions):
                return {}  # nothing is made while a name's dimension is unknown
            self._named_dims = {name: known[name] for name in self._names}
            self._check_field_names()
            self._create_pending = True
            self._check_namespace_option()
            self._check_created_names(self.options.metadata_columns or (), self._makes_sparse)
            if self.options.id_type == "auto":
                return dict(self._named_dims)
            layout = self._create(None, key_int64=self.options.id_type == "int64", sparse=self._makes_sparse)
        self._check_named_layout(layout, self.options.vector_dimensions or {}, "vector_dimensions")
        self._accept(layout)
        return {name: dim for name, dim in layout.named if dim is not None}

    def _accept(self, layout: Layout) -> None:
        """The checks every write makes of the collection it writes into, existing or just made; then its
        layout is the write's."""
        self._check_sparse_option(layout)
        self._check_unfilled(layout)
        self._layout = layout
        self._check_namespace_option()
        if self.lite_server:
            self._load_if_released()

    def _check_sparse_option(self, layout: Layout) -> None:
        """Option ``sparse_column`` into a collection with no sparse field a write fills is a ``ConfigError``:
        every row holding a sparse vector failed alone, each saying the same, and the others were written
        without theirs."""
        if self.options.sparse_column is None or layout.sparse is not None:
            return
        filled = [name for name in (layout.vector, *(n for n, _ in layout.named)) if name]
        others = [name for name in layout.vector_fields if name not in filled]
        listed = ", ".join(map(repr, filled))
        if others:
            listed += f"; filled by the server or left out: {', '.join(map(repr, others))}"
        raise ConfigError(
            f"option sparse_column: milvus collection {self.collection!r} has no SparseFloatVector field for "
            f"it (its vector fields: {listed or 'none'}); write without option sparse_column, or into a "
            "collection with a SparseFloatVector field"
        )

    def _check_created_names(self, columns: Iterable[str], sparse: bool) -> None:
        """create=true names the new collection's fields as pymilvus's quick setup does (key ``id``, vector
        ``vector``, ``sparse``), whatever options id_column and vector_column say: metadata of one of those
        names is a ``ConfigError`` before anything is made. Made anyway, every row holding it failed in the
        new collection (its value taken for that field). A name of option vector_columns is the user's own
        choice of field name: metadata of that name fails its rows alone (``wire._split_metadata``)."""
        made = {"id": "key"} if self._names else {"id": "key", "vector": "vector"}
        if sparse:
            made["sparse"] = "sparse vector"
        clashes = [name for name in dict.fromkeys(columns) if name in made]
        if not clashes:
            return
        listed = ", ".join(repr(name) for name in clashes)
        fields = ", ".join(f"{what} {name!r}" for name, what in made.items())
        plural = "s" if len(clashes) > 1 else ""
        raise ConfigError(
            f"option metadata_columns: column{plural} {listed} would be metadata, but create=true makes milvus "
            f"collection {self.collection!r} with fields named as pymilvus's quick setup names them ({fields}), "
            "whatever options id_column and vector_column say, so no row holding it could be stored: leave the "
            f"column{plural} out (option metadata_columns) or rename {'them' if plural else 'it'}, or create "
            "the collection yourself; nothing was created"
        )

    def _server_is_lite(self) -> bool:
        """Whether the server is Milvus Lite, which deletes a key in every partition whatever a Delete's
        partition_name says. Milvus answers GetVersion with its version ("v2.6.3"), Milvus Lite 3 with
        "milvus_lite-3.2.2", Milvus Lite 2.4/2.5 not at all (UNIMPLEMENTED). Asked of the server, not read
        from the URI: milvus:// to a ``milvus-lite server`` lost an id in one namespace to a delete in
        another. An answer that names no version counts as Lite: a delete then costs one query more,
        never another namespace's row."""
        if self.lite_path:
            return True
        try:
            reply = self._call("GetVersion", b"")  # GetVersionRequest{}; reply {status=1, version=2}
        except ServerError:  # UNIMPLEMENTED (Lite 2.4/2.5) or a refusal: a later call says if it matters
            return True
        version = reply.str(2).strip().lower()
        return status_of(reply.message(1), self.secrets).code != 0 or not version or "lite" in version

    def _check_unfilled(self, layout: Layout) -> None:
        """On Milvus Lite, a nullable vector field the write leaves out is a ``ConfigError``: Lite stores
        no null vector (pymilvus's ``None`` is refused too: "declared FloatVector but no float_vector data
        is set"), and a row sent without the field got a vector of zeros, stored and searchable."""
        if not self.lite_server or not layout.unfilled:
            return
        name, dtype = layout.unfilled[0]
        option = "vector_columns" if self._names else "vector_field"
        raise ConfigError(
            f"option {option}: milvus collection {self.collection!r} also has nullable vector field {name!r} "
            f"({type_name(dtype)}), which this write does not fill; Milvus Lite stores no null vector, so each "
            "row would get one of zeros nobody sent: write that field too (option vector_columns) or use a "
            "collection without it"
        )

    def _check_namespace_option(self) -> None:
        """Option ``namespace`` names a partition unless the collection has a partition key field, which
        takes it (and option ``namespace_column``'s) only if it is VarChar (``partition_key_problem``)."""
        namespace = self.options.namespace
        if namespace and (self._layout is None or self._layout.partition_key is None):
            why = partition_problem(namespace)
            if why:
                raise ConfigError(f"option {why}")
        why = partition_key_problem(self._layout) if self._layout is not None else None
        if why and (namespace or self.options.namespace_column):
            option = "namespace_column" if self.options.namespace_column else "namespace"
            raise ConfigError(f"option {option}: {why}")
        why = namespace_length_problem(self._layout, namespace) if self._layout and namespace else None
        if why:
            raise ConfigError(f"option {why}")

    def _check_field_names(self) -> None:
        """Names create=true can make a field of: Milvus's rule, and not a field the collection has anyway."""
        taken = {"id", "sparse", DYNAMIC_FIELD}  # the key, the sparse vector, the dynamic field
        for name in self._names:
            why = None
            if name in taken:
                why = "is the key's, the sparse vector's or the dynamic field's"
            elif not NAME.fullmatch(name):
                why = f"is not a Milvus field name ({NAME_RULE})"
            if why:
                raise ConfigError(
                    f"option vector_columns: name {name!r} {why}: create=true makes a field of each name"
                )

    def _check_named_layout(self, layout: Layout, dimensions: Mapping[str, int | None], option: str) -> None:
        """Each field's dim against ``dimensions``: on an existing collection the ones option
        ``vector_dimensions`` states (a dimension the rows gave is no statement: the field's is the
        write's, and rows of another length fail alone); after a create, those the rows were checked
        against (a concurrent creator's collection may have others)."""
        for name, dim in layout.named:
            wanted = dimensions.get(name)
            if wanted is not None and dim is not None and wanted != dim:
                raise ConfigError(
                    f"option {option}: name {name!r}: field {name!r} of milvus collection "
                    f"{self.collection!r} has dim {dim}, the write's vectors have {wanted}"
                )

    def _call(self, method: str, body: bytes, *, timeout_s: float | None = None) -> pw.FieldReader:
        if self._transport is None:
            raise RuntimeError("MilvusBackend: check_target() must run before the first request")
        reply = self.control(self._transport, WireRequest(SERVICE + method, body), timeout_s=timeout_s)
        return pw.FieldReader(reply.body)

    def _expect_ok(self, method: str, status: pw.FieldReader | None, *, allow: tuple[str, ...] = ()) -> None:
        found = status_of(status, self.secrets)
        if found.code and not any(word in found.reason.lower() for word in allow):
            raise error_for(found, f"milvus {method} {self.collection!r}")

    def _describe(self) -> Layout | None:
        name = pw.string_field(3, self.collection)
        has = self._call("HasCollection", name)
        self._check_database(status_of(has.message(1), self.secrets))
        self._expect_ok("HasCollection", has.message(1))
        if not has.int(2):
            return None
        reply = self._call("DescribeCollection", name)
        status = status_of(reply.message(1), self.secrets)
        if status.not_found:
            return None
        if status.code:
            raise error_for(status, f"milvus DescribeCollection {self.collection!r}")
        schema = reply.message(2)
        if schema is None:
            raise ConfigError(f"milvus DescribeCollection {self.collection!r} returned no schema")
        return layout_from_schema(self.collection, schema, self.options.vector_field, self._names)

    def _check_database(self, status: Status) -> None:
        """A database that does not exist is the option's fault: Milvus Lite says so with code 1, Milvus with
        800 (merr ErrDatabaseNotFound); read as the server's, it was retried as if the server were down."""
        reason = status.reason.lower()
        missing = "database" in reason and ("not exist" in reason or "not found" in reason)
        if self.db_name and status.code and (status.code == DATABASE_NOT_FOUND or missing):
            raise ConfigError(
                f"option db_name: database {self.db_name!r} does not exist at {self.describe()} "
                f"({status.reason or 'code ' + str(status.code)})"
            )

    def _check_layout(self, layout: Layout, dimension: int | None) -> None:
        if dimension is not None and layout.dim is not None and layout.dim != dimension:
            raise DimensionMismatch(
                f"dimension mismatch: collection {self.collection} has dim {layout.dim}, data has {dimension}",
                target_dimension=layout.dim,
            )

    def _create(self, dimension: int | None, *, key_int64: bool, sparse: bool) -> Layout:
        """Create the collection, its indexes, and load it; a concurrent creator's collection is reused.
        Named vectors: a FloatVector field per name (``_named_dims``) instead of ``vector``, each indexed."""
        named = self._named_dims if self._names else None
        schema = encode_schema(self.collection, dimension, key_int64=key_int64, sparse=sparse, named=named)
        status = self._call("CreateCollection", pw.string_field(3, self.collection) + pw.len_field(4, schema))
        self._expect_ok("CreateCollection", status, allow=("exist",))
        metric = METRICS[self.options.metric]
        index_type = self.index_type
        indexes = [(name, index_type, metric) for name in (named or ["vector"])] + (
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

    def _ensure_partition(self, partition: str) -> tuple[str, str] | None:
        """Make the partition if missing; a name or a refusal that leaves none: (error type, why), for its
        rows alone."""
        if partition in self._partitions:
            return None
        why = partition_problem(partition)
        if why:
            return "Invalid", why
        body = pw.string_field(3, self.collection) + pw.string_field(4, partition)
        has = self._call("HasPartition", body)
        self._expect_ok("HasPartition", has.message(1))
        if not has.int(2):
            try:
                self._expect_ok("CreatePartition", self._call("CreatePartition", body), allow=("exist",))
            except Rejected as exc:  # this namespace's refusal: retrying or stopping the write loses the rest
                return "Rejected", f"namespace {partition!r}: {exc}"
        self._partitions.add(partition)
        return None

    @property
    def _makes_sparse(self) -> bool:
        """Whether ``create=true`` gives the collection a sparse field: option ``sparse_column``, which the
        driver and every task know alike, never whether some batch's rows happen to hold sparse values
        (a first batch of null ones would make a collection every later sparse row fails in). Without
        the option, dict rows may still carry ``sparse_values``: then the first batch sent says
        (``_layout_for``)."""
        return self.options.sparse_column is not None

    def refuse(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """A row with no sparse vector (null or empty) fails alone, saying so, when the collection has a
        sparse field: such a row would go as an empty one (the connector sends no null sparse value; Milvus
        Lite takes none even for a nullable field), which Milvus refuses with "sparse vector must contain
        at least one nonzero float32 weight", a reason that hides the row's null. So does a row whose sparse
        index is 2^32-1, which the row checks allow and Milvus refuses ("less than 2^32-1")."""
        field = self._layout.sparse if self._layout is not None else None
        if self._layout is None and (self._makes_sparse or _has_sparse(batch)):
            field = "sparse"  # create=true makes the collection with a sparse field (``_layout_for``'s rule)
        if field is None:
            return batch, []
        source = self.options.sparse_column or "sparse_values"
        reason = (
            f"no sparse vector ({source!r} is null or empty) for collection {self.collection}'s sparse field "
            f"{field!r}, which Milvus requires in every row (with at least one nonzero weight)"
        )
        if batch.sparse is None:
            return batch.without(dict.fromkeys(range(len(batch)), reason))
        too_big = (
            f"{source!r} has index {SPARSE_INDEX_LIMIT}; Milvus takes sparse indices less than 2^32-1 "
            f"(at most {SPARSE_INDEX_LIMIT - 1})"
        )
        reasons: dict[int, str] = {}
        for i, s in enumerate(batch.sparse):
            if s is None or not len(s[0]):
                reasons[i] = reason
            elif int(s[0].max()) >= SPARSE_INDEX_LIMIT:
                reasons[i] = too_big
        return batch.without(reasons)

    def _layout_for(self, batch: RowBatch) -> Layout:
        if self._layout is not None:
            return self._layout
        if not self._create_pending or (batch.vectors is None and not self._named_dims):
            raise RuntimeError("MilvusBackend: check_target() must run before the first request")
        id_type = self.options.id_type
        # auto: INT64 only when every id of the first batch is an integer, never on its first row's say
        key_int64 = id_type == "int64" or (
            id_type == "auto" and bool(batch.ids) and all(type(i) is int for i in batch.ids)
        )
        sparse = self._makes_sparse or _has_sparse(batch)
        keys = (key for metadata in batch.metadata or () if metadata for key in metadata)
        self._check_created_names(keys, sparse)  # the input's metadata columns, seen for the first time
        layout = self._create(batch.dimension, key_int64=key_int64, sparse=sparse)
        if self._names:
            self._check_named_layout(layout, self._named_dims, "vector_columns")
        else:
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
        # "" (the default namespace) is where rows without one are written: the default partition
        return self._clear_partition(layout, namespace, namespace or DEFAULT_PARTITION, where)

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
        why = partition_key_problem(layout)
        if why:
            raise ConfigError(f"namespace {namespace!r}: {why}")
        key_field = next(f for f in layout.scalars if f.name == layout.partition_key)
        expr = f"{key_field.name} == {expr_literal(namespace)}"
        deleted = self._delete(encode_delete(self.collection, expr), f"namespace {namespace!r}")
        return f"namespace {namespace!r} (partition key {key_field.name}) of {where} ({deleted} rows)"

    def _clear_partition(self, layout: Layout, namespace: str, partition: str, where: str) -> str:
        body = pw.string_field(3, self.collection) + pw.string_field(4, partition)
        has = self._call("HasPartition", body)
        self._expect_ok("HasPartition", has.message(1))
        if not has.int(2):
            return f"namespace {namespace!r} of {where}: nothing to clear (no partition {partition!r})"
        deleted = 0
        previous: set[Any] = set()
        while True:
            page = self._query_keys(layout, partition)
            if not page:
                return f"namespace {namespace!r} (partition {partition}) of {where} ({deleted} rows)"
            if previous.intersection(page):
                # Strong consistency should hide deleted rows; stop rather than loop if it did not
                raise ServerError(
                    f"milvus collection {self.collection!r}: rows of partition {partition!r} still "
                    "visible after their delete"
                )
            expr = f"{layout.key} in [{', '.join(expr_literal(k) for k in page)}]"
            deleted += self._delete(
                encode_delete(self.collection, expr, partition=partition), f"namespace {namespace!r}"
            )
            previous = set(page)

    def _query_keys(self, layout: Layout, partition: str) -> list[Any]:
        body = encode_query_keys(self.collection, layout, partition, CLEAR_PAGE_ROWS)
        return keys_of(self._query(body), layout)

    def _query(self, body: bytes) -> pw.FieldReader:
        """A Query; a collection found released is loaded and asked again: Milvus Lite restarted mid-write
        comes back with it released, and every delete in a namespace failed row by row (code 101)."""
        reply = self._call("Query", body)
        found = status_of(reply.message(1), self.secrets)
        if found.code == NOT_LOADED or "released" in found.reason.lower():
            self._expect_ok(
                "LoadCollection", self._call("LoadCollection", pw.string_field(3, self.collection))
            )
            reply = self._call("Query", body)
        self._expect_ok("Query", reply.message(1))
        return reply

    def _delete(self, body: bytes, what: str) -> int:
        reply = self._call("Delete", body, timeout_s=self._clear_timeout_s)
        self._expect_ok(f"Delete ({what})", reply.message(1))
        return reply.int(7)  # MutationResult.delete_cnt

    @property
    def _clear_timeout_s(self) -> float:
        return max(self.options.timeout_s, CLEAR_TIMEOUT_S)

    # -- sizes and encoding -----------------------------------------------------------------------

    def row_bytes(self, batch: RowBatch) -> np.ndarray:
        """Encoded size per row: exact for vectors and ids (UTF-8 bytes: a key of 9,000 CJK characters is
        27,000), the JSON length for metadata with 8 bytes more per '-' (``_metadata_bytes``)."""
        n = len(batch)
        dense = 0 if batch.vectors is None else batch.vectors.shape[1] * 4
        dense += sum(matrix.shape[1] * 4 for matrix in batch.named_vectors.values())
        sizes = np.full(n, dense + 8, dtype=np.int64)
        sizes += id_sizes(batch.ids, utf8=True)
        if batch.op == DELETE:
            return sizes  # a key in the expression, quoted and escaped, and a separator
        if batch.sparse is not None:
            sizes += np.fromiter((0 if s is None else len(s[0]) * 8 + 3 for s in batch.sparse), np.int64, n)
        if batch.metadata is not None:
            sizes += np.fromiter((_metadata_bytes(m) + 3 for m in batch.metadata), np.int64, n)
        return sizes

    def request_for(self, batch: RowBatch) -> WireRequest:
        if batch.op == DELETE:
            return self._delete_request(batch)
        layout = self._layout_for(batch)
        partition = None
        why = None
        if batch.namespace:
            why = partition_key_problem(layout) or namespace_length_problem(layout, batch.namespace)
        if why:  # a namespace given per call or per row: its rows fail as option namespace is refused
            return self._refused(batch, "Invalid", why)
        if batch.namespace and layout.partition_key is None:
            refusal = self._ensure_partition(batch.namespace)
            if refusal:
                return self._refused(batch, *refusal)
            partition = batch.namespace
        encoded = encode_upsert(batch, layout, partition=partition)
        if encoded.sent == 0:
            # nothing left to write: a harmless call stands in for the upsert
            return WireRequest(
                SERVICE + "HasCollection", pw.string_field(3, layout.collection), context=encoded
            )
        return WireRequest(UPSERT, encoded.body, context=encoded)

    def _delete_request(self, batch: RowBatch) -> WireRequest:
        """``Delete`` of the batch's keys, in the namespace's partition (or partition key value); where no
        such collection or partition exists, nothing is there to delete: a harmless call stands in."""
        layout = self._layout
        if layout is None and not self._create_pending:
            raise RuntimeError("MilvusBackend: check_target() must run before the first request")
        partition = None
        why = partition_key_problem(layout) if layout is not None and batch.namespace is not None else None
        if why:  # unchecked, each key cost about two requests for Milvus's "incompatible types"
            return self._refused(batch, "Invalid", why)
        if layout is not None and batch.namespace is not None and layout.partition_key is None:
            # a namespace that is given is a partition, "" the default one (as in clear_target): with no
            # partition_name the delete would reach the id in every namespace
            why = partition_problem(batch.namespace) if batch.namespace else None
            if why:
                return self._refused(batch, "Invalid", why)
            wanted = batch.namespace or DEFAULT_PARTITION
            partition = wanted if self._has_partition(wanted) else None
            absent = partition is None
        else:
            absent = layout is None  # create=true, not made yet: the write's first upsert makes it
        if absent or layout is None:
            encoded = Encoded(body=b"", sent=0, absent=True)
            return WireRequest(
                SERVICE + "HasCollection", pw.string_field(3, self.collection), context=encoded
            )
        if partition is not None and self.lite_server:
            # Milvus Lite deletes matching keys in every partition, whatever partition_name says: only the
            # keys this partition holds are named, and which it holds is asked when the request is sent,
            # with its ids held (``outcome_of``): asked now, an earlier batch's upsert of one of them, still
            # in flight, would be missed (the row left behind), or its move to another partition deleted
            held = _InPartition(body=b"", sent=0, partition=partition)
            return WireRequest(SERVICE + "HasCollection", pw.string_field(3, layout.collection), context=held)
        encoded = encode_delete_rows(batch, layout, partition=partition)
        if not encoded.body:
            return WireRequest(
                SERVICE + "HasCollection", pw.string_field(3, layout.collection), context=encoded
            )
        return WireRequest(SERVICE + "Delete", encoded.body, context=encoded)

    def _refused(self, batch: RowBatch, error_type: str, why: str) -> WireRequest:
        """Every row of ``batch`` fails with ``why``; a harmless call stands in for the request."""
        failure = batch.failure(range(len(batch)), why, error_type=error_type)
        encoded = Encoded(body=b"", sent=0, sent_rows=[], refused=[failure])
        return WireRequest(SERVICE + "HasCollection", pw.string_field(3, self.collection), context=encoded)

    def _delete_in_partition(self, batch: RowBatch, partition: str) -> BatchOutcome:
        """Milvus Lite (the embedded server or a ``milvus-lite server``): delete the batch's keys that ``partition`` holds, asked now (see ``_delete_request``);
        on the sender's thread, so a failure is retried as the request's own."""
        layout = self._layout
        assert layout is not None
        present = self._keys_in(layout, partition, delete_keys(batch, layout)[0])
        encoded = encode_delete_rows(batch, layout, partition=partition, present=present)
        refused = list(encoded.refused)
        if encoded.body:
            self._expect_ok("Delete", self._call("Delete", encoded.body).message(1))
        return BatchOutcome(written=len(batch) - sum(f.rows for f in refused), failures=refused)

    def _keys_in(self, layout: Layout, partition: str, keys: list[Any]) -> set[Any]:
        """Which of ``keys`` the partition holds (a Strong query)."""
        if not keys:
            return set()
        body = encode_query_keys(self.collection, layout, partition, len(keys), expr=keys_expr(layout, keys))
        return set(keys_of(self._query(body), layout))

    def _has_partition(self, partition: str) -> bool:
        """Whether ``partition`` exists (known ones are remembered; a missing one is asked again, since a
        later upsert may make it)."""
        if partition in self._partitions:
            return True
        body = pw.string_field(3, self.collection) + pw.string_field(4, partition)
        has = self._call("HasPartition", body)
        self._expect_ok("HasPartition", has.message(1))
        if has.int(2):
            self._partitions.add(partition)
        return bool(has.int(2))

    def outcome_of(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        if isinstance(request.context, _InPartition):
            return self._delete_in_partition(batch, request.context.partition)
        encoded = request.context if isinstance(request.context, Encoded) else None
        if encoded is not None and encoded.absent:  # a delete where nothing is there: those ids are gone
            refused = list(encoded.refused)
            return BatchOutcome(written=len(batch) - sum(f.rows for f in refused), failures=refused)
        refused = list(encoded.refused) if encoded else []
        sent = encoded.sent if encoded else len(batch)
        if sent:
            result = pw.FieldReader(reply.body)
            status = status_of(result.message(1), self.secrets)
            if status.code:
                raise error_for(status, f"milvus rejected {sent} rows of {self.collection!r}")
            errors = result.packed_varints(4)
            if errors:
                rows = encoded.sent_rows if encoded and encoded.sent_rows is not None else range(len(batch))
                named = sorted({i for i in errors if 0 <= i < len(rows)})
                reason = status.reason or "listed in err_index by the server"
                refused.append(batch.failure([rows[i] for i in named], reason, attempts=1))
                stray = sorted({i for i in errors if not 0 <= i < len(rows)})
                if stray:  # the reply names rows this request did not have: no other row can count as written
                    others = sorted(set(range(len(rows))) - set(named))
                    refused.append(
                        batch.failure(
                            [rows[i] for i in others],
                            f"Milvus listed err_index {stray[:3]} outside this request of {len(rows)} rows; "
                            "which rows it meant is unknown, so these are not counted as written (they may "
                            "be: writing them again is safe)",
                            error_type="Unattributed",
                            attempts=1,
                        )
                    )
                    return BatchOutcome(written=0, failures=refused)
                sent -= len(named)
        return BatchOutcome(written=sent, failures=refused)


def _metadata_bytes(metadata: dict[str, Any] | None) -> int:
    """A row's metadata as the upsert may encode it: its JSON, and 8 bytes more per '-', since a negative
    integer in an Int64 field or Array is a 10-byte varint where its JSON has 2 characters ("-1": 4,000
    of them were 12 KB estimated, 40 KB sent). A '-' in text counts too: the estimate errs large."""
    if not metadata:
        return 2
    data = metadata_json(metadata)
    return len(data) + 8 * data.count(b"-")


def _has_sparse(batch: RowBatch) -> bool:
    """Whether a row of ``batch`` holds a sparse vector: then create=true gives the collection a sparse field."""
    return batch.sparse is not None and any(s is not None for s in batch.sparse)


def partition_key_problem(layout: Layout) -> str | None:
    """Why a namespace cannot go into the collection's partition key field (it is not VarChar), or
    ``None``. One rule for upsert, delete and clear: Milvus refused "5" for an Int64 field row by row, and
    a delete's ``tenant == "5"`` as comparing incompatible types; the partition key is metadata then."""
    field = next((f for f in layout.scalars if f.name == layout.partition_key), None)
    if field is None or field.dtype in (VARCHAR, STRING):
        return None
    return (
        f"milvus collection {layout.collection!r} stores the namespace in its partition key {field.describe()}, "
        f"which takes no namespace (only a VarChar one does): write without namespace, with {field.name!r} "
        "as metadata"
    )


def namespace_length_problem(layout: Layout, namespace: str) -> str | None:
    """Why ``namespace`` is too long for the collection's VarChar partition key field, or ``None``: an
    upsert's rows each failed saying the field holds fewer characters, never that the value was the
    namespace. A delete or clear by it needs none of this: no row can hold it."""
    field = next((f for f in layout.scalars if f.name == layout.partition_key), None)
    if field is None or field.max_length is None or len(namespace) <= field.max_length:
        return None  # Milvus counts characters
    return (
        f"namespace {namespace[:100]!r}{'...' if len(namespace) > 100 else ''} has {len(namespace)} characters; "
        f"milvus collection {layout.collection!r} stores the namespace in its partition key {field.describe()}, "
        f"which holds at most {field.max_length}"
    )


def partition_problem(namespace: str) -> str | None:
    """Why ``namespace`` cannot name a Milvus partition, or ``None`` if it can."""
    if PARTITION_NAME.fullmatch(namespace):
        return None
    return (
        f"namespace {namespace[:100]!r}{'...' if len(namespace) > 100 else ''} is not a Milvus partition name "
        "(letters, digits and _, at most 255 characters)"
    )
