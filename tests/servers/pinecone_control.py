"""A Pinecone-protocol index host with bulk import: the REST data plane plus ``/bulk/imports``.

Pinecone serves imports on the index host, beside upserts: ``POST /bulk/imports`` (start_import:
``{"uri", "errorMode": {"onError": "abort"|"continue"}, "integrationId"?}`` → ``{"id"}``),
``GET /bulk/imports/<id>`` (describe_import), ``GET /bulk/imports?limit=&paginationToken=``
(list_imports) and ``DELETE /bulk/imports/<id>`` (cancel_import). This server answers all of them
and the data plane of ``pinecone_rest`` (upsert, describe_index_stats, delete) on one port and one
``ServerState``, so vectors an import brings in are read back as upserted ones are.

An import runs in a thread, as Pinecone's runs on its side: Pending, InProgress (with
``percentComplete`` and ``recordsImported``), then Completed, Failed or Cancelled. It reads every
``*.parquet`` file under ``<uri>/<namespace>/`` (``__default__``: the default namespace) from the
object store and checks every row as Pinecone does, exactly: a string ``id`` (1-512 bytes),
``values`` a list of float32 of the index's dimension with no NaN or infinity (and present: a dense
index refuses a record with no dense values, as an upsert of one is refused), ``sparse_values``
with sorted unique uint32 indices and as many values, ``metadata`` null or a flat JSON object of at
most 40 KB (the upsert servers' rules, ``pinecone_rules``; the index type, when the server is given
one, as the upserts' ``index_problem``). A bad row fails the import (error mode ``abort``: the message names the file and the row)
or is skipped (``continue``). A namespace that already holds vectors fails the import before any
row is applied. Each file's accepted rows are recorded in the ``ServerState`` as one request with
headers ``x-import-id`` and ``x-import-file``.

``ImportScript`` makes it adversarial: ``fail_after_rows`` fails the import half way (rows already
applied stay, as at Pinecone), ``delay_s`` slows each file (progress, cancel), ``api_key`` is required
when set (401 otherwise, as for the data plane), ``lose_start_replies`` starts the first imports asked
for and answers 503 (a gateway that lost Pinecone's reply), ``fail_starts`` answers 503 to the first
starts without starting anything, ``fail_describes`` answers 503 to the first describes of an import
(an outage of the index host's gateway while the import goes on).
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import msgspec
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from . import pinecone_rules as rules
from .pinecone_rest import PineconeRestServer, _Handler
from .script import ArrivedVector, Decoded, ServerState, Verdict

__all__ = ["ImportScript", "PineconeImportServer", "store_opener"]

IMPORTS_PATH = "/bulk/imports"
DEFAULT_DIR = "__default__"
TERMINAL = ("Completed", "Failed", "Cancelled")

StoreOpener = Callable[[str], tuple[pafs.FileSystem, str]]


class ImportScript(msgspec.Struct, frozen=True, kw_only=True):
    """What the server does to the imports started after it is set."""

    fail_after_rows: int | None = None  # the import fails once this many rows are applied
    fail_message: str = "Internal error while indexing records (fault script)"
    delay_s: float = 0.0  # per file
    api_key: str | None = None
    lose_start_replies: int = 0  # the first N starts start the import, then answer 503
    fail_starts: int = 0  # the first N starts (after those) answer 503 and start nothing
    fail_describes: int = 0  # the first N describes of an import answer 503; the import goes on


def store_opener(s3_endpoint: str | None = None) -> StoreOpener:
    """Open an import URI as Pinecone would through its storage integration: ``s3://`` on the given
    S3-compatible endpoint (credentials from the environment), ``file://`` on this machine."""

    def open_store(uri: str) -> tuple[pafs.FileSystem, str]:
        parts = urlsplit(uri)
        if parts.scheme == "file":
            return pafs.LocalFileSystem(), parts.path.rstrip("/")
        if parts.scheme == "s3":
            host = s3_endpoint or ""
            fs = pafs.S3FileSystem(
                endpoint_override=host,
                scheme="http",
                region="us-east-1",
                retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1),
                connect_timeout=2,
                request_timeout=10,
            )
            return fs, f"{parts.netloc}{parts.path}".rstrip("/")
        raise ValueError(f"this test server reads s3:// and file:// only, not {parts.scheme}://")

    return open_store


