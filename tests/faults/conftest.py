"""The databases of the fault suite, each as a ``Target``: where to write, how to read back, how to hurt it.

Servers live for the module (starting them is the slow part), and each test writes to a fresh
collection, table or namespace, so a case that killed a server leaves the next one a server that
was started again on the same data. The fault suite owns these servers: it kills them, so it
does not share the integration tests' session servers.

- ``milvus``: ``milvus://`` to ``milvus-lite server`` (``LiteProcess``), started again by the test;
- ``lite``: the embedded default (a path URI); after a kill, the connector must start the server itself;
- ``pgvector``: PostgreSQL with pgvector (``pg_server.py``: Debian's, unix socket), every process killed at once;
- ``chroma``: ``chroma run`` (``ChromaProcess``), in an ``l2`` collection so vectors compare exactly;
- ``pinecone-grpc``, ``pinecone-rest``: the project's protocol servers in their own processes, with
  a journal (``restartable_server_process``) so a restart holds what was acknowledged;
- ``weaviate``: ``weaviate-server`` (``WeaviateProcess``), schema over REST and rows over gRPC, started
  again on the same ports and data; ids become UUIDv5s, read back through their ``original_id``;
- ``qdrant-rest``, ``qdrant-grpc``: the project's Qdrant-protocol server, REST and gRPC over one store,
  in one process with a journal (``RestartableQdrant``), written over either transport and read back
  with qdrant-client; ids become UUIDv5s, read back through their ``original_id``.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pytest

from tests.contract.suite import StoredRow
from tests.integration.chroma_server import ChromaProcess
from tests.integration.milvus_server import LiteProcess, kill_embedded
from tests.integration.pg_server import (  # noqa: F401 - pg_server is a fixture, requested by name
    PgServer,
    kill_server,
    pg_server_fixture,
    restart_server,
    server_pids,
)
from tests.integration.weaviate_server import WeaviateProcess, collection_name
from tests.servers.fixtures import RestartableServer, restartable_server_process
from tests.servers.qdrant_process import RestartableQdrant
from vectordb.connector.backends.milvus import lite as embedded
from vectordb.connector.ids import ORIGINAL_ID_KEY
from vectordb.connector.transports.base import forget_shared

DATABASES = [
    "milvus",
    "lite",
    "pgvector",
    "chroma",
    "pinecone-grpc",
    "pinecone-rest",
    "weaviate",
    "qdrant-rest",
    "qdrant-grpc",
]


@dataclass
class Target:
    """One database as the fault cases see it."""

    name: str
    uri: str
    options: dict[str, Any]
    read_back: Callable[[], list[tuple[str, StoredRow]]]  # every stored row, duplicates kept
    count: Callable[[], int]  # rows stored now (cheap; polled by the fault thread)
    kill: Callable[[], object]
    restart: Callable[[], object] | None  # None: the connector restarts the server itself
    pids: Callable[[], list[int]]  # the server's processes
    uri_at: Callable[[int], str]  # the same kind of URI for a port on 127.0.0.1 (silent or closed)
    where: str  # what an error about this server must name: its host and port, socket or path
    extra: dict[str, Any] = field(default_factory=dict)


def _name(request: pytest.FixtureRequest) -> str:
    stem = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[:40]
    return f"f_{stem}_{uuid.uuid4().hex[:6]}"


@pytest.fixture
def target(request: pytest.FixtureRequest) -> Target:
    """The database named by the test's ``db`` parameter, with a fresh collection for this test."""
    db: str = request.getfixturevalue("db")
    made: Target = request.getfixturevalue(f"target_{db.replace('-', '_')}")
    return made


# -- Milvus: milvus-lite server, and the embedded default ---------------------------------------


@pytest.fixture(scope="module")
def lite_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteProcess]:
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    process = LiteProcess(tmp_path_factory.mktemp("milvus-lite") / "data")
    process.start()
    try:
        yield process
    finally:
        process.stop()
        forget_shared()


def _milvus_reader(address: str) -> Any:
    from pymilvus import MilvusClient

    # its own connection: pymilvus shares one per address, and one a killed or frozen server broke (or
    # that server's "too many pings" GOAWAY ended) would be handed to the next reader
    return MilvusClient(uri=f"http://{address}", timeout=30, dedicated=True)


