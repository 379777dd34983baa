"""No secret anywhere a user or an operator looks, however a write fails.

Writes that fail in every way (a wrong key, refused rows, a server that never answers, replies slower
than ``timeout_s``, connection refused, a bad option, an unreachable PostgreSQL with a password in its
URI) run with the root logger at DEBUG and every library's logger on. Then every log record, everything
written to stdout/stderr, every exception with its chained causes and traceback text, every report
(repr, str, summary, each failure) and Beam's display data are searched for the api key and the password.
Spark's recorded plans are checked in tests/spark (test_write: the plans hold no api_key).

Servers echo keys, so the second half runs the same writes against servers that quote the key each
request carried in every refusal (401, 400, 5xx): in the body or gRPC status details, and in a reply
header or trailing metadata. End to end, through the connector's transports: the project's Pinecone
(REST, gRPC), Qdrant (REST, gRPC), embeddings and bulk-import servers in echo mode, and fakes that
speak just enough Weaviate REST and gRPC, Chroma REST, Milvus gRPC (refusals and statuses) and the
PostgreSQL start-up to echo (tests/servers/echo.py). At the mapping function, the texts no server here
sends whole: Weaviate's per-object errors, Milvus's upsert status, a malformed embeddings reply.
Spark's and Beam's paths are in tests/spark/test_secrets.py and tests/beam/test_secrets.py.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import orjson
import pyarrow as pa
import pytest

from tests.net import closed_port, silent_listener
from tests.servers.echo import EchoGrpcServer, EchoHttpServer, EchoPostgresServer
from tests.servers.fixtures import start_server
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import ConnectorError, connect
from vectordb.connector import protowire as pw
from vectordb.connector.redaction import Secrets
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import WireReply, WireRequest, forget_shared

API_KEY = "sk-SECRETKEY-7f3a9c1e5b"
PASSWORD = "PW-SECRET-42e8d0"
LIBRARIES = ("grpc", "httpx", "httpcore", "urllib3", "psycopg", "pymilvus", "chromadb", "asyncio", "hpack")


@pytest.fixture
def everything_logged(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    previous = {name: logging.getLogger(name).level for name in ("", *LIBRARIES)}
    for name in ("", *LIBRARIES):
        logging.getLogger(name).setLevel(logging.DEBUG)
    with caplog.at_level(logging.DEBUG):
        yield caplog
    for name, level in previous.items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture(name="silent_listener")
def silent_listener_fixture() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    with silent_listener() as port:
        yield port


def rows(n: int, dim: int = 4, ids: Callable[[int], Any] = "doc-{}".format) -> list[dict[str, Any]]:
    return [
        {"id": ids(i), "values": [0.25 * (i % 4), 1.0, 0.5, -1.0][:dim], "title": f"t{i}"} for i in range(n)
    ]


def exception_text(exc: BaseException) -> str:
    """The exception as a traceback prints it, chained causes and contexts included, plus reprs."""
    parts = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts += [repr(current), str(current), repr(getattr(current, "report", None))]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def outcome(write: Callable[[], Any]) -> str:
    """Everything a write leaves: its report, or its exception; never both missing."""
    try:
        report = write()
    except ConnectorError as exc:
        return exception_text(exc)
    return "\n".join([repr(report), str(report), report.summary(), *(repr(f) for f in report.failures)])


def upsert(uri: str, data: Any, **options: Any) -> Any:
    """``connect(uri, **options).upsert(data)``, the client closed after it (its connections too)."""
    with connect(uri, **options) as client:
        return client.upsert(data)


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every log record as a handler would format it: message, arguments and exception text."""
    return [f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records]


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert API_KEY not in text and PASSWORD not in text
        assert API_KEY[3:15] not in text  # not even a piece of it


