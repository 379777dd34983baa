"""``PineconeImports.find`` pages ``list_imports`` (it adopts an import whose start reply was lost, and a commit run
again follows the import of its folder). Pinecone's pagination tokens are base64 text (its docs show
'Tm90aGluZyB0byBzZWUgaGVyZQo='), which may hold '+', '/' and '=': a '+' left unencoded in a query is read as a
space. The index host here hands out integer tokens, so it is made to hand out base64 ones, read back as any
server reads a query (``parse_qsl``)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from tests.servers import pinecone_control
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import connect
from vectordb.connector.backends.pinecone_import_api import PineconeImports

_MARK = bytes([0xFB, 0xFF, 0xBF])  # base64 '+/+/'


def _token(offset: int) -> str:
    return base64.b64encode(_MARK + str(offset).encode() + b"xy").decode()  # '+/+/MTAweHk=' for 100


def _offset(token: str) -> int:
    raw = base64.b64decode(token, validate=True)
    if not raw.startswith(_MARK):
        raise ValueError(token)
    return int(raw[len(_MARK) : -2])


def _base64_pages(self: Any, import_id: str, query: dict[str, str]) -> None:
    if import_id:
        return ORIGINAL(self, import_id, query)
    every = self.server.imports.all()
    try:
        start = _offset(query["paginationToken"]) if query.get("paginationToken") else 0
    except ValueError:
        self._fail(400, 3, f"invalid pagination token {query.get('paginationToken')!r}")
        return None
    limit = int(query.get("limit") or 100)
    out: dict[str, Any] = {"data": [job.model() for job in every[start : start + limit]]}
    if start + limit < len(every):
        out["pagination"] = {"next": _token(start + limit)}
    self._reply(200, orjson.dumps(out))
    return None


ORIGINAL = pinecone_control._ImportHandler._describe_or_list


def test_find_reads_the_second_page_through_a_base64_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinecone_control._ImportHandler, "_describe_or_list", _base64_pages)
    assert "+" in _token(100) and "/" in _token(100) and "=" in _token(100)
    with PineconeImportServer(store_opener()) as server:
        for n in range(1, 151):
            server.imports._imports[str(n)] = pinecone_control._Import(
                str(n), f"s3://b/imports/job-{n:012d}/", "abort", "2026-11-27T00:00:00Z", status="Completed"
            )
        with connect(server.uri, namespace="docs") as client:
            imports = PineconeImports(client.backend)
            assert imports.find("s3://b/imports/job-000000000130/") == "130"
            assert imports.find("s3://b/imports/job-000000000007") == "7"
            assert imports.find("s3://b/imports/job-999999999999/") is None
