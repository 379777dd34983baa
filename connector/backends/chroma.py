"""Chroma over its REST API v2: ``chroma://host:8000/collection``, ``chroma+https://host/collection``.

Requests. ``check_target`` makes two GETs per client: ``/api/v2/pre-flight-checks`` (the
server's ``max_batch_size`` and whether it takes base64 vectors; a ``batch_size`` given above that
size is a ``ConfigError``, and without one a driver hands its tasks that size as theirs) and the
collection by name, whose id every upsert path needs (``POST …/collections/{id}/upsert``); the id is
cached on the backend instance, and ``resolved_options()`` hands it (with the vector encoding and
``verify=false``) to clients that should ask nothing, e.g. Spark tasks after the driver's check. An
option ``collection_id`` given otherwise is checked against the id found by name (the server has no
lookup by id), so rows never go to another collection than the URI's and its dimension is checked. With ``create=true`` a missing
collection is created (``get_or_create``, so concurrent tasks agree) with ``metric`` as its HNSW
space: cosine → ``cosine``, euclidean → ``l2``, dotproduct → ``ip``. Without it a missing
collection is a ``ConfigError``. ``max_concurrency`` defaults to 1 here: a single-node server
writes through one SQLite log, and concurrent upserts there only queue (or stall, at 4).

Options. The URI holds host, port and collection only: a query parameter (``?tenant=``) or a
``user:password@`` is a ``ConfigError`` pointing to options ``tenant``, ``database`` and ``api_key`` (left
alone, they were dropped without a word). ``tenant`` and ``database`` are checked against the server's
rules (a tenant name has 3 characters or more; a database name is a collection name), and a collection
that cannot be found or created because the tenant or the database does not exist says which, naming the
option. ``document_column`` may not name a column another option reads (id, vector, namespace, op): those
are never metadata, so no row would get its document.

Body. ``{"ids", "embeddings", "metadatas"?, "documents"?}``, written by orjson. Vectors go
as base64 of their little-endian float32 bytes when the server says it takes them (what
chromadb's own client sends: exact, and a third of the JSON size), else as JSON arrays
written from the float32 matrix in their shortest float32 form (option ``vector_encoding``;
``jsonvec``). Never as Python floats.

Rows Chroma cannot store are refused before sending, each with its reason: sparse vectors;
metadata keys that are empty, start with ``#`` or ``$`` (the server refuses the request) or
with ``chroma:`` (the server drops them silently, and a non-string ``chroma:document`` makes
the local server's compactor panic, after which it fails every write until restarted);
values other than str, int (64-bit), finite float, bool, null, or a non-empty list of
strings, of bools or of numbers (nested objects, empty lists, NaN); more keys (the namespace key
counted, the document not), or more list items summed over the row's lists, than a local server's
``max_batch_size``, 5,461 (SQLite's bound variables: the server takes such a row, then its compaction fails
and every later read or write of the collection answers 500, even after a restart): one fixed limit, not
the pre-flight's figure, which a Spark task never reads, so a row fails or lands whichever client sends
it. ``request_for`` leaves those rows out of the body and ``outcome_of`` reports them, so the rest of the
batch lands (``refuse`` does the same before batching, for a client that calls it).

Namespaces. Chroma has none per row: a row's namespace is stored in its metadata under
``namespace_key`` (default ``namespace``), so it can be filtered with ``where``. Ids stay
unique per collection, not per namespace: the same id written in two namespaces is one row,
and the later write wins. Every upsert sends the key, as null for a row without namespace: Chroma
merges metadata, so a row written before in a namespace would otherwise stay in it. A row whose
metadata already holds another value under that key (any value, for a row without namespace) is
refused.

Clearing (``clear_target``, for ``Client.clear`` and Spark's overwrite) deletes rows and keeps the
collection, its id, configuration and dimension, so cached ids stay valid. A page at a time, since
one delete takes time in proportion to what it removes (4,000–8,000 rows/s here: a large collection
would outlast ``timeout_s``). A namespace: ``POST …/delete`` with ``where {namespace_key: {"$eq":
ns}}`` and ``limit``, until fewer than ``limit`` go; ``""``, the default namespace, is also the rows
without ``namespace_key``, which no filter matches: every row's metadata is listed and those deleted
by id. The whole collection: the server deletes
nothing for a body without ids or filter, and no filter matches rows without metadata, so ``POST
…/get`` (nothing included, ``limit``) lists ids and ``…/delete`` deletes them, until a page comes
back short. Never ids and a filter in one delete: the local server then takes ~10 ms per id.

Deletes: ``POST …/collections/{id}/delete`` with the batch's ids, and no filter (see above): as for
upserts, an id is the collection's whatever its namespace, so a delete removes the id's row whichever
namespace wrote it. A missing id is no error.

Chroma's upsert merges metadata: keys not in the new row keep their old values, and a
``null`` value deletes a key. Chroma answers a bad request with a 4xx and
``{"error", "message"}`` for the whole request; the engine bisects it to the rows at fault.
"""