@pytest.mark.parametrize("kind", ["grpc", "rest"])
def test_pinecone_writes_failing_every_way_show_no_key(
    kind: str,
    everything_logged: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    silent_listener: int,
) -> None:
    scheme = "pinecone+grpc" if kind == "grpc" else "pinecone"
    texts: list[str] = []
    with start_server(kind) as server:
        base = {"api_key": API_KEY, "max_retries": 1, "timeout_s": 0.5, "on_error": "report", "verify": False}
        server.script(api_key="the-right-key")  # every request with our key is refused: 401 / UNAUTHENTICATED
        texts.append(outcome(lambda: connect(server.uri, **base).upsert(rows(20))))
        server.script(api_key=API_KEY, reject_ids=frozenset({"doc-3", "doc-7"}), reject_named=False)
        texts.append(outcome(lambda: connect(server.uri, **base).upsert(rows(20))))
        server.script(api_key=API_KEY, delay_s=2.0)  # slower than timeout_s
        texts.append(outcome(lambda: connect(server.uri, **base).upsert(rows(5))))
        server.script(api_key=API_KEY, fail_first=10)  # 5xx until the retries are spent
        texts.append(outcome(lambda: connect(server.uri, **base).upsert(rows(5))))
        forget_shared()
    texts.append(outcome(lambda: connect(f"{scheme}://127.0.0.1:{silent_listener}", **base).upsert(rows(5))))
    texts.append(outcome(lambda: connect(f"{scheme}://127.0.0.1:{closed_port()}", **base).upsert(rows(5))))
    texts.append(outcome(lambda: connect(f"{scheme}://127.0.0.1:1", **base, batch_size=0)))  # a bad option
    texts.append(outcome(lambda: connect(f"{scheme}://remote.example", api_key=API_KEY, nonsense="x")))
    forget_shared()
    assert len([t for t in texts if t]) == len(texts)
    captured = capfd.readouterr()
    assert_no_secret(*texts, captured.out, captured.err, *logged(everything_logged))
    assert any(
        "401" in t or "UNAUTHENTICATED" in t or "AuthError" in t for t in texts
    )  # the failures happened
    assert any("doc-3" in t for t in texts)


def test_a_password_in_a_postgresql_uri_is_shown_nowhere(
    everything_logged: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], silent_listener: int
) -> None:
    texts = []
    for port in (closed_port(), silent_listener):
        uri = f"postgresql://loader:{PASSWORD}@127.0.0.1:{port}/app?table=items&connect_timeout=1"
        texts.append(outcome(lambda uri=uri: connect(uri, max_retries=0, timeout_s=1).upsert(rows(3))))
        texts.append(repr(connect(uri, max_retries=0)))
    uri = f"postgresql://loader@127.0.0.1:{closed_port()}/app?table=items&password={PASSWORD}"
    texts.append(outcome(lambda: connect(uri, max_retries=0, api_key=API_KEY).upsert(rows(3))))
    texts.append(outcome(lambda: connect(uri, dimension=0)))  # a bad option beside a password
    forget_shared()
    captured = capfd.readouterr()
    assert_no_secret(*texts, captured.out, captured.err, *logged(everything_logged))
    assert any("ConnectError" in t or "connect" in t.lower() for t in texts)


def test_beam_display_data_and_the_transform_show_no_key() -> None:
    pytest.importorskip("apache_beam")
    from apache_beam.transforms.display import DisplayData

    from vectordb.beam import WriteToVectorDB

    sink = WriteToVectorDB("pinecone+grpc://idx.svc.pinecone.io", api_key=API_KEY, namespace="docs")
    shown = DisplayData.create_from(sink).items
    texts = [repr(sink), str(sink), *(f"{item.key}={item.value!r}" for item in shown), repr(sink.options)]
    assert_no_secret(*texts)
    assert any("idx.svc.pinecone.io" in t for t in texts)  # the target is shown, only the key is not
    pg = WriteToVectorDB(f"postgresql://u:{PASSWORD}@db.example/app?table=t")
    assert_no_secret(repr(pg), *(f"{i.key}={i.value!r}" for i in DisplayData.create_from(pg).items))