def read_milvus(address: Callable[[], str], name: str) -> list[tuple[str, StoredRow]]:
    client = _milvus_reader(address())
    try:
        if not client.has_collection(name):
            return []
        client.load_collection(name)  # a restarted server holds its collections released
        rows = client.query(name, filter="", output_fields=["*"], limit=16_384)
    finally:
        client.close()
    out = []
    for row in rows:
        vector = np.asarray(row.pop("vector"), dtype=np.float32)
        row_id = str(row.pop("id"))
        out.append((row_id, StoredRow(vector, row)))
    return out


class MilvusCounter:
    """Counts a collection's rows for the fault thread's polls, on one client (it polls before the
    fault only: a killed server's client is closed, and ``read_milvus`` uses a fresh one)."""

    def __init__(self, address: Callable[[], str], name: str) -> None:
        self.address, self.name = address, name
        self._client: Any = None

    def __call__(self) -> int:
        if self._client is None:
            self._client = _milvus_reader(self.address())
        if not self._client.has_collection(self.name):
            return 0
        found = self._client.query(self.name, filter="", output_fields=["count(*)"])
        return int(found[0]["count(*)"])

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


@pytest.fixture(name="target_milvus")
def milvus_target(request: pytest.FixtureRequest, lite_process: LiteProcess) -> Iterator[Target]:
    name = _name(request)

    def address() -> str:
        return lite_process.address

    count = MilvusCounter(address, name)

    def kill() -> None:
        count.close()
        lite_process.kill()

    yield Target(
        name="milvus",
        uri=f"milvus://{lite_process.address}/{name}",
        options={"create": True, "metric": "euclidean"},
        read_back=lambda: read_milvus(address, name),
        count=count,
        kill=kill,
        restart=lite_process.start,
        pids=lambda: [lite_process.pid] if lite_process.pid else [],
        uri_at=lambda port: f"milvus://127.0.0.1:{port}/{name}",
        where=lite_process.address,
    )
    count.close()


@pytest.fixture(scope="module")
def lite_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    path = str(tmp_path_factory.mktemp("embedded") / "vectors.db")
    try:
        yield path
    finally:
        embedded.stop(path)
        forget_shared()


@pytest.fixture(name="target_lite")
def lite_target(request: pytest.FixtureRequest, lite_path: str) -> Iterator[Target]:
    name = _name(request)

    def address() -> str:
        return embedded.ensure_server(lite_path, idle_timeout_s=300)

    def pids() -> list[int]:
        state = embedded.running(lite_path)
        return [state.pid] if state is not None else []

    count = MilvusCounter(address, name)

    def kill() -> None:
        count.close()
        kill_embedded(lite_path)

    yield Target(
        name="lite",
        uri=f"milvus+lite://{lite_path}",
        options={"collection": name, "create": True, "metric": "euclidean"},
        read_back=lambda: read_milvus(address, name),
        count=count,
        kill=kill,
        restart=None,
        pids=pids,
        uri_at=lambda port: f"milvus://127.0.0.1:{port}/{name}",
        where=lite_path,
        extra={"path": lite_path},
    )
    count.close()


# -- PostgreSQL + pgvector ------------------------------------------------------------------------


def read_pg(server: PgServer, table: str) -> list[tuple[str, StoredRow]]:
    with server.connect() as conn:
        exists = conn.execute("SELECT to_regclass(%s)", (f'"{table}"',)).fetchone()[0]
        if exists is None:
            return []
        found = conn.execute(f'SELECT id::text, embedding::real[], metadata FROM "{table}"').fetchall()
    return [(row_id, StoredRow(np.asarray(vec, dtype=np.float32), meta or {})) for row_id, vec, meta in found]


def count_pg(server: PgServer, table: str) -> int:
    with server.connect() as conn:
        if conn.execute("SELECT to_regclass(%s)", (f'"{table}"',)).fetchone()[0] is None:
            return 0
        return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])