from __future__ import annotations

import binascii
import datetime as dt
import decimal
import math
import re
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import quote

import msgspec
import numpy as np
import orjson

from ..errors import ConfigError, ConnectorError, DimensionMismatch, NotFound, Rejected
from ..jsonvec import json_rows
from ..options import BackendOptions, ParsedUri, collection_of, parse_uri
from ..report import BatchFailure
from ..rows import DELETE, RowBatch, RowRules, metadata_json_len
from ..rows.checks import metadata_json
from ..rows.types import id_sizes, text_ids
from ..transports.base import Transport, WireReply, WireRequest
from .base import Backend, BatchOutcome, RequestLimits
from .integers import INT64, integer_outside

__all__ = ["ChromaBackend", "ChromaOptions", "metadata_problem"]

API = "/api/v2"
DEFAULT_PORT = 8000
SPACE_OF_METRIC = {"cosine": "cosine", "euclidean": "l2", "dotproduct": "ip"}
# The local server's pre-flight max_batch_size (SQLite's 32766 bound variables / 6 per record).
MAX_ROWS = 5461
# Collection and database names: 3–512 of [a-zA-Z0-9._-], starting and ending with a letter or digit.
_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9._-]{1,510})[a-zA-Z0-9]")
_NAME_RULE = "3–512 characters from [a-zA-Z0-9._-], starting and ending with a letter or digit, no '..'"
_WIDE = "is an integer beyond 64 bits"
_STORABLE = (
    "Chroma stores str, int, float, bool, or a non-empty list of strings, of bools or of numbers "
    "(dates, times, decimals and UUIDs as their text)"
)
# values stored as their text: dates and times in ISO 8601 (orjson's own), the others as str() writes them
_AS_TEXT = (dt.date, dt.time, dt.timedelta, decimal.Decimal, uuid.UUID)


class ChromaOptions(BackendOptions, kw_only=True, forbid_unknown_fields=True):
    tenant: str = "default_tenant"
    database: str = "default_database"
    namespace_key: str = "namespace"  # the metadata key a row's namespace is stored under
    document_column: str | None = None  # a metadata column sent as Chroma's document instead
    auth_header: Literal["x-chroma-token", "authorization"] = "x-chroma-token"  # authorization: "Bearer KEY"
    vector_encoding: Literal["auto", "base64", "json"] = "auto"  # auto: base64 if the server takes it
    collection_id: str | None = None  # known already (a Spark driver resolved it)
    # with collection_id: check it is the URI's collection's (one lookup by name, which also gives the
    # dimension); false trusts it, as a driver's tasks do once the driver has checked it
    verify: bool = True
    # A single-node server writes through one SQLite log: concurrent upserts only contend there (4 in
    # flight took 100-row batches from ~1,500 to ~200 vectors/s). Raise it for a distributed Chroma.
    max_concurrency: Annotated[int, msgspec.Meta(ge=1, le=64)] = 1


@dataclass(frozen=True, slots=True)
class _Collection:
    id: str
    dimension: int | None


