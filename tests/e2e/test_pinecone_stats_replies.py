"""A 200 reply that is not Pinecone's JSON (a proxy's page, a JSON list) to describe_index_stats or to an
import call is a ``MalformedReply`` naming the host and the call, as an upsert's is; it was a bare
``orjson.JSONDecodeError`` / ``AttributeError`` / msgspec error naming neither (and skipped the import's
clean-up, which handles only the connector's errors)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.servers import pinecone_control, pinecone_rest
from tests.servers.fixtures import start_server
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import connect
from vectordb.connector.backends.pinecone_import_api import PineconeImports
from vectordb.connector.errors import MalformedReply
from vectordb.connector.transports.base import forget_shared

BODIES = [b"<html><body>Welcome to the corporate proxy</body></html>", b"[]", b'{"namespaces": []}']


def answer(body: bytes) -> Any:
    def reply(self: Any, *args: Any) -> None:
        self._reply(200, body, "text/html" if body.startswith(b"<") else "application/json")

    return reply


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("call", ["write", "clear"])
def test_stats_that_are_not_pinecones_are_a_malformed_reply_naming_host_and_call(
    monkeypatch: pytest.MonkeyPatch, body: bytes, call: str
) -> None:
    monkeypatch.setattr(pinecone_rest._Handler, "_stats", answer(body))
    with start_server("rest") as server:
        try:
            with connect(server.uri, on_error="report") as client, pytest.raises(MalformedReply) as raised:
                if call == "write":
                    client.write([{"id": "a", "values": [1.0, 2.0]}])
                else:
                    client.clear()
        finally:
            forget_shared()
    assert f"pinecone://127.0.0.1:{server.port}" in str(raised.value)
    assert "describe_index_stats" in str(raised.value)


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("call", ["namespaces", "start", "describe", "find"])
def test_import_replies_that_are_not_pinecones_are_a_malformed_reply(
    monkeypatch: pytest.MonkeyPatch, body: bytes, call: str
) -> None:
    if call == "find" and body.startswith(b"{"):
        body = b'{"data": {}}'  # any object is a page (its fields have defaults): a wrong one is not
    if call == "namespaces":
        monkeypatch.setattr(pinecone_rest._Handler, "_stats", answer(body))
    elif call == "start":
        monkeypatch.setattr(pinecone_control._ImportHandler, "_start", answer(body))
    else:
        monkeypatch.setattr(pinecone_control._ImportHandler, "_describe_or_list", answer(body))
    with PineconeImportServer(store_opener(None)) as server:
        try:
            with connect(server.uri, api_key="k") as client:
                imports = PineconeImports(client.backend)  # type: ignore[arg-type]
                with pytest.raises(MalformedReply, match=rf"127\.0\.0\.1:{server.port}.*/bulk/imports|stats"):
                    if call == "namespaces":
                        imports.namespaces()
                    elif call == "start":
                        imports.start("s3://b/p/job-1/", "abort", None)
                    elif call == "describe":
                        imports.describe("1")
                    else:
                        imports.find("s3://b/p/job-1/")
        finally:
            forget_shared()
