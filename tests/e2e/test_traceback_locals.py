"""No frame on the traceback of a failed write holds the key, so tools that print a traceback's local
variables (``traceback``'s ``capture_locals``, pytest ``--showlocals``, rich, Sentry) show none.

The transports raise their errors from a frame that holds neither the request's header block or head
(the key in it) nor the raw reply (a server that echoes the key), and drop the frames a pool's error was
raised through, with the errors it was raised during. End to end against the project's Pinecone servers
(REST and gRPC) refusing the key and quoting it back, and against a port that refuses connections and one
that never answers.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from tests.net import closed_port, silent_listener
from tests.servers.fixtures import start_server
from vectordb.connector import AuthError, ConfigError, ConnectorError, connect
from vectordb.connector.transports.base import forget_shared

KEY = "sk-LOCALS-SECRET-9a8b7c6d"
ROWS = [{"id": f"d{i}", "values": [0.1, 0.2, 0.3, 0.4]} for i in range(5)]


@pytest.fixture(autouse=True)
def fresh_connections() -> Iterator[None]:
    yield
    forget_shared()


def failed_write(uri: str, key_suffix: str = "", **options: Any) -> ConnectorError:
    """The error a write with ``KEY`` (and ``key_suffix``) raises; this frame holds no key itself."""
    try:
        with connect(uri, api_key=KEY + key_suffix, max_retries=0, verify=False, **options) as client:
            client.upsert(ROWS)
    except ConnectorError as exc:
        return exc
    raise AssertionError(f"the write to {uri} succeeded")


def frames_holding_the_key(exc: BaseException) -> list[str]:
    """Every frame, on the traceback of ``exc`` or of an error chained to it (a cause or a context, shown or
    suppressed), whose locals hold the key in their repr."""
    found, seen = [], set()
    pending: list[BaseException | None] = [exc]
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        pending += [error.__cause__, error.__context__]
        tb = error.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            found += [
                f"{type(error).__name__}: {code.co_filename}:{tb.tb_lineno} {code.co_name} local {name}"
                for name, value in tb.tb_frame.f_locals.items()
                if KEY in repr(value)
            ]
            tb = tb.tb_next
    return found


def assert_no_key_in_locals(exc: BaseException) -> None:
    shown = "".join(traceback.TracebackException.from_exception(exc, capture_locals=True).format())
    assert KEY not in shown, [line[:200] for line in shown.splitlines() if KEY in line]
    assert frames_holding_the_key(exc) == []


@pytest.mark.parametrize("kind", ["grpc", "rest"])
def test_a_refused_key_echoed_back_is_in_no_frame_of_the_traceback(kind: str) -> None:
    with start_server(kind) as server:
        server.script(api_key="the-right-key", echo_key=True)  # our key is refused, and quoted back
        error = failed_write(server.uri)
        assert server.arrived().requests[-1].api_key == KEY  # it went out
    assert isinstance(error, AuthError)
    assert_no_key_in_locals(error)


@pytest.mark.parametrize("scheme", ["pinecone+grpc", "pinecone"])
def test_a_connection_refused_or_unanswered_leaves_no_key_in_the_traceback(scheme: str) -> None:
    """The pool's errors are raised in frames holding the request's head or header block."""
    assert_no_key_in_locals(failed_write(f"{scheme}://127.0.0.1:{closed_port()}"))
    with silent_listener() as port:
        assert_no_key_in_locals(failed_write(f"{scheme}://127.0.0.1:{port}", timeout_s=0.3))


def test_a_key_http_cannot_carry_is_refused_with_no_key_in_the_traceback() -> None:
    """A key holding a NUL: refused as the request head is made, from frames holding it (a line break
    around a key is trimmed when the options are read)."""
    with start_server("rest") as server:
        error = failed_write(server.uri, key_suffix="\x00")
        assert not server.arrived().requests
    assert isinstance(error, ConfigError)
    assert_no_key_in_locals(error)


def test_a_proxy_that_refuses_leaves_no_key_in_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through a proxy the environment names, REST requests go through httpx: its failures too."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port()}")
    with start_server("rest") as server:
        error = failed_write(server.uri)
        assert not server.arrived().requests  # refused by the proxy, not the server
    assert "cannot connect" in str(error)
    assert_no_key_in_locals(error)