class ChromaBackend(Backend[ChromaOptions]):
    name: ClassVar[str] = "chroma"
    options_type: ClassVar[type[BackendOptions]] = ChromaOptions

    # No body limit was found on the server (8 MB bodies pass); 256 rows keeps requests near 1–4 MB
    # at 768–1536 dimensions and below Chroma Cloud's smaller max_batch_size.
    limits = RequestLimits(max_rows=MAX_ROWS, max_bytes=32_000_000, default_rows=256, default_bytes=8_000_000)
    # The server takes ids of any length (100k characters pass); every row needs a dense vector.
    rules = RowRules(
        max_id_length=65_536, allow_sparse_only=False, namespaced=False
    )  # ids are the collection's

    def __init__(self, options: ChromaOptions) -> None:
        super().__init__(options)
        uri = parse_uri(options.uri)
        if uri.transport not in (None, "http", "https", "rest"):
            raise ConfigError(
                f"option uri: chroma has no transport {uri.transport!r}; use chroma:// or chroma+https://"
            )
        if not uri.host:
            raise ConfigError("option uri: chroma needs a host, e.g. chroma://127.0.0.1:8000/docs")
        _check_query(uri)
        self.collection = _collection_name(uri.path, options.collection)
        _check_tenant_database(options.tenant, options.database)
        if options.sparse_column:
            raise ConfigError("option sparse_column: chroma stores dense vectors only")
        _check_document_column(options)
        self.tls = _tls(uri, options.tls)
        self.host, self.port = uri.host, uri.port or DEFAULT_PORT
        self.tenant, self.database = options.tenant, options.database
        self.namespace_key = options.namespace_key
        problem = metadata_problem({self.namespace_key: ""})
        if problem:
            raise ConfigError(f"option namespace_key: {problem}")
        self.document_column = options.document_column
        self._auth_header: str = options.auth_header
        self._encoding: str = options.vector_encoding
        self._base64 = self._encoding == "base64"
        self._prefix = f"{API}/tenants/{quote(self.tenant, safe='')}/databases/{quote(self.database, safe='')}/collections"
        pinned = options.collection_id
        self._target: _Collection | None = None
        if pinned is not None and not options.verify:  # a driver's hand-off: it checked the id
            self._target = _Collection(id=pinned, dimension=None)
        self._checked = False
        self._server_max_rows: int | None = None  # the pre-flight max_batch_size, once read

    @classmethod
    def input_columns(cls, options: BackendOptions) -> list[tuple[str, str]]:
        """The document column: a name that is no input column would leave every document out unsaid."""
        column = getattr(options, "document_column", None)  # ChromaOptions' own
        return [] if column is None else [("document_column", column)]

    def describe(self) -> str:
        where = (
            ""
            if (self.tenant, self.database) == ("default_tenant", "default_database")
            else f" ({self.tenant}/{self.database})"
        )
        return f"chroma{'+https' if self.tls else ''}://{self.host}:{self.port}/{self.collection}{where}"

    def open_transport(self) -> Transport:
        from ..transports.http import HttpTransport

        headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)
        key = self.options.credential()
        if key:
            auth = (
                ("Authorization", f"Bearer {key}")
                if self._auth_header == "authorization"
                else ("x-chroma-token", key)
            )
            headers += (auth,)
        scheme = "https" if self.tls else "http"
        return HttpTransport(
            f"{scheme}://{self.host}:{self.port}",
            secrets=self.secrets,
            headers=headers,
            max_connections=max(8, self.options.max_concurrency),
            label=self.describe(),
        )

    # -- control plane ----------------------------------------------------------------------------

    def check_target(self, transport: Transport, dimension: int | None) -> None:
        """Resolve (or create) the collection once per backend; refuse a dimension it cannot take."""
        if not self._checked:
            if self._target is None or self._encoding == "auto":  # with both given, ask nothing
                self._read_pre_flight(transport)
            if self._target is None:
                self._target = self._find_collection(transport)
                self._check_pinned_id(self._target.id)
            self._checked = True
        stored = None if self._target is None else self._target.dimension
        if dimension is not None and stored is not None and stored != dimension:
            raise DimensionMismatch(
                f"chroma collection {self.collection!r} holds {stored}-dimensional vectors; this write has "
                f"{dimension} (option dimension, or the length of the input's vectors)",
                target_dimension=stored,
            )

    def resolved_options(self) -> dict[str, Any]:
        """After ``check_target``: options with which a task's backend asks the server nothing.

        A Spark driver can add these to the options it sends to tasks, so no task repeats the lookup.
        """
        if self._target is None:
            raise ConnectorError(f"{self.describe()}: check_target must run first")
        resolved: dict[str, Any] = {
            "collection_id": self._target.id,
            "vector_encoding": "base64" if self._base64 else "json",
            "verify": False,  # checked here: the tasks trust the id and ask nothing
        }
        capped = self._capped_rows()
        if capped is not None:  # the tasks ask no pre-flight: they learn the server's limit here
            resolved["batch_size"] = capped
        return resolved

    def request_rows(self) -> int | None:
        return self._capped_rows()

    def _capped_rows(self) -> int | None:
        """The server's max_batch_size where it is below the default request rows and no batch_size was
        given (a server that takes fewer than 256 records a request), else ``None``."""
        server_max = self._server_max_rows
        if self.options.batch_size is not None or server_max is None:
            return None
        return server_max if server_max < min(self.limits.default_rows, self.limits.max_rows) else None

    def fixed_dimension(self) -> int | None:
        """A Chroma collection takes the length of the first vector stored in it."""
        return None if self._target is None else self._target.dimension

    def _get_json(self, transport: Transport, method: str, body: bytes = b"") -> Any:
        reply = self.control(transport, WireRequest(method, body))
        return orjson.loads(reply.body) if reply.body else {}

    def _read_pre_flight(self, transport: Transport) -> None:
        try:
            checks = self._get_json(transport, f"GET {API}/pre-flight-checks")
        except NotFound:  # an older server: no limits announced, JSON vectors only
            checks = {}
        if self._encoding == "auto":
            self._base64 = bool(checks.get("supports_base64_encoding", False))
        server_max = int(checks.get("max_batch_size", -1))
        self._server_max_rows = server_max if server_max > 0 else None
        given = self.options.batch_size
        if given is not None and 0 < server_max < given:  # only a size the user chose is theirs to fix
            raise ConfigError(
                f"option batch_size: the chroma server takes at most {server_max} records per request; "
                f"set batch_size to {server_max} or less (it is {given})"
            )

    def _check_pinned_id(self, found: str) -> None:
        """Option collection_id must be the URI's collection's: an id of another collection would send the
        rows there, and its dimension would go unchecked."""
        pinned = self.options.collection_id
        if pinned is not None and pinned.lower() != found.lower():
            raise ConfigError(
                f"option collection_id: {pinned!r} is not the id of {self._where()}, which is {found!r}; "
                "leave collection_id out (the collection is found by name) or give the URI's collection's"
            )

    def _where(self) -> str:
        return f"chroma collection {self.collection!r} (tenant {self.tenant!r}, database {self.database!r})"

    def _find_collection(self, transport: Transport) -> _Collection:
        where = self._where()
        try:
            found = self._get_json(transport, f"GET {self._prefix}/{quote(self.collection, safe='')}")
        except NotFound as exc:
            # an id says the collection exists: never create one
            pinned = self.options.collection_id is not None
            if self.options.create and not pinned:
                found = self._create_collection(transport, where)  # names a missing tenant or database
            else:
                missing = self._missing_scope(transport)  # create=true would not help there: say so
                if missing is not None:
                    raise ConfigError(f"{where} cannot be found: {missing}") from None
                if pinned:
                    raise ConfigError(f"option collection_id: {where} does not exist ({exc})") from None
                raise ConfigError(f"{where} does not exist; set create=true to create it ({exc})") from None
        return _Collection(id=str(found["id"]), dimension=found.get("dimension"))

    def _create_collection(self, transport: Transport, where: str) -> Any:
        space = SPACE_OF_METRIC[self.options.metric]
        body = {"name": self.collection, "configuration": {"hnsw": {"space": space}}, "get_or_create": True}
        try:
            return self._get_json(transport, f"POST {self._prefix}", orjson.dumps(body))
        except Rejected as exc:  # e.g. "Database [x] does not exist", said of a missing tenant too
            missing = self._missing_scope(transport)
            said = str(exc) if missing is None else f"{missing} (the server said: {exc})"
            raise ConfigError(f"cannot create {where}: {said}") from None

    def _missing_scope(self, transport: Transport) -> str | None:
        """Which of options tenant and database names nothing on the server, or ``None``: the server
        says only that the collection does not exist, or blames the database for a missing tenant. Only
        asked after a failure; an answer other than 404 (a token without admin rights) tells nothing."""
        tenant = f"{API}/tenants/{quote(self.tenant, safe='')}"
        checks = (
            ("tenant", tenant, f"chroma tenant {self.tenant!r} does not exist"),
            (
                "database",
                f"{tenant}/databases/{quote(self.database, safe='')}",
                f"chroma database {self.database!r} does not exist in tenant {self.tenant!r}",
            ),
        )
        for option, path, problem in checks:
            try:
                self._get_json(transport, f"GET {path}")
            except NotFound:
                return f"option {option}: {problem}; create it first (chromadb's AdminClient.create_{option})"
            except ConnectorError:
                return None
        return None

    def clear_target(self, transport: Transport, namespace: str | None) -> str:
        """Delete every row of the collection, or of ``namespace`` in it, a page at a time.

        The collection keeps its id, configuration and dimension. Raises ``NotFound`` naming the
        collection if it was dropped since ``check_target``.
        """
        if self._target is None:
            raise ConnectorError(f"{self.describe()}: check_target must run before clear_target")
        what = f"chroma collection {self.collection!r}"
        if namespace is None:
            what = f"every row of {what}"
        else:
            what = f"namespace {namespace!r} (metadata {self.namespace_key!r}) of {what}"
        path = f"{self._prefix}/{self._target.id}"
        page = self._clear_page_rows()
        try:
            if namespace is None:
                deleted = self._delete_every_row(transport, path, page, what)
            else:
                deleted = self._delete_namespace(transport, path, namespace, page)
        except NotFound as exc:
            raise NotFound(
                f"cannot clear {what}: its collection id {self._target.id} is gone (dropped since it was "
                f"looked up?): {exc}",
                status=exc.status,
            ) from None
        return f"{what}: {deleted} rows deleted"

    def _clear_page_rows(self) -> int:
        """Rows per delete: as many as the server takes in one write (SQLite's bound variables)."""
        if self._server_max_rows is not None:
            return min(self._server_max_rows, self.limits.max_rows)
        return min(self.options.batch_size or self.limits.default_rows, self.limits.max_rows)

    def _delete_namespace(self, transport: Transport, path: str, namespace: str, page: int) -> int:
        """Delete the rows of ``namespace``; ``""`` (the default namespace) is also the rows written
        without one (no ``namespace_key``), as PostgreSQL's ``""`` is also its rows with a NULL one."""
        body = {"where": {self.namespace_key: {"$eq": namespace}}, "limit": page}
        deleted = 0
        while True:
            reply = self._get_json(transport, f"POST {path}/delete", orjson.dumps(body))
            count = int(reply.get("deleted") or 0)  # by filter, the count of rows it removed
            deleted += count
            if count < page:
                break
        if namespace == "":
            deleted += self._delete_without_key(transport, path, page)
        return deleted

    def _delete_without_key(self, transport: Transport, path: str, page: int) -> int:
        """Delete the rows whose metadata lacks ``namespace_key`` (or that have none): no filter matches
        a missing key, so every row's metadata is read, a page at a time, and those ids deleted after."""
        ids: list[str] = []
        offset = 0
        while True:
            listing = orjson.dumps({"include": ["metadatas"], "limit": page, "offset": offset})
            reply = self._get_json(transport, f"POST {path}/get", listing)
            found = [str(i) for i in reply.get("ids") or ()]
            metadatas = reply.get("metadatas") or [None] * len(found)
            ids += [i for i, m in zip(found, metadatas, strict=False) if not m or self.namespace_key not in m]
            offset += len(found)
            if len(found) < page:
                break
        for start in range(0, len(ids), page):
            self._get_json(transport, f"POST {path}/delete", orjson.dumps({"ids": ids[start : start + page]}))
        return len(ids)

    def _delete_every_row(self, transport: Transport, path: str, page: int, what: str) -> int:
        listing = orjson.dumps({"include": [], "limit": page})
        deleted = 0
        last: list[str] = []
        while True:
            ids = [str(i) for i in self._get_json(transport, f"POST {path}/get", listing).get("ids") or ()]
            if ids and ids == last:  # the server kept what it said it deleted: never loop on it
                raise ConnectorError(f"cannot clear {what}: {len(ids)} rows remain after their delete")
            if ids:
                self._get_json(transport, f"POST {path}/delete", orjson.dumps({"ids": ids}))
                deleted += len(ids)  # listed, so stored: the reply counts every id given
            if len(ids) < page:
                return deleted
            last = ids

    # -- sizes ------------------------------------------------------------------------------------

    def row_bytes(self, batch: RowBatch) -> np.ndarray:
        """Estimated encoded size per row: exact for base64 vectors, an upper bound for JSON ones."""
        n = len(batch)
        if batch.op == DELETE:  # ids alone
            return id_sizes(batch.ids) + 4
        dim = batch.dimension or 0
        vector = 4 * math.ceil(4 * dim / 3) + 3 if self._base64 else 15 * dim + 2
        sizes = np.full(n, vector + 8, dtype=np.int64)
        sizes += id_sizes(batch.ids)
        sizes += len(self.namespace_key) + len(batch.namespace or "null") + 8  # the key goes with every row
        if batch.metadata is not None:
            sizes += np.fromiter((metadata_json_len(m) for m in batch.metadata), dtype=np.int64, count=n)
        return sizes

    # -- encoding ---------------------------------------------------------------------------------

    def request_for(self, batch: RowBatch) -> WireRequest:
        if self._target is None:
            raise ConnectorError(f"{self.describe()}: check_target must run before the first request")
        if batch.op == DELETE:
            body = orjson.dumps({"ids": text_ids(batch.ids)})
            return WireRequest(f"POST {self._prefix}/{self._target.id}/delete", body)
        refused = self.refusals(batch)
        keep = [i for i in range(len(batch)) if i not in refused]
        body = encode_upsert(batch, keep, self._base64, self.namespace_key, self.document_column)
        return WireRequest(f"POST {self._prefix}/{self._target.id}/upsert", body, context=refused)

    def outcome_of(self, batch: RowBatch, request: WireRequest, reply: WireReply) -> BatchOutcome:
        # The reply is all-or-nothing for the rows sent; the rows left out failed before sending.
        refused: dict[int, str] = request.context or {}  # type: ignore[assignment]
        return BatchOutcome(written=len(batch) - len(refused), failures=batch.without(refused)[1])

    def refuse(self, batch: RowBatch) -> tuple[RowBatch | None, list[BatchFailure]]:
        """The rows Chroma can store, and a failure per reason for the others (the client calls it
        before sizing requests). ``request_for`` still leaves such rows out, for batches made otherwise."""
        return batch.without(self.refusals(batch))

    def refusals(self, batch: RowBatch) -> dict[int, str]:
        """Row index → why Chroma cannot store the row (pure: request_for and outcome_of agree)."""
        reasons: dict[int, str] = {}
        if batch.vectors is None:
            return {i: "chroma needs a dense vector for every row" for i in range(len(batch))}
        for i, sparse in enumerate(batch.sparse or ()):
            if sparse is not None:
                reasons[i] = "chroma stores no sparse vectors"
        for i, metadata in enumerate(batch.metadata or ()):
            if i in reasons or not metadata:
                continue
            problem = self._row_metadata_problem(metadata, batch.namespace)
            if problem:
                reasons[i] = problem
        return reasons

    def _row_metadata_problem(self, metadata: dict[str, Any], namespace: str | None) -> str | None:
        doc_key = self.document_column
        if doc_key is not None and metadata.get(doc_key) is not None:
            document = metadata[doc_key]
            if not isinstance(document, str):
                return f"document column {doc_key!r} holds a {type(document).__name__}; chroma documents are strings"
        if doc_key is not None and doc_key in metadata:
            metadata = {k: v for k, v in metadata.items() if k != doc_key}
        stored = metadata.get(self.namespace_key)
        # without a namespace the key goes as null (see _metadatas), so a value there would put the row in it
        same = stored is None if namespace is None else stored is None or stored == namespace
        if not same or (stored is not None and not isinstance(stored, str)):
            where = f"'s namespace is {namespace!r}" if namespace is not None else " has no namespace"
            return (
                f"metadata {self.namespace_key!r} is {stored!r} but the row{where} "
                "(chroma stores the namespace under that key: option namespace_key)"
            )
        return metadata_problem(metadata) or self._too_many_values(metadata)

    def _too_many_values(self, metadata: dict[str, Any]) -> str | None:
        """Chroma stores each key and each list item as one SQLite bound variable: a row with more than
        the local server's max_batch_size (``MAX_ROWS``) of either is accepted, then fails the collection's
        compaction, and every later write or read of the collection answers 500, even after a restart.

        One fixed limit, not the pre-flight's figure: a Spark task asks no pre-flight, and the same row
        must fail or land whichever client sends it. The bound is a local server's (SQLite's); a server
        announcing another max_batch_size (Chroma Cloud's) limits requests by it, and keeps metadata limits
        of its own, which this does not know."""
        keys = len(metadata) + (self.namespace_key not in metadata)  # the namespace key is always sent
        if keys > MAX_ROWS:
            return (
                f"metadata has {keys} keys (with {self.namespace_key!r}); a local chroma server takes at most "
                f"{MAX_ROWS} (its max_batch_size), and chroma's SQLite compaction fails beyond it"
            )
        items = sum(len(v) for v in metadata.values() if isinstance(v, list | tuple | np.ndarray))
        if items > MAX_ROWS:
            return (
                f"metadata lists hold {items} items in all; a local chroma server takes at most {MAX_ROWS} "
                "(its max_batch_size), and chroma's SQLite compaction fails beyond it"
            )
        return None