# -- servers that echo the key --------------------------------------------------------------------

WRONG_KEY_SCRIPT = {"api_key": "the-right-key", "echo_key": True}  # our key is wrong: 401 / UNAUTHENTICATED
REFUSALS = {  # a refusal of each kind, quoting the key
    "401": WRONG_KEY_SCRIPT,
    "400": {"api_key": API_KEY, "echo_key": True, "reject_ids": frozenset({"3", "7"}), "reject_named": False},
    "5xx": {"api_key": API_KEY, "echo_key": True, "fail_first": 100},
}
WRITE = {"api_key": API_KEY, "max_retries": 1, "timeout_s": 5, "on_error": "report"}


def assert_blanked(
    texts: list[str], caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """No secret in any text, log record or output, and every text shows where one was blanked."""
    captured = capfd.readouterr()
    assert_no_secret(*texts, captured.out, captured.err, *logged(caplog))
    for text in texts:
        assert "***" in text, text


@pytest.mark.parametrize("kind", ["grpc", "rest"])
def test_pinecone_refusals_echoing_the_key_show_no_key(
    kind: str, everything_logged: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    texts: list[str] = []
    with start_server(kind) as server:
        server.script(**WRONG_KEY_SCRIPT)  # the check before the first row: describe_index_stats
        texts.append(outcome(lambda: upsert(server.uri, rows(20), **WRITE)))
        for script in REFUSALS.values():
            server.script(**script)
            texts.append(outcome(lambda: upsert(server.uri, rows(20, ids=str), **WRITE, verify=False)))
        echoed = {r.outcome for r in server.arrived().requests if API_KEY in r.message}
        forget_shared()
    assert echoed == {"unauthenticated", "rejected", "unavailable"}  # the server did quote the key
    assert_blanked(texts, everything_logged, capfd)
    assert "UNAUTHENTICATED" in texts[1] if kind == "grpc" else "HTTP 401" in texts[1]
    assert "1 rows [3]" in texts[2] and "1 rows [7]" in texts[2]  # the refused rows, isolated


@pytest.mark.parametrize("kind", ["grpc", "rest"])
def test_qdrant_refusals_echoing_the_key_show_no_key(
    kind: str, everything_logged: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    texts: list[str] = []
    with QdrantServer() as server:
        uri = server.uri(kind, "docs")
        for script in REFUSALS.values():
            server.script(**script)
            texts.append(outcome(lambda: upsert(uri, rows(20, ids=int), **WRITE, create=True)))
        forget_shared()
    assert_blanked(texts, everything_logged, capfd)
    assert all("the request's API key: ***" in text for text in texts)  # the echo, blanked


def test_an_embeddings_endpoint_echoing_the_key_shows_no_key(
    everything_logged: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    from tests.servers.embeddings import EmbeddingsServer, Fault

    table = pa.table({"id": [f"t{i}" for i in range(8)], "text": [f"text {i}" for i in range(8)]})
    texts: list[str] = []
    with start_server("rest") as pinecone:
        for right_key, faults in (
            ("the-right-key", ()),
            (API_KEY, (Fault.error(400),) * 40),
            (API_KEY, (Fault.error(500),) * 40),
        ):
            with EmbeddingsServer(api_key=right_key, echo_key=True, models={"m": 4}) as embedder:
                embedder.script(*faults)
                options = {
                    "text_column": "text",
                    "embed_url": embedder.url,
                    "embed_model": "m",
                    "embed_api_key": API_KEY,
                }
                texts.append(outcome(lambda options=options: upsert(pinecone.uri, table, **WRITE, **options)))
                assert embedder.stats.auth_headers == {f"Bearer {API_KEY}"}  # the key went out
        forget_shared()
    assert_blanked(texts, everything_logged, capfd)
    assert "HTTP 401" in texts[0] and "HTTP 400" in texts[1] and "HTTP 500" in texts[2]


def test_a_malformed_embeddings_reply_quoting_the_key_is_blanked() -> None:
    from vectordb.connector.embedding.wire import MalformedReply, decode_reply

    body = orjson.dumps({"data": "no embeddings for key " + API_KEY, "pad": "x" * 490 + API_KEY})
    with pytest.raises(MalformedReply) as info:
        decode_reply(body, 1, "POST /v1/embeddings", secrets=Secrets(API_KEY))
    assert_no_secret(exception_text(info.value))
    assert "no embeddings for key ***" in str(info.value)


def test_pinecone_import_calls_echoing_the_key_show_no_key(
    tmp_path: Path, everything_logged: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    from tests.servers.pinecone_control import ImportScript, PineconeImportServer, store_opener
    from tests.servers.script import FaultScript
    from vectordb.connector.backends.pinecone_import import import_data

    table = pa.table({"id": [f"v{i}" for i in range(30)], "values": [[0.5, 1.0, -1.0, 2.0]] * 30})
    texts: list[str] = []
    progress: list[str] = []

    def imported(namespace: str) -> Any:
        options = {**WRITE, "write_mode": "import", "import_uri": f"file://{tmp_path}", "import_poll_s": 0.05}
        with connect(host.uri, **options) as client:
            return import_data(client, table, namespace=namespace, progress=progress.append)

    with PineconeImportServer(store_opener()) as host:
        host.state.set_script(FaultScript(**WRONG_KEY_SCRIPT))  # the import's check: describe_index_stats
        texts.append(outcome(lambda: imported("a")))
        host.state.set_script(FaultScript(api_key=API_KEY, echo_key=True))
        host.imports.set_script(
            ImportScript(fail_after_rows=10, fail_message=f"indexing failed: key {API_KEY}")
        )
        texts.append(outcome(lambda: imported("b")))  # the import's status quotes the key
        forget_shared()
    assert "HTTP 401" in texts[0] and "indexing failed: key ***" in texts[1]
    assert_blanked(texts, everything_logged, capfd)
    assert_no_secret(*progress)
    assert any("indexing failed: key ***" in line for line in progress)


ECHO_STATUSES = [
    (401, grpc.StatusCode.UNAUTHENTICATED),
    (400, grpc.StatusCode.INVALID_ARGUMENT),
    (500, grpc.StatusCode.INTERNAL),
]


@pytest.mark.parametrize(("status", "code"), ECHO_STATUSES)
def test_weaviate_chroma_and_milvus_servers_echoing_the_key_show_no_key(
    status: int,
    code: grpc.StatusCode,
    everything_logged: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Fakes that refuse whatever they are asked (Weaviate's schema call, Chroma's pre-flight, Milvus's
    HasCollection), quoting the key in the body (an HTML page for the 500) or status details, and in a
    header or the trailing metadata; then the batch call of Weaviate's gRPC transport, and a Milvus
    whose statuses quote the key (as a base64 token and decoded)."""
    from vectordb.connector.backends.weaviate.backend import BATCH_OBJECTS

    texts: list[str] = []
    with EchoHttpServer(status, page=status >= 500) as http, EchoGrpcServer(code) as grpc_server:
        weaviate = f"weaviate://127.0.0.1:{http.port}/Docs"
        texts.append(outcome(lambda: upsert(weaviate, rows(5), **WRITE, grpc_port=grpc_server.port)))
        transport = connect(weaviate, **WRITE, grpc_port=grpc_server.port).backend.open_transport()
        texts.append(outcome(lambda: transport.send(WireRequest(BATCH_OBJECTS, b""), timeout_s=5)))
        texts.append(outcome(lambda: upsert(f"chroma://127.0.0.1:{http.port}/docs", rows(5), **WRITE)))
        milvus = f"milvus://127.0.0.1:{grpc_server.port}/docs"
        texts.append(outcome(lambda: upsert(milvus, rows(5), **{**WRITE, "api_key": f"root:{API_KEY}"})))
        seen = http.seen + grpc_server.seen
    with EchoGrpcServer(milvus_status=1800 if status == 401 else 1100) as statuses:
        milvus = f"milvus://127.0.0.1:{statuses.port}/docs"
        texts.append(outcome(lambda: upsert(milvus, rows(5), **{**WRITE, "api_key": f"root:{API_KEY}"})))
        seen += statuses.seen
    forget_shared()
    assert all(API_KEY in quoted for quoted in seen) and len(seen) >= 5  # every fake quoted the key
    assert_blanked(texts, everything_logged, capfd)
    assert f"HTTP {status}" in texts[0] and code.name in texts[1] and code.name in texts[3]


def test_a_postgresql_server_echoing_the_password_shows_none(
    everything_logged: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    texts = []
    with EchoPostgresServer() as server:
        for uri, extra in (
            (f"postgresql://loader:{PASSWORD}@127.0.0.1:{server.port}/app?table=items", {}),
            (f"postgresql://loader@127.0.0.1:{server.port}/app?table=items&password={PASSWORD}", {}),
            (f"postgresql://loader@127.0.0.1:{server.port}/app?table=items", {"api_key": PASSWORD}),
        ):
            options = {"max_retries": 0, "timeout_s": 5, **extra}
            texts.append(outcome(lambda uri=uri, options=options: upsert(uri, rows(3), **options)))
        seen = server.seen
    forget_shared()
    assert len(seen) >= 3 and set(seen) == {PASSWORD}  # the password went out, and came back quoted
    assert_blanked(texts, everything_logged, capfd)
    assert all("password authentication failed" in text for text in texts)


def test_weaviate_per_object_errors_quoting_the_key_are_blanked() -> None:
    from vectordb.connector.backends.weaviate import WeaviateBackend, WeaviateOptions

    backend = WeaviateBackend(WeaviateOptions(uri="weaviate://127.0.0.1/Docs", api_key=API_KEY))
    batch = RowBatch(ids=["r0", "r1"], vectors=np.ones((2, 2), np.float32))
    errors = [(1, f"tenant of key {API_KEY} cannot write"), (7, f"object outside, key Bearer {API_KEY}")]
    body = b"".join(pw.len_field(2, pw.varint_field(1, i) + pw.string_field(2, m)) for i, m in errors)
    outcome = backend.outcome_of(batch, backend.request_for(batch), WireReply(body=body))
    texts = [repr(f) for f in outcome.failures]
    assert_no_secret(*texts)
    assert "tenant of key *** cannot write" in texts[0] and "key Bearer ***" in texts[1]


def test_a_milvus_upsert_status_quoting_the_key_is_blanked() -> None:
    from vectordb.connector.backends.milvus.backend import UPSERT, MilvusBackend, MilvusOptions
    from vectordb.connector.backends.milvus.wire import Encoded

    backend = MilvusBackend(MilvusOptions(uri="milvus://127.0.0.1:19530/docs", api_key=f"root:{API_KEY}"))
    batch = RowBatch(ids=["r0", "r1"], vectors=np.ones((2, 2), np.float32))
    request = WireRequest(UPSERT, b"", context=Encoded(body=b"", sent=2))

    def reply(code: int) -> WireReply:  # MutationResult{status=1 {reason=2, code=3}, err_index=4}
        status = pw.string_field(2, f"refused for token root:{API_KEY}") + pw.varint_field(3, code)
        return WireReply(body=pw.len_field(1, status) + pw.len_field(4, pw.varint(1)))

    with pytest.raises(ConnectorError) as info:
        backend.outcome_of(batch, request, reply(1100))
    (failure,) = backend.outcome_of(batch, request, reply(0)).failures
    assert_no_secret(exception_text(info.value), repr(failure))
    assert "refused for token ***" in str(info.value) and failure.error == "refused for token ***"
