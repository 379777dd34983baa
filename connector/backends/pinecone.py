"""Pinecone data plane: ``pinecone://host`` (REST, JSON) and ``pinecone+grpc://host`` (gRPC, protobuf).

The index is the host (as shown in the Pinecone console); no control-plane call is made.
REST: ``POST /vectors/upsert`` with an orjson body whose vectors are written from the float32 rows
(``jsonvec``), each float in its shortest float32 form, never as a double. gRPC:
``/VectorService/Upsert`` with ``UpsertRequest`` encoded by hand (field numbers in
proto/pinecone_upsert.proto), vectors copied straight from the matrix buffer.
Pinecone applies or rejects a request whole; the engine bisects rejections to the rows at fault.

Deletes: ``POST /vectors/delete`` / ``/VectorService/Delete`` with the batch's ids (at most 1,000 a
request, Pinecone's limit) in its namespace. An id that is not there is no error; a namespace that
holds nothing is a 404 in newer API versions, read as "nothing to delete", not as a missing index.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
import numpy as np
import orjson

from .. import protowire as pw
from .. import speedups
from ..errors import ConfigError, DimensionMismatch, NotFound, Unavailable
from ..jsonvec import json_rows
from ..options import BackendOptions, parse_uri
from ..redaction import detached, returned
from ..report import BatchFailure
from ..rows import DELETE, RowBatch, RowRules
from ..rows.checks import metadata_json
from ..rows.types import id_sizes, text_ids
from ..transports.base import Transport, WireReply, WireRequest
from . import sizing
from .base import Backend, BatchOutcome, RequestLimits
from .integers import FLOAT64_EXACT, integer_outside
from .pinecone_import import ImportOptions

if TYPE_CHECKING:
    from ..bulk import BulkPath

__all__ = ["PineconeBackend", "PineconeOptions"]

API_VERSION = "2025-10"
GRPC_METHOD = "/VectorService/Upsert"
REST_METHOD = "POST /vectors/upsert"
GRPC_STATS = "/VectorService/DescribeIndexStats"
REST_STATS = "POST /describe_index_stats"
GRPC_DELETE = "/VectorService/Delete"
REST_DELETE = "POST /vectors/delete"


class _Stats(msgspec.Struct):
    """``describe_index_stats``' JSON, as far as the connector reads it."""

    dimension: float | None = None  # none for a sparse index
    namespaces: dict[str, Any] = {}
    # "dense" or "sparse" (API 2025-04 on); none from older servers
    vector_type: str | None = msgspec.field(default=None, name="vectorType")


class PineconeOptions(ImportOptions, kw_only=True, forbid_unknown_fields=True):
    """Pinecone's own options; the bulk-import ones (``write_mode``, ``import_*``) are in ``ImportOptions``."""

    api_version: str = API_VERSION
    verify: bool = True  # one describe_index_stats call before the first upsert: credentials and dimension