@pytest.fixture(name="target_pgvector")
def pgvector_target(request: pytest.FixtureRequest, pg_server: PgServer) -> Iterator[Target]:
    table = _name(request)

    yield Target(
        name="pgvector",
        uri=pg_server.uri(table),
        options={"create": True, "metric": "euclidean"},
        read_back=lambda: read_pg(pg_server, table),
        count=lambda: count_pg(pg_server, table),
        kill=lambda: kill_server(pg_server),
        restart=lambda: restart_server(pg_server),
        pids=lambda: server_pids(pg_server),
        uri_at=lambda port: f"postgresql://postgres@127.0.0.1:{port}/postgres?table={table}",
        where=pg_server.socket_dir,
        extra={"server": pg_server, "table": table},
    )
    forget_shared()  # pooled connections to a server that may have been killed meanwhile


# -- Chroma -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chroma_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaProcess]:
    pytest.importorskip("chromadb")
    process = ChromaProcess(tmp_path_factory.mktemp("chroma"))
    process.start()
    try:
        yield process
    finally:
        process.stop()
        forget_shared()


def _chroma_reader(process: ChromaProcess) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.HttpClient(
        host="127.0.0.1", port=process.port, settings=Settings(anonymized_telemetry=False)
    )


def read_chroma(process: ChromaProcess, name: str) -> list[tuple[str, StoredRow]]:
    client = _chroma_reader(process)
    try:
        if name not in {c.name for c in client.list_collections()}:
            return []
        got = client.get_collection(name).get(include=["embeddings", "metadatas"])
    finally:
        _close_chroma(client)
    return [
        (row_id, StoredRow(np.asarray(vector, dtype=np.float32), dict(metadata or {})))
        for row_id, vector, metadata in zip(got["ids"], got["embeddings"], got["metadatas"], strict=True)
    ]


def count_chroma(process: ChromaProcess, name: str) -> int:
    import httpx

    # one cheap GET, instead of a chromadb client per poll
    base = f"http://127.0.0.1:{process.port}/api/v2/tenants/default_tenant/databases/default_database"
    with httpx.Client(timeout=5) as http:
        found = http.get(f"{base}/collections/{name}")
        if found.status_code == 404:
            return 0
        found.raise_for_status()
        counted = http.get(f"{base}/collections/{found.json()['id']}/count")
        counted.raise_for_status()
        return int(counted.json())


def _close_chroma(client: Any) -> None:
    # chromadb's close() leaves its httpx sessions open (see tests/integration/chroma_server.py)
    sessions = [
        getattr(getattr(c, "_server", None), "_session", None)
        for c in (client, getattr(client, "_admin_client", None))
    ]
    client.close()
    for session in sessions:
        if session is not None:
            session.close()


@pytest.fixture(name="target_chroma")
def chroma_target(request: pytest.FixtureRequest, chroma_process: ChromaProcess) -> Target:
    name = _name(request).replace("_", "-")
    return Target(
        name="chroma",
        uri=f"chroma://127.0.0.1:{chroma_process.port}/{name}",
        # one SQLite log: two in flight is what the server takes without stalling (the backend's default is 1)
        options={"create": True, "metric": "euclidean", "max_concurrency": 2},
        read_back=lambda: read_chroma(chroma_process, name),
        count=lambda: count_chroma(chroma_process, name),
        kill=chroma_process.kill,
        restart=chroma_process.start,
        pids=lambda: [chroma_process.pid] if chroma_process.pid else [],
        uri_at=lambda port: f"chroma://127.0.0.1:{port}/{name}",
        where=f"127.0.0.1:{chroma_process.port}",
    )


# -- Pinecone protocol servers ----------------------------------------------------------------------


def _pinecone_server(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableServer]:
    journal = tmp_path_factory.mktemp(f"pinecone-{kind}") / "journal.bin"
    with restartable_server_process(kind, journal) as server:  # type: ignore[arg-type]
        yield server
    forget_shared()


@pytest.fixture(scope="module")
def pinecone_grpc_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableServer]:
    yield from _pinecone_server("grpc", tmp_path_factory)


@pytest.fixture(scope="module")
def pinecone_rest_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableServer]:
    yield from _pinecone_server("rest", tmp_path_factory)


def read_pinecone(server: RestartableServer, namespace: str) -> list[tuple[str, StoredRow]]:
    vectors = server.handle.arrived().namespaces.get(namespace, {})
    return [(vid, StoredRow(v.values.copy(), dict(v.metadata or {}))) for vid, v in vectors.items()]