@dataclass
class _Import:
    id: str
    uri: str
    error_mode: str
    created_at: str
    status: str = "Pending"
    finished_at: str | None = None
    percent_complete: float = 0.0
    records_imported: int = 0
    error: str | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)

    def model(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "uri": self.uri,
            "status": self.status,
            "createdAt": self.created_at,
            "percentComplete": self.percent_complete,
            "recordsImported": self.records_imported,
        }
        if self.finished_at is not None:
            out["finishedAt"] = self.finished_at
        if self.error is not None:
            out["error"] = self.error
        return out


class _BadRow(Exception):
    pass


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


class ImportState:
    """Every import of one server, and the thread that runs each."""

    def __init__(
        self, state: ServerState, open_store: StoreOpener, index: rules.IndexType | None = None
    ) -> None:
        self.state = state
        self.open_store = open_store
        self.index = index  # None: a dense dimension is learnt from the first dense row
        self._lock = threading.Lock()
        self.set_script(ImportScript())
        self._imports: dict[str, _Import] = {}
        self._threads: list[threading.Thread] = []
        self._claimed: set[str] = set()  # namespaces an import has started to fill

    def set_script(self, script: ImportScript) -> None:
        """Replace the script; its countdowns of starts begin now."""
        with self._lock:
            self.script = script
            self._starts = 0
            self._describes = 0

    def start_fault(self) -> str | None:
        """What the script does to this start: "lose_reply", "fail", or ``None`` (answer it)."""
        with self._lock:
            self._starts += 1
            if self._starts <= self.script.lose_start_replies:
                return "lose_reply"
            if self._starts <= self.script.lose_start_replies + self.script.fail_starts:
                return "fail"
            return None

    def describe_fault(self) -> bool:
        """Whether this describe answers 503 (the script's ``fail_describes``)."""
        with self._lock:
            self._describes += 1
            return self._describes <= self.script.fail_describes

    def start(self, uri: str, error_mode: str) -> _Import:
        with self._lock:
            job = _Import(str(len(self._imports) + 1), uri, error_mode, _now())
            self._imports[job.id] = job
        thread = threading.Thread(
            target=self._run, args=(job, self.script), name=f"import-{job.id}", daemon=True
        )
        self._threads.append(thread)
        thread.start()
        return job

    def get(self, import_id: str) -> _Import | None:
        with self._lock:
            return self._imports.get(import_id)

    def all(self) -> list[_Import]:
        with self._lock:
            return sorted(self._imports.values(), key=lambda j: int(j.id))

    def join(self, timeout_s: float = 30.0) -> None:
        for thread in list(self._threads):
            thread.join(timeout_s)

    # -- running one import -------------------------------------------------------------------

    def _run(self, job: _Import, script: ImportScript) -> None:
        try:
            self._import(job, script)
        except Exception as exc:  # the store went away, an unreadable file: the import fails, it says why
            self._end(job, "Failed", f"{type(exc).__name__}: {exc}")

    def _end(self, job: _Import, status: str, error: str | None = None) -> None:
        with self._lock:
            job.status, job.error, job.finished_at = status, error, _now()
            if status == "Completed":
                job.percent_complete = 100.0

    def _import(self, job: _Import, script: ImportScript) -> None:
        fs, root = self.open_store(job.uri)
        files: dict[str, list[str]] = {}
        for info in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
            relative = info.path[len(root) + 1 :]
            if info.type == pafs.FileType.File and relative.endswith(".parquet") and relative.count("/") == 1:
                directory, _ = relative.split("/")
                files.setdefault(directory, []).append(info.path)
        if not files:
            self._end(job, "Failed", f"no Parquet files in namespace folders under {job.uri}")
            return
        _, existing, dimension = self.state.describe(script.api_key)
        with self._lock:  # two imports into one namespace: the first claims it, the other fails
            for directory in sorted(files):
                namespace = "" if directory == DEFAULT_DIR else directory
                if existing.get(namespace) or namespace in self._claimed:
                    job.status, job.finished_at = "Failed", _now()
                    job.error = f"namespace {directory!r} already exists in the index"
                    return
            self._claimed.update("" if d == DEFAULT_DIR else d for d in files)
        total = sum(
            pq.ParquetFile(fs.open_input_file(p)).metadata.num_rows for ps in files.values() for p in ps
        )
        with self._lock:
            job.status = "InProgress"
        seen = 0
        for directory in sorted(files):
            namespace = "" if directory == DEFAULT_DIR else directory
            for path in sorted(files[directory]):
                if job.cancelled.is_set():
                    self._end(job, "Cancelled")
                    return
                if script.delay_s:
                    job.cancelled.wait(script.delay_s)
                table = pq.read_table(fs.open_input_file(path))
                problem = _schema_problem(table.schema)
                if problem is not None:
                    self._end(job, "Failed", f"{path.rsplit('/', 1)[-1]}: {problem}")
                    return
                vectors: list[ArrivedVector] = []
                failed: str | None = None
                for row, record in enumerate(table.to_pylist()):
                    if (
                        script.fail_after_rows is not None
                        and job.records_imported + len(vectors) >= script.fail_after_rows
                    ):
                        failed = script.fail_message
                        break
                    try:
                        vector, dimension = _check_row(record, dimension, self.index)
                    except _BadRow as exc:
                        if job.error_mode == "abort":
                            failed = f"{path.rsplit('/', 2)[-2]}/{path.rsplit('/', 1)[-1]} row {row}: {exc}"
                            break
                        continue
                    vectors.append(vector)
                self._apply(job, namespace, path, vectors)
                seen += table.num_rows
                with self._lock:
                    job.percent_complete = 100.0 * seen / max(1, total)
                if failed is not None:
                    self._end(job, "Failed", failed)
                    return
        self._end(job, "Completed")

    def _apply(self, job: _Import, namespace: str, path: str, vectors: list[ArrivedVector]) -> None:
        if not vectors:
            return
        admission = self.state.admit(None)
        try:
            self.state.record(
                admission,
                Verdict("ok", upserted=len(vectors)),
                body=b"",
                headers={"x-import-id": job.id, "x-import-file": path},
                api_key=None,
                decoded=Decoded(namespace, vectors),
            )
        finally:
            self.state.leave()
        with self._lock:
            job.records_imported += len(vectors)