class PineconeBackend(Backend[PineconeOptions]):
    name: ClassVar[str] = "pinecone"
    options_type: ClassVar[type[BackendOptions]] = PineconeOptions

    # Pinecone: ≤ 1000 vectors and ≤ 2 MB per upsert request, ids ≤ 512 chars, metadata ≤ 40 KB per vector.
    # 500 rows by default, as the SDK's upsert_from_dataframe: four requests in flight then carry enough
    # rows to cover a cross-region round trip, and the 2 MB bound still splits wide or JSON rows.
    limits = RequestLimits(
        max_rows=1000, max_bytes=2 << 20, default_rows=500, default_bytes=2 << 20, max_delete_rows=1000
    )
    rules = RowRules(max_id_length=512, max_id_bytes=512, max_metadata_bytes=40_960, allow_sparse_only=True)

    def __init__(self, options: PineconeOptions) -> None:
        super().__init__(options)
        uri = parse_uri(options.uri)
        if uri.transport not in (None, "grpc", "rest", "http", "https"):
            raise ConfigError(
                f"option uri: pinecone has no transport {uri.transport!r}; use pinecone:// or pinecone+grpc://"
            )
        if not uri.host:
            raise ConfigError(
                "option uri: pinecone needs the index host, e.g. pinecone+grpc://my-index-abc123.svc.pinecone.io"
            )
        if uri.path:
            raise ConfigError(
                f"option uri: pinecone names the index by its host; {uri.path!r} after the host "
                "is not allowed "
                "(use option namespace for a namespace)"
            )
        if options.collection is not None:  # taken and dropped, a write would go to the host's index
            raise ConfigError(
                f"option collection: pinecone names the index by its host (option uri); leave collection "
                f"{options.collection!r} out and give that index's host in uri"
            )
        self.grpc = uri.transport == "grpc"
        self.tls = uri.tls(options.tls)
        self.port = uri.port or 443
        self.host = uri.host
        if options.api_key is None and not options.api_key_env and not uri.is_loopback:
            raise ConfigError("option api_key (or api_key_env) is required for pinecone")
        problem = options.namespace is not None and namespace_problem(options.namespace)
        if problem:  # else every request is refused whole, and every row fails after an isolation walk
            raise ConfigError(f"option namespace: {problem}")
        self._index_dimension: int | None = None  # learnt by check_target
        self._dense: bool | None = None  # learnt by check_target: the index is dense (else sparse)

    def describe(self) -> str:
        return f"{'pinecone+grpc' if self.grpc else 'pinecone'}://{self.host}:{self.port}"

    def open_transport(self) -> Transport:
        # an error is raised from no frame that holds the key: the frames that built the metadata did
        return returned(self._transport())

    def _transport(self) -> Transport | ConfigError:
        """The transport, or the error of a key its metadata or headers cannot carry, returned without the
        frames it was raised through (they hold the key)."""
        try:
            return self._new_transport(self.options.credential() or "")
        except ConfigError as exc:
            return detached(exc)

    def _new_transport(self, key: str) -> Transport:
        if self.grpc:
            from ..transports.grpc import GrpcTransport

            metadata = (("api-key", key), ("x-pinecone-api-version", self.options.api_version))
            return GrpcTransport(
                f"{self.host}:{self.port}",
                tls=self.tls,
                secrets=self.secrets,
                metadata=metadata,
                label=self.describe(),
            )
        from ..transports.http import HttpTransport

        scheme = "https" if self.tls else "http"
        headers = (
            ("Api-Key", key),
            ("X-Pinecone-API-Version", self.options.api_version),
            ("Content-Type", "application/json"),
        )
        return HttpTransport(
            f"{scheme}://{self.host}:{self.port}",
            secrets=self.secrets,
            headers=headers,
            max_connections=max(8, self.options.max_concurrency),
            label=self.describe(),
        )

    def check_target(self, transport: Transport, dimension: int | None) -> None:
        """One data-plane ``describe_index_stats`` call: bad keys and hosts fail here, before any row is sent.

        A dimension that differs from the index's is a ``ConfigError``. Skipped with ``verify=false``
        (the Spark driver checks once and tells its tasks so).
        """
        if not self.options.verify:
            return
        index_dimension, _, vector_type = self._stats(transport)
        self._index_dimension = index_dimension or None  # 0: a sparse-only index
        # a dense index reports its dimension; a sparse one none ("Not specified if sparse index")
        self._dense = bool(index_dimension)
        # only vector_type tells a sparse index for sure: a server that learns its dimension from the
        # first dense row (the test servers' default) also reports none while fresh
        if dimension and not index_dimension and vector_type == "sparse":
            # name the option only when it is what states the dense vectors, not the rows' own length
            stated = "option dimension: " if self.options.dimension == dimension else ""
            raise ConfigError(
                f"{stated}index {self.describe()} is a sparse index (it reports no dimension) and "
                f"takes no dense vectors; this write's are {dimension}-dimensional: write sparse vectors "
                "only, or into a dense index"
            )
        if dimension and index_dimension and dimension != index_dimension:
            raise DimensionMismatch(
                f"dimension mismatch: index {self.describe()} has dimension {index_dimension}, the data has {dimension}",
                target_dimension=index_dimension,
            )

    def clear_target(self, transport: Transport, namespace: str | None) -> str:
        """``delete`` with ``deleteAll`` in ``namespace``, or in every namespace the index stats list.

        Pinecone answers 404 "Namespace not found" for a namespace that holds nothing (newer API versions):
        already clear. Any other refusal (an index not found, a method the host does not serve) is raised.
        """
        problem = namespace is not None and namespace_problem(namespace)
        if problem:
            raise ConfigError(problem)
        namespaces = [namespace] if namespace is not None else self._namespaces(transport)
        for name in namespaces:
            if self.grpc:  # DeleteRequest{delete_all=2, namespace=3}
                body = pw.varint_field(2, 1) + (pw.string_field(3, name) if name else b"")
                request = WireRequest(GRPC_DELETE, body, answers=frozenset({"NOT_FOUND"}))
            else:
                doc = {"deleteAll": True, "namespace": name}
                request = WireRequest(REST_DELETE, orjson.dumps(doc), answers=frozenset({404}))
            self._check_deleted(request, self.control(transport, request), "clear")
        where = f"namespace {namespace!r}" if namespace is not None else f"{len(namespaces)} namespace(s)"
        return f"every vector in {where} of {self.describe()}"

    def _namespaces(self, transport: Transport) -> list[str]:
        """The index's namespaces, from ``describe_index_stats`` (the default namespace is ``""``)."""
        return self._stats(transport)[1]

    def _stats(self, transport: Transport) -> tuple[int, list[str], str | None]:
        """One ``describe_index_stats`` call, retried briefly: the index's dimension (0: none, a sparse
        index), its namespaces, sorted, and its vector type (``"dense"``, ``"sparse"``; ``None``: not
        reported). A reply that is not Pinecone's (a proxy's page, a JSON list) is ``MalformedReply``
        naming the host and the call."""
        request = WireRequest(GRPC_STATS, b"") if self.grpc else WireRequest(REST_STATS, b"{}")
        reply = self.control(transport, request)
        try:
            if self.grpc:
                # DescribeIndexStatsResponse{namespaces=1: map<string, NamespaceSummary>, dimension=2,
                # vector_type=6}
                reader = pw.FieldReader(reply.body)
                names = [pw.FieldReader(entry).str(1) for entry in reader.fields.get(1, [])]
                return reader.int(2), sorted(names), reader.str(6) or None
            stats = msgspec.json.decode(reply.body or b"{}", type=_Stats)
            return int(stats.dimension or 0), sorted(stats.namespaces), stats.vector_type or None
        except (ValueError, TypeError, IndexError, msgspec.DecodeError):
            raise self.not_its_reply(reply, request.method) from None

    def bulk(self) -> BulkPath | None:
        """``write_mode=import``: Pinecone's bulk import (``pinecone_import``)."""
        if self.options.write_mode != "import":
            return None
        from .pinecone_import import PineconeBulk

        return PineconeBulk(self.options)

    def resolved_options(self) -> dict[str, Any]:
        """What executors may skip once the driver has run ``check_target``: the check itself when the
        index is dense (its dimension reaches them as option dimension, ``fixed_dimension``, which
        ``_index_is_dense`` reads as dense). An index that reported no dimension (sparse) is checked by
        each executor too: without the check, a stated option dimension would read as a dense index and
        every sparse-only row would fail there while one process writes them."""
        return {"verify": False} if self._dense else {}

    def fixed_dimension(self) -> int | None:
        return self._index_dimension

    def refuse(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """Rows Pinecone refuses, each with why, before they cost a request: Pinecone refuses the whole
        request, mostly naming no row, so each would cost an isolation walk. Metadata values are strings,
        numbers, booleans or lists of strings (numbers are float64: an integer beyond 2^53 would come back
        changed); a dense vector needs a non-zero value; a sparse vector holds at most 1,000 values; a row
        with no dense vector needs a sparse index; ids and namespaces are ASCII without ``\\0`` (a namespace
        of at most 512 characters)."""
        reasons = identifier_problems(batch)
        if batch.metadata is not None:
            for i, metadata in enumerate(batch.metadata):
                problem = metadata and metadata_problem(metadata)
                if problem:
                    reasons.setdefault(i, problem)
        if batch.vectors is not None:
            for i in zero_rows(batch.vectors):
                reasons.setdefault(i, ZERO_VECTOR)
        elif self._index_is_dense():  # a batch with no matrix holds sparse-only rows
            dimension = self._index_dimension or self.options.dimension
            reason = f"no dense vector: the index is dense (dimension {dimension}); {SPARSE_ONLY}"
            reasons.update((i, reason) for i in range(len(batch.ids)) if i not in reasons)
        if batch.sparse is not None:
            for i, sparse in enumerate(batch.sparse):
                if sparse is not None and len(sparse[0]) > MAX_SPARSE_VALUES:
                    reasons.setdefault(i, sparse_count_problem(len(sparse[0])))
        return batch.without(reasons)

    def refuse_deletes(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """Delete rows whose id or namespace Pinecone refuses (``identifier_problems``), before sending:
        Pinecone refuses a delete naming one whole."""
        return batch.without(identifier_problems(batch))

    def _index_is_dense(self) -> bool:
        """What ``check_target`` learnt; without it (``verify=false``), a stated dimension (the driver
        hands its tasks the index's) says dense, since a sparse index has none."""
        return self._dense if self._dense is not None else self.options.dimension is not None

    # -- sizes ----------------------------------------------------------------------------------

    def row_bytes(self, batch: RowBatch) -> np.ndarray:
        """Estimated encoded size per row: exact for gRPC vectors; for JSON, measured on a sample of rows."""
        ids = id_sizes(batch.ids)
        if batch.op == DELETE:
            return ids + 4  # a quoted string and a comma, or a field's tag and length
        return sizing.row_bytes(batch, grpc=self.grpc, fixed=16) + ids

    # -- encoding -------------------------------------------------------------------------------

    def request_for(self, batch: RowBatch) -> WireRequest:
        if self.options.write_mode == "import":  # never upsert quietly what was meant to be imported
            raise ConfigError(
                "option write_mode=import: rows are staged and imported by the Spark data source, the Beam "
                "sink or pinecone_import.import_data(), not upserted by Client.write/upsert"
            )
        if batch.op == DELETE:
            return encode_delete(batch, self.grpc)
        return (
            WireRequest(GRPC_METHOD, encode_grpc(batch))
            if self.grpc
            else WireRequest(REST_METHOD, encode_json(batch))
        )

    def outcome_of(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        """A reply is all-or-nothing: it arrived, so every row is in the index (or, deleted, gone from it),
        unless an upsert's ``upsertedCount`` says fewer. Which rows are missing it does not say, so a
        short count is a transient fault: the request is sent again, and its rows fail if it stays short.
        """
        self._check_deleted(request, reply, "delete")
        if batch.op != DELETE:
            upserted = self._upserted_count(batch, reply)
            if upserted is not None and upserted < len(batch):
                raise Unavailable(
                    f"{self.describe()}: the server upserted {upserted} of the {len(batch)} rows sent "
                    "(upsertedCount), without saying which",
                    status=reply.status,
                )
        return BatchOutcome(written=len(batch))

    def _check_deleted(self, request: WireRequest, reply: WireReply, what: str) -> None:
        """A delete's 404 (``NOT_FOUND``) is "nothing to delete" only in Pinecone's words for a namespace
        that holds nothing ("Namespace not found"); any other (the index itself missing) is ``NotFound``."""
        if reply.status in request.answers and b"namespace" not in reply.body.lower():
            text = self.secrets.blank(reply.body.decode("utf-8", "replace"))[:500]
            raise NotFound(f"{self.describe()} {what}: {reply.status}: {text}", status=reply.status)

    def _upserted_count(self, batch: RowBatch, reply: WireReply) -> int | None:
        """``upsertedCount`` (REST, ``None`` if the reply has none) or ``UpsertResponse.upserted_count``
        (field 1; proto3 leaves a 0 off the wire, so none is 0); a body that is not Pinecone's reply is
        ``MalformedReply``."""
        try:
            if self.grpc:
                fields = pw.FieldReader(reply.body).fields.get(1)
                return 0 if not fields else int(fields[-1])
            if not reply.body.strip():
                return None
            doc = orjson.loads(reply.body)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            count = doc.get("upsertedCount")
            if count is not None and type(count) is not int:
                raise ValueError("upsertedCount is not an integer")
            return count
        except (ValueError, TypeError, IndexError):  # orjson's error is a ValueError
            raise self.not_its_reply(reply, f"an upsert of {len(batch)} rows") from None


def encode_json(batch: RowBatch) -> bytes:
    """The REST body: ``{"vectors": [{id, values, sparseValues?, metadata?}], "namespace"?}``."""
    vectors: list[dict[str, Any]] = []
    rows = None if batch.vectors is None else json_rows(batch.vectors)  # shortest float32 texts
    for i, row_id in enumerate(text_ids(batch.ids)):  # the batch's own list when every id is a str
        item: dict[str, Any] = {"id": row_id}
        if rows is not None:
            item["values"] = rows[i]
        if batch.sparse is not None and batch.sparse[i] is not None:
            indices, values = batch.sparse[i]  # type: ignore[misc]
            item["sparseValues"] = {"indices": indices, "values": values}
        if batch.metadata is not None and batch.metadata[i]:
            item["metadata"] = batch.metadata[i]
        vectors.append(item)
    body: dict[str, Any] = {"vectors": vectors}
    if batch.namespace:
        body["namespace"] = batch.namespace
    return metadata_json(body)  # metadata as every database's: decimals as their text


def encode_delete(batch: RowBatch, grpc: bool) -> WireRequest:
    """``DeleteRequest{ids=1, namespace=3}`` or ``{"ids", "namespace"?}``; a 404 (an empty namespace)
    comes back as a reply."""
    ids = text_ids(batch.ids)
    if grpc:
        body = pw.string_fields(1, ids)
        if batch.namespace:
            body += pw.string_field(3, batch.namespace)
        return WireRequest(GRPC_DELETE, body, answers=frozenset({"NOT_FOUND"}))
    doc: dict[str, Any] = {"ids": ids}
    if batch.namespace:
        doc["namespace"] = batch.namespace
    return WireRequest(REST_DELETE, orjson.dumps(doc), answers=frozenset({404}))


def encode_grpc(batch: RowBatch) -> bytes:
    """``UpsertRequest{vectors=1: Vector{id=1, values=2, metadata=3, sparse_values=4}, namespace=2}``.

    Dense rows with no sparse vectors are framed around the matrix in one pass (``protowire.frame_rows``):
    each ``Vector`` is its id (the head), its row, then its metadata (the tail).
    """
    heads, tails = _vector_parts(batch.ids, batch.metadata)
    suffix = pw.string_field(2, batch.namespace) if batch.namespace else b""
    matrix = batch.vectors
    if matrix is not None and not any(s is not None for s in batch.sparse or ()):
        return pw.frame_rows(1, heads, b"\x12" + pw.varint(4 * matrix.shape[1]), matrix, tails, suffix=suffix)
    return _encode_rows(heads, tails, batch, suffix)


_native_parts: Callable[..., tuple[list[bytes], list[bytes] | None]] | None = speedups.native(
    "pinecone_vector_parts"
)


def _vector_parts(ids: list[Any], metadata: list[Any] | None) -> tuple[list[bytes], list[bytes] | None]:
    """Each ``Vector``'s field ``id=1`` (the id's ``str()``) and, where the batch has metadata, its field
    ``metadata=3`` (nothing for empty metadata). Written natively where the speedups are built: the same
    bytes, any row they cannot write exactly (an id that is no ``str`` or ``int``, metadata that is no
    ``dict`` with ``str`` keys) by ``_vector_part``, any value but plain ``None``, ``bool``, ``int``,
    ``float``, ``str``, ``dict``, ``list`` and ``tuple`` by ``protowire.encode_value``: about 0.1 µs a row
    against 1 µs in Python for the ids alone (on a loaded 2-core machine)."""
    if _native_parts is not None and type(ids) is list and (metadata is None or type(metadata) is list):
        return _native_parts(ids, metadata, _vector_part, pw.encode_value, pw.encode_struct)
    return _python_parts(ids, metadata)


def _python_parts(ids: list[Any], metadata: list[Any] | None) -> tuple[list[bytes], list[bytes] | None]:
    """``_vector_parts`` in Python: the reference the native writer is tested against."""
    encoded = [str(i).encode() for i in ids]
    heads = [b"\x0a" + pw.varint(len(e)) + e for e in encoded]
    if metadata is None:
        return heads, None
    return heads, [pw.len_field(3, pw.encode_struct(md)) if md else b"" for md in metadata]


def _vector_part(row_id: Any, metadata: Any) -> tuple[bytes, bytes]:
    """One row's head and tail in Python: the native writer's for a row it cannot write exactly."""
    heads, tails = _python_parts([row_id], None if metadata is None else [metadata])
    return heads[0], b"" if tails is None else tails[0]


def _encode_rows(heads: list[bytes], tails: list[bytes] | None, batch: RowBatch, suffix: bytes) -> bytes:
    """Rows with sparse vectors, or none dense: one ``Vector`` at a time, dense rows still copied straight
    from the matrix buffer."""
    matrix = batch.vectors
    parts: list[Any] = []
    raw: memoryview | None = None
    row_len = 0
    values_head = b""
    if matrix is not None and len(matrix):
        row_len = 4 * matrix.shape[1]
        raw = np.ascontiguousarray(matrix, dtype="<f4").data.cast("B")
        values_head = b"\x12" + pw.varint(row_len)
    for i, head in enumerate(heads):
        extra = b"" if tails is None else tails[i]
        if batch.sparse is not None and batch.sparse[i] is not None:
            indices, values = batch.sparse[i]  # type: ignore[misc]
            extra += pw.len_field(4, pw.packed_uint32(1, indices) + pw.packed_floats(2, values))
        values = b"" if raw is None else raw[i * row_len : (i + 1) * row_len]
        size = len(head) + (len(values_head) + row_len if raw is not None else 0) + len(extra)
        parts += (b"\x0a", pw.varint(size), head, values_head if raw is not None else b"", values, extra)
    parts.append(suffix)
    return b"".join(parts)


# Pinecone's identifier limits: a record id and a namespace are "ASCII except \0", at most 512 characters
# (an id not empty: the rows' checks refuse that, and the length). Pinecone refuses a request holding one
# whole, naming no row that shares it, and its SDK refuses such an id before sending.
MAX_NAME_LENGTH = 512
NON_ASCII_ID = "id holds a non-ASCII character; Pinecone ids are ASCII (no \\0, at most 512 characters)"
NUL_ID = "id holds the NUL character (\\0), which Pinecone ids may not hold"


def identifier_problems(batch: RowBatch) -> dict[int, str]:
    """Rows whose namespace (the batch's one: a ``namespace_column``'s value, or one a single call was
    given) or id Pinecone refuses, by index, with why."""
    problem = batch.namespace and namespace_problem(batch.namespace)
    if problem:
        return dict.fromkeys(range(len(batch.ids)), problem)
    return id_problems(batch.ids)


def id_problems(ids: list[Any]) -> dict[int, str]:
    """Rows whose id Pinecone refuses (``id_problem``), by index: one pass in C over the joined ids when
    all are ASCII without ``\\0``, the usual case."""
    text = text_ids(ids)
    joined = "".join(text)
    if joined.isascii() and "\0" not in joined:
        return {}
    return {i: problem for i, row_id in enumerate(text) if (problem := id_problem(row_id))}


def id_problem(row_id: str) -> str | None:
    """Why Pinecone refuses this id (as text), or ``None``: a non-ASCII character, or ``\\0``."""
    if not row_id.isascii():
        return NON_ASCII_ID
    if "\0" in row_id:
        return NUL_ID
    return None


def namespace_problem(namespace: str) -> str | None:
    """Why Pinecone refuses this namespace, or ``None``: over 512 characters, a non-ASCII character, or
    ``\\0`` (``""`` is the default namespace). The namespace is shown, cut short when long."""
    shown = repr(namespace) if len(namespace) <= 40 else f"{namespace[:20]!r}..."
    if len(namespace) > MAX_NAME_LENGTH:
        return (
            f"namespace {shown} is {len(namespace)} characters long; Pinecone namespaces are at most "
            f"{MAX_NAME_LENGTH} ASCII characters"
        )
    if not namespace.isascii():
        return f"namespace {shown} holds a non-ASCII character; Pinecone namespaces are ASCII (no \\0)"
    if "\0" in namespace:
        return f"namespace {shown} holds the NUL character (\\0), which Pinecone namespaces may not hold"
    return None


MAX_SPARSE_VALUES = 1000  # "Sparse vectors can contain no more than 1000 non-zero values" (Pinecone's limits)
ZERO_VECTOR = "vector is all zeros: Pinecone needs at least one non-zero value in a dense vector"
SPARSE_ONLY = "Pinecone stores a sparse vector only beside a dense one (sparse-only rows need a sparse index)"


def zero_rows(matrix: np.ndarray) -> list[int]:
    """Rows of ``matrix`` whose values are all zero (-0.0 too). Only rows whose first value is zero are
    read whole (all of them, in place, when they are many: a gathered copy costs more than the read):
    about 12 ns a 1536-d row, 0.4 µs when every row starts with a zero (2-core machine, loaded)."""
    if not matrix.size:
        return []
    maybe = np.flatnonzero(matrix[:, 0] == 0)
    if not maybe.size:
        return []
    if 8 * maybe.size > len(matrix):
        return np.flatnonzero(~matrix.any(axis=1)).tolist()
    return maybe[~matrix[maybe].any(axis=1)].tolist()


def sparse_count_problem(count: int) -> str:
    """Why a sparse vector of ``count`` values is refused."""
    return f"sparse vector has {count} non-zero values; Pinecone takes at most {MAX_SPARSE_VALUES}"


def metadata_problem(metadata: dict[str, Any]) -> str | None:
    """Why Pinecone cannot store this metadata as given, or ``None``. Pinecone stores strings, numbers,
    booleans and lists of strings; dates and timestamps go as ISO 8601 text and ``Decimal`` as its exact
    text (as the README's bad-input table says); any other value (a set, a time of day, a complex number)
    is refused naming its key, never written as its ``str()`` (a set stored as ``"{'a'}"``). numpy
    scalars count as the Python values they hold, numpy arrays as lists."""
    for key, value in metadata.items():
        problem = _value_problem(value)
        if problem is not None:
            return f"metadata {key!r} {problem}"
    return None


def _value_problem(value: Any) -> str | None:
    if isinstance(value, np.bool_ | np.number | np.str_):  # not datetime64: .item() may make it an int
        value = value.item()
    if isinstance(value, str | bool | float | dt.date | Decimal):  # NaN, inf: the rows' checks
        return None
    if isinstance(value, int):
        if integer_outside(value, FLOAT64_EXACT) is None:
            return None
        return (
            f"is {value}: Pinecone stores numbers as float64, which changes integers beyond 2^53; "
            "store it as a string"
        )
    if value is None:
        return "is null: Pinecone stores no nulls; leave the key out"
    if isinstance(value, list | tuple | np.ndarray):
        if all(isinstance(item, str) for item in value):
            return None
        return "is a list holding a non-string; Pinecone lists hold strings only"
    if isinstance(value, Mapping):
        return "is an object; Pinecone metadata values are flat (no nested objects)"
    return (
        f"is a {type(value).__name__}: Pinecone stores strings, numbers, booleans and lists of strings "
        "(dates, timestamps and decimals as text) only; convert it first (a set to a list, say)"
    )
