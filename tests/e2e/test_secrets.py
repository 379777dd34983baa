"""No secret anywhere a user or an operator looks, however a write fails.

Writes that fail in every way (a wrong key, refused rows, a server that never answers, replies slower
than ``timeout_s``, connection refused, a bad option, an unreachable PostgreSQL with a password in its
URI) run with the root logger at DEBUG and every library's logger on. Then every log record, everything
written to stdout/stderr, every exception with its chained causes and traceback text, every report
(repr, str, each failure) and Beam's display data are searched for the api key and the password.
Spark's recorded plans are checked in tests/spark (test_write: the plans hold no api_key).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.net import closed_port, silent_listener
from tests.servers.fixtures import start_server
from vectordb.connector import ConnectorError, connect
from vectordb.connector.transports.base import forget_shared

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


def rows(n: int, dim: int = 4) -> list[dict[str, Any]]:
    return [
        {"id": f"doc-{i}", "values": [0.25 * (i % 4), 1.0, 0.5, -1.0][:dim], "title": f"t{i}"}
        for i in range(n)
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
    return "\n".join([repr(report), str(report), *(repr(f) for f in report.failures)])


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
    records = [f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in everything_logged.records]
    assert_no_secret(*texts, captured.out, captured.err, *records)
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
    records = [f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in everything_logged.records]
    assert_no_secret(*texts, captured.out, captured.err, *records)
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
