"""A 2xx reply to a Weaviate batch delete that is not Weaviate's (a proxy's page, counts that are no numbers) is a
``MalformedReply`` naming the server, as Qdrant's are: the request's rows are accounted for, instead of a bare
``ValueError`` or ``orjson.JSONDecodeError`` escaping from the reply's reading."""

from __future__ import annotations

import orjson
import pytest

from vectordb.connector import connect
from vectordb.connector.backends.weaviate.backend import WeaviateBackend
from vectordb.connector.errors import MalformedReply
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

URI = "weaviate://127.0.0.1:8080/Docs"


def _weaviate(delete_reply: bytes) -> MockTransport:
    """A collection 'Docs' with one unnamed vector and no objects; every batch delete answers ``delete_reply``."""

    def handler(request: WireRequest) -> WireReply:
        if request.method == "GET /v1/schema/Docs":
            return WireReply(body=orjson.dumps({"class": "Docs", "properties": []}), status=200, headers={})
        if request.method.startswith("GET /v1/objects?"):
            return WireReply(body=b'{"objects": []}', status=200, headers={})
        assert request.method.startswith("DELETE /v1/batch/objects"), request
        return WireReply(body=delete_reply, status=200, headers={})

    return MockTransport(handler)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"<html>proxy</html>", id="not-json"),
        pytest.param(b'{"results": {"matches": "many", "successful": 1}}', id="count-no-number"),
        pytest.param(b'{"results": {"matches": 2, "failed": 1, "objects": ["a"]}}', id="object-no-object"),
    ],
)
def test_a_malformed_delete_reply_is_a_malformed_reply_naming_the_server(
    body: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the fix: ``orjson.JSONDecodeError`` (not-json), ``ValueError: invalid literal for int()`` and
    ``AttributeError`` escaped, with no report of the rows."""
    transport = _weaviate(body)
    monkeypatch.setattr(WeaviateBackend, "open_transport", lambda self: transport)
    with (
        pytest.raises(MalformedReply) as raised,
        connect(URI, on_error="report", max_retries=0) as client,
    ):
        client.delete(["a", "b"])
    assert "weaviate://127.0.0.1:8080/Docs" in str(raised.value) and "batch delete" in str(raised.value)
    report = raised.value.report  # type: ignore[attr-defined]
    assert report is not None and report.failed == 2, report
    assert {f.error_type for f in report.failures} == {"MalformedReply"}, report


def test_an_empty_delete_result_still_deletes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply whose ``results`` holds nothing to read is Weaviate's (nothing matched): the rows are deleted."""
    transport = _weaviate(b'{"results": {}}')
    monkeypatch.setattr(WeaviateBackend, "open_transport", lambda self: transport)
    with connect(URI) as client:
        assert client.delete(["a", "b"]).deleted == 2