# --------------------------------------------------------------------------------------------------
# options


def _check_query(uri: ParsedUri) -> None:
    """A chroma URI is ``host[:port][/collection]``: a query parameter (``?tenant=``) would otherwise be
    dropped without a word, and the rows written to the default tenant and database (``parse_uri`` refuses a
    ``user:password@``). Parameters are named, never their values."""
    if uri.query:
        raise ConfigError(
            f"option uri: chroma takes no query parameters (given: {', '.join(sorted(uri.query))}); use "
            "options tenant and database, and api_key for a token"
        )


def _collection_name(path: str, option: str | None) -> str:
    name = collection_of(path, option)
    if not name:
        raise ConfigError(
            "option uri: chroma needs a collection, e.g. chroma://127.0.0.1:8000/docs (or option collection)"
        )
    if not _is_name(name):
        raise ConfigError(f"option collection: {name!r} is not a chroma collection name: {_NAME_RULE}")
    return name


def _is_name(name: str) -> bool:
    """The server's rule for collection and database names (``_NAME_RULE``)."""
    return _NAME.fullmatch(name) is not None and ".." not in name


def _check_tenant_database(tenant: str, database: str) -> None:
    """The server's rules (chroma 1.5): a tenant name has at least 3 characters, any; a database name is
    a collection name. The server's own refusal (an HTTP 400 at the first request) names neither option."""
    if len(tenant) < 3:
        raise ConfigError(f"option tenant: {tenant!r} is not a chroma tenant name: at least 3 characters")
    if not _is_name(database):
        raise ConfigError(f"option database: {database!r} is not a chroma database name: {_NAME_RULE}")