def count_pinecone(server: RestartableServer, namespace: str) -> int:
    """The namespace's vector count from ``describe_index_stats`` (cheap: ``arrived()`` carries every body)."""
    handle = server.handle
    if server.kind == "rest":
        import httpx

        stats = httpx.post(f"{handle.url}/describe_index_stats", json={}, timeout=5).json()
        return int(stats["namespaces"].get(namespace, {}).get("vectorCount", 0))
    import grpc

    from tests.servers.pinecone_grpc import pb

    with grpc.insecure_channel(handle.host) as channel:
        call = channel.unary_unary("/VectorService/DescribeIndexStats")
        reply = pb.DescribeIndexStatsResponse.FromString(call(b"", timeout=5))
    return int(reply.namespaces[namespace].vector_count) if namespace in reply.namespaces else 0


def _pinecone_target(server: RestartableServer, request: pytest.FixtureRequest) -> Target:
    namespace = _name(request)
    scheme = server.handle.uri.split("://", 1)[0]
    return Target(
        name=f"pinecone-{server.kind}",
        uri=server.handle.uri,
        options={"namespace": namespace},
        read_back=lambda: read_pinecone(server, namespace),
        count=lambda: count_pinecone(server, namespace),
        kill=server.kill,
        restart=server.start,
        pids=lambda: [server.pid] if server.pid else [],
        uri_at=lambda port: f"{scheme}://127.0.0.1:{port}",
        where=server.handle.host,
    )


@pytest.fixture(name="target_pinecone_grpc")
def pinecone_grpc_target(request: pytest.FixtureRequest, pinecone_grpc_process: RestartableServer) -> Target:
    return _pinecone_target(pinecone_grpc_process, request)


@pytest.fixture(name="target_pinecone_rest")
def pinecone_rest_target(request: pytest.FixtureRequest, pinecone_rest_process: RestartableServer) -> Target:
    return _pinecone_target(pinecone_rest_process, request)


# -- Weaviate ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def weaviate_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeaviateProcess]:
    pytest.importorskip("weaviate")
    process = WeaviateProcess(tmp_path_factory.mktemp("weaviate"))
    process.start()
    try:
        yield process
    finally:
        forget_shared()
        process.stop()


def read_weaviate(process: WeaviateProcess, name: str) -> list[tuple[str, StoredRow]]:
    """Every object, as weaviate-client v4 reads it, under the id the write was given: the object's
    ``original_id`` (the connector turned it into a UUIDv5), else its UUID (then a stranger to the account)."""
    client = process.server.client()
    try:
        if not client.collections.exists(name):
            return []
        out = []
        for obj in client.collections.get(name).iterator(include_vector=True, cache_size=1000):
            props = {k: v for k, v in obj.properties.items() if v is not None}
            row_id = str(props.pop(ORIGINAL_ID_KEY, obj.uuid))
            vector = obj.vector.get("default")  # a missing one reads as None: "another vector"
            out.append((row_id, StoredRow(None if vector is None else np.asarray(vector, np.float32), props)))
        return out
    finally:
        client.close()


def count_weaviate(process: WeaviateProcess, name: str) -> int:
    """The collection's object count from one GraphQL ``Aggregate`` (0 while it does not exist)."""
    import httpx

    query = {"query": f"{{ Aggregate {{ {name} {{ meta {{ count }} }} }} }}"}
    found = httpx.post(f"{process.server.url}/v1/graphql", json=query, timeout=5).json()
    if found.get("errors"):
        return 0
    return int(found["data"]["Aggregate"][name][0]["meta"]["count"])


@pytest.fixture(name="target_weaviate")
def weaviate_target(request: pytest.FixtureRequest, weaviate_process: WeaviateProcess) -> Iterator[Target]:
    name = collection_name(request.node.name)  # a class name, as Weaviate writes it
    server = weaviate_process.server
    yield Target(
        name="weaviate",
        uri=server.uri(name),
        options={"grpc_port": server.grpc_port, "create": True, "metric": "euclidean"},
        read_back=lambda: read_weaviate(weaviate_process, name),
        count=lambda: count_weaviate(weaviate_process, name),
        kill=weaviate_process.kill,
        restart=weaviate_process.start,
        pids=lambda: [weaviate_process.pid] if weaviate_process.pid else [],
        # the schema's REST port, which the check before the write meets first (the rows' gRPC port
        # alone silent or refused: test_weaviate.py)
        uri_at=lambda port: f"weaviate://127.0.0.1:{port}/{name}",
        where=f"127.0.0.1:{server.grpc_port}",  # the rows' port: a batch's error names it
        extra={"process": weaviate_process, "collection": name},
    )
    forget_shared()
    with contextlib.suppress(Exception):  # a server killed for good by the test: nothing to drop
        weaviate_process.server.rest("DELETE", f"/v1/schema/{name}")