def _check_row(
    record: dict[str, Any], dimension: int, index: rules.IndexType | None = None
) -> tuple[ArrivedVector, int]:
    """One row as Pinecone checks it; the vector to store and the index's dimension (``index``'s, or learnt
    from the first dense row of an empty index). A dense index refuses a record with no dense values, as
    it refuses an upsert of one ("Vector dimension 0 does not match ...")."""
    vid = record.get("id")
    if not isinstance(vid, str):
        raise _BadRow("id is missing")
    problem = rules.id_problem(vid)
    if problem is not None:
        raise _BadRow(problem)
    values = record.get("values")
    sparse = record.get("sparse_values")
    if values is None and sparse is None:
        raise _BadRow(f"record {vid!r} has neither values nor sparse_values")
    array = np.asarray(values if values is not None else [], dtype=np.float64)
    if not np.isfinite(array).all():
        raise _BadRow(f"record {vid!r}: values hold NaN or infinity")
    if index is not None:
        problem = rules.index_problem(index, array.size)
    else:
        problem = rules.dimension_problem(array.size, dimension)
    if problem is not None:
        raise _BadRow(f"record {vid!r}: {problem}")
    values_f32 = b""
    if values is not None:
        dimension = dimension or array.size
        values_f32 = array.astype("<f4").tobytes()
    indices = sparse_values = None
    if sparse is not None:
        idx = list(sparse.get("indices") or [])
        vals = np.asarray(sparse.get("values") or [], dtype=np.float64)
        problem = rules.sparse_problem(idx, vals.size)
        if problem is not None:
            raise _BadRow(f"record {vid!r}: {problem}")
        if any(b <= a for a, b in itertools.pairwise(idx)):
            raise _BadRow(f"record {vid!r}: sparse indices are not sorted and unique")
        if not np.isfinite(vals).all():
            raise _BadRow(f"record {vid!r}: sparse values hold NaN or infinity")
        indices, sparse_values = idx, vals.astype("<f4").tobytes()
    metadata = None
    text = record.get("metadata")
    if text is not None:
        try:
            metadata = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise _BadRow(f"record {vid!r}: metadata is not JSON") from None
        problem = rules.metadata_problem(metadata)
        if problem is not None:
            raise _BadRow(f"record {vid!r}: {problem}")
    vector = ArrivedVector(
        id=vid,
        values_f32=values_f32,
        sparse_indices=indices,
        sparse_values_f32=sparse_values,
        metadata=metadata,
    )
    return vector, dimension


_TYPES = {
    "id": pa.string(),
    "values": pa.list_(pa.float32()),
    "sparse_values": pa.struct([("indices", pa.list_(pa.uint32())), ("values", pa.list_(pa.float32()))]),
    "metadata": pa.string(),
}


def _schema_problem(schema: pa.Schema) -> str | None:
    """Why a file's columns are not Pinecone's import columns (other columns are ignored), or ``None``."""
    if "id" not in schema.names:
        return "no id column"
    for name, expected in _TYPES.items():
        if name in schema.names and not schema.field(name).type.equals(expected):
            return f"column {name} is {schema.field(name).type}; expected {expected}"
    return None