def _check_document_column(options: ChromaOptions) -> None:
    """The document is read from the row's metadata, and a column another option reads (the id, a vector,
    the namespace, the op) is never metadata: every document would be left out, the write reporting OK."""
    column = options.document_column
    if column is None:
        return
    taken: list[tuple[str, str | None]] = [
        ("namespace_column", options.namespace_column),
        ("op_column", options.op_column),
    ]
    if not options.id_from:  # with id_from the id column is not read: its columns stay metadata
        taken.append(("id_column", options.id_column))
    # with vector_columns or multi_vector_columns vector_column is not read (chroma refuses those options)
    if options.vector_columns is None and options.multi_vector_columns is None:
        taken.append(("vector_column", options.vector_column))
    for option, other in taken:
        if other == column:
            raise ConfigError(
                f"option document_column: column {column!r} is option {option}'s, which is never metadata, so "
                "no row would get a document; name another column (a copy of it, if that text is the document)"
            )


def _tls(uri: ParsedUri, option: bool | None) -> bool:
    """The scheme's word (``chroma+https``, ``chroma+http``) when it gives one, else the shared rule."""
    transport = uri.transport
    scheme_says = {"https": True, "http": False}.get(transport or "")
    if scheme_says is not None and option is not None and option != scheme_says:
        raise ConfigError(
            f"option tls={str(option).lower()} contradicts the scheme chroma+{transport} in option uri"
        )
    if scheme_says is not None:
        return scheme_says
    return uri.tls(option)