# -- Qdrant protocol server -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def qdrant_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableQdrant]:
    pytest.importorskip("qdrant_client")
    with RestartableQdrant(tmp_path_factory.mktemp("qdrant") / "journal.bin") as server:
        yield server
    forget_shared()


def read_qdrant(server: RestartableQdrant, name: str) -> list[tuple[str, StoredRow]]:
    """Every point, as qdrant-client reads it over REST, under the id the write was given: the point's
    ``original_id`` (the connector turned it into a UUIDv5), else its own id (then a stranger to the account)."""
    client = server.client()
    try:
        if not client.collection_exists(name):
            return []
        out = []
        offset = None
        while True:
            points, offset = client.scroll(
                name, limit=1000, offset=offset, with_payload=True, with_vectors=True
            )
            for point in points:
                payload = dict(point.payload or {})
                row_id = str(payload.pop(ORIGINAL_ID_KEY, point.id))
                vector = None if point.vector is None else np.asarray(point.vector, dtype=np.float32)
                out.append((row_id, StoredRow(vector, payload)))
            if offset is None:
                return out
    finally:
        client.close()


def count_qdrant(server: RestartableQdrant, name: str) -> int:
    """The collection's point count from one REST call (0 while it does not exist)."""
    import httpx

    counted = httpx.post(f"http://{server.rest_host}/collections/{name}/points/count", json={}, timeout=5)
    if counted.status_code == 404:
        return 0
    counted.raise_for_status()
    return int(counted.json()["result"]["count"])


def _qdrant_target(
    server: RestartableQdrant, transport: Literal["rest", "grpc"], request: pytest.FixtureRequest
) -> Iterator[Target]:
    name = _name(request)
    scheme = "qdrant+grpc" if transport == "grpc" else "qdrant"
    yield Target(
        name=f"qdrant-{transport}",
        uri=server.uri(transport, name),
        options={"create": True, "metric": "euclidean"},
        read_back=lambda: read_qdrant(server, name),
        count=lambda: count_qdrant(server, name),
        kill=server.kill,
        restart=server.start,
        pids=lambda: [server.pid] if server.pid else [],
        uri_at=lambda port: f"{scheme}://127.0.0.1:{port}/{name}",
        where=server.grpc_host if transport == "grpc" else server.rest_host,
    )
    forget_shared()
    with contextlib.suppress(Exception):  # a server killed for good by the test: nothing to drop
        import httpx

        httpx.delete(f"http://{server.rest_host}/collections/{name}", timeout=5)


@pytest.fixture(name="target_qdrant_rest")
def qdrant_rest_target(request: pytest.FixtureRequest, qdrant_process: RestartableQdrant) -> Iterator[Target]:
    yield from _qdrant_target(qdrant_process, "rest", request)


@pytest.fixture(name="target_qdrant_grpc")
def qdrant_grpc_target(request: pytest.FixtureRequest, qdrant_process: RestartableQdrant) -> Iterator[Target]:
    yield from _qdrant_target(qdrant_process, "grpc", request)


# -- the matrix's numbers, printed at the end of the run ---------------------------------------------

RESULTS: list[dict[str, Any]] = []


@pytest.fixture
def fault_log(request: pytest.FixtureRequest) -> Callable[..., None]:
    """Keep one case's numbers (rows, seconds) for the summary table."""

    def log(**numbers: Any) -> None:
        RESULTS.append({"case": request.node.name, **numbers})

    return log


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not RESULTS:
        return
    terminalreporter.section("fault matrix")
    for row in RESULTS:
        case = row["case"]
        rest = "  ".join(
            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items() if k != "case"
        )
        terminalreporter.write_line(f"{case:<60} {rest}")