class _ImportHandler(_Handler):
    """``pinecone_rest``'s handler, with ``/bulk/imports`` routed here first."""

    server: Any

    def do_POST(self) -> None:
        if self.path.partition("?")[0] == IMPORTS_PATH:
            self._start(self._read_body())
        else:
            super().do_POST()

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == IMPORTS_PATH or path.startswith(IMPORTS_PATH + "/"):
            self._read_body()
            if self._authorized():
                self._describe_or_list(path[len(IMPORTS_PATH) + 1 :], dict(parse_qsl(query)))
        else:
            super().do_GET()

    def do_DELETE(self) -> None:
        self._read_body()
        path = self.path.partition("?")[0]
        if not path.startswith(IMPORTS_PATH + "/"):
            self._reply(404, b"not found", "text/plain")
        elif self._authorized():
            job = self.server.imports.get(path[len(IMPORTS_PATH) + 1 :])
            if job is None:
                self._fail(404, 5, "Import not found")
                return
            job.cancelled.set()
            self._reply(202, b"{}")

    def _authorized(self) -> bool:
        required = self.server.imports.script.api_key
        if required is not None and self.headers.get("Api-Key") != required:
            self._fail(401, 16, "Invalid API Key")
            return False
        return True

    def _fail(self, status: int, code: int, message: str) -> None:
        self._reply(status, orjson.dumps({"code": code, "message": message, "details": []}))

    def _start(self, body: bytes) -> None:
        if not self._authorized():
            return
        try:
            request = orjson.loads(body or b"{}")
        except orjson.JSONDecodeError:
            self._fail(400, 3, "the body is not JSON")
            return
        uri = request.get("uri") if isinstance(request, dict) else None
        if not isinstance(uri, str) or not uri:
            self._fail(400, 3, "uri is required")
            return
        if urlsplit(uri).scheme not in ("s3", "gs", "https", "file"):
            self._fail(400, 3, f"uri {uri!r}: the scheme must be s3, gs or https")
            return
        mode = ((request.get("errorMode") or {}).get("onError") or "abort").lower()
        if mode not in ("abort", "continue"):
            self._fail(400, 3, f"errorMode.onError {mode!r}: expected abort or continue")
            return
        fault = self.server.imports.start_fault()
        if fault == "fail":
            self._fail(503, 14, "upstream connect error (fault script)")
            return
        job = self.server.imports.start(uri, mode)
        if fault == "lose_reply":  # started; the reply is lost on its way
            self._fail(503, 14, "upstream connect error (fault script, the import started)")
            return
        self._reply(200, orjson.dumps({"id": job.id}))

    def _describe_or_list(self, import_id: str, query: dict[str, str]) -> None:
        imports: ImportState = self.server.imports
        if import_id:
            job = imports.get(import_id)
            if imports.describe_fault():
                self._fail(503, 14, "upstream connect error (fault script)")
            elif job is None:
                self._fail(404, 5, f"Import {import_id!r} not found")
            else:
                self._reply(200, orjson.dumps(job.model()))
            return
        every = imports.all()
        start = int(query.get("paginationToken") or 0)
        limit = int(query.get("limit") or 100)
        page = every[start : start + limit]
        out: dict[str, Any] = {"data": [job.model() for job in page]}
        if start + limit < len(every):
            out["pagination"] = {"next": str(start + limit)}
        self._reply(200, orjson.dumps(out))


class PineconeImportServer:
    """The index host in a daemon thread on 127.0.0.1: ``pinecone_rest``'s data plane and bulk import."""

    def __init__(
        self,
        open_store: StoreOpener,
        state: ServerState | None = None,
        *,
        index: rules.IndexType | None = None,
    ) -> None:
        self.rest = PineconeRestServer(0, state, index=index)
        self.state = self.rest.state
        self.imports = ImportState(self.state, open_store, index)
        httpd = self.rest._httpd  # the REST server's, with this handler and the imports beside its state
        httpd.RequestHandlerClass = _ImportHandler
        httpd.imports = self.imports  # type: ignore[attr-defined]
        self.port = self.rest.port

    @property
    def uri(self) -> str:
        return f"pinecone://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PineconeImportServer:
        self.rest.start()
        return self

    def stop(self) -> None:
        for job in self.imports.all():
            job.cancelled.set()
        self.imports.join()
        self.rest.stop()

    def __enter__(self) -> PineconeImportServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