# --------------------------------------------------------------------------------------------------
# metadata rules


def metadata_problem(metadata: dict[Any, Any]) -> str | None:
    """Why Chroma cannot store this metadata, or ``None`` if it can."""
    for key, value in metadata.items():
        if not isinstance(key, str):
            return f"metadata key {key!r} is not a string"
        if not key:
            return "metadata key is empty"
        if key[0] in "#$":
            return f"metadata key {key!r} starts with {key[0]!r}, which chroma reserves"
        if key.startswith("chroma:"):
            return f"metadata key {key!r} starts with 'chroma:', which chroma reserves"
        problem = _value_problem(value)
        if problem:
            return f"metadata {key!r} {problem}"
    return None


def _value_problem(value: Any) -> str | None:
    kind = type(value)  # exact types first: this runs for every value of every row
    if kind is str or kind is bool or value is None:
        return None
    if kind is int:
        return None if integer_outside(value, INT64) is None else _WIDE
    if kind is float:
        return None if math.isfinite(value) else "is NaN or infinite"
    if isinstance(value, str | bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return None if integer_outside(value, INT64) is None else _WIDE
    if isinstance(value, float | np.floating):
        return None if math.isfinite(value) else "is NaN or infinite"
    if isinstance(value, list | tuple | np.ndarray):
        return _list_problem(value.tolist() if isinstance(value, np.ndarray) else value)
    if isinstance(value, _AS_TEXT):  # written as text, as every other database's metadata takes them
        return None
    return f"is a {type(value).__name__}; {_STORABLE}"


def _list_problem(items: list[Any] | tuple[Any, ...]) -> str | None:
    if not items:
        return "is an empty list, which chroma would store as nothing"
    kinds = set()
    for item in items:
        if isinstance(item, str):
            kinds.add("strings")
        elif isinstance(item, bool | np.bool_):
            kinds.add("bools")
        elif isinstance(item, int | float | np.integer | np.floating):
            # one kind: a list of integers and floats comes back all floats (1 → 1.0, 2^60 + 1 rounded)
            kinds.add("integers" if isinstance(item, int | np.integer) else "floats")
            if _value_problem(item):
                return f"holds a number chroma cannot store ({item!r})"
        else:
            return f"is a list holding a {type(item).__name__}; {_STORABLE}"
    if len(kinds) > 1:
        return f"is a list mixing {' and '.join(sorted(kinds))}; chroma lists hold one kind"
    return None


# --------------------------------------------------------------------------------------------------
# the body


def encode_upsert(
    batch: RowBatch, keep: list[int], base64: bool, namespace_key: str, document_column: str | None
) -> bytes:
    """``{"ids", "embeddings", "metadatas"?, "documents"?}`` for the rows ``keep`` of ``batch``."""
    every = len(keep) == len(batch)
    matrix = batch.vectors if every else batch.vectors[keep]  # type: ignore[index]
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    body: dict[str, Any] = {
        "ids": [str(batch.ids[i]) for i in keep],
        "embeddings": _base64_rows(matrix) if base64 else json_rows(matrix),
    }
    metadatas, documents = _metadatas(batch, keep, namespace_key, document_column)
    body["metadatas"] = metadatas
    if documents is not None:
        body["documents"] = documents
    return metadata_json(body)  # metadata as every database's: decimals and durations as their text


def _base64_rows(matrix: np.ndarray) -> list[str]:
    """Each row's little-endian float32 bytes, base64: Chroma's packed form, exact by construction."""
    if matrix.size == 0:  # memoryview cannot cast an empty buffer
        return [""] * len(matrix)
    raw = memoryview(np.ascontiguousarray(matrix, dtype="<f4").data).cast("B")
    row_len = 4 * matrix.shape[1]
    if row_len % 3 == 0:  # rows end on base64 group boundaries: encode once, then cut (768, 1536 dims)
        text = binascii.b2a_base64(raw, newline=False).decode("ascii")
        step = row_len // 3 * 4
        return [text[i : i + step] for i in range(0, len(text), step)]
    return [
        binascii.b2a_base64(raw[i : i + row_len], newline=False).decode("ascii")
        for i in range(0, len(raw), row_len)
    ]


def _metadatas(
    batch: RowBatch, keep: list[int], namespace_key: str, document_column: str | None
) -> tuple[list[dict[str, Any]], list[str | None] | None]:
    """Per kept row: the metadata to send (namespace added, document taken out) and the documents."""
    source = batch.metadata
    metadatas: list[dict[str, Any]] = []
    documents: list[str | None] = []
    for i in keep:
        metadata = dict(source[i]) if source is not None and source[i] else {}
        documents.append(metadata.pop(document_column, None) if document_column else None)
        # always the key: null when the row has no namespace, as Chroma's upsert merges metadata and
        # deletes a key sent as null, so a row written before in a namespace leaves it
        metadata[namespace_key] = batch.namespace
        metadatas.append(metadata)
    return metadatas, (documents if any(d is not None for d in documents) else None)
