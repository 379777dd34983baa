"""Deletes against a Weaviate whose ``QUERY_MAXIMUM_RESULTS`` is below the ids a delete request carries.

One batch delete deletes at most ``QUERY_MAXIMUM_RESULTS`` of the objects it matches (10,000 by default;
a server may be set lower) and says so only in its reply's counts (``matches`` above ``successful``). A
delete of more ids than that must still delete every one, or not count the rest as deleted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import pytest

from tests.integration import weaviate_server as servers
from vectordb.connector import connect
from vectordb.connector.backends.weaviate import WeaviateBackend, WeaviateOptions
from vectordb.connector.ids import as_uuid
from vectordb.connector.rows import DELETE, RowBatch
from vectordb.connector.transports.base import WireReply

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits

QUERY_LIMIT = 100  # below the connector's 1,000 ids a delete request


@pytest.fixture(scope="module")
def limited_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeaviateServer]:
    """A Weaviate of its own, started with ``QUERY_MAXIMUM_RESULTS=100``."""
    pytest.importorskip("weaviate")
    plain = servers._environment

    def limited(root: Path, ports: list[int], api_key: str | None) -> dict[str, str]:
        return {**plain(root, ports, api_key), "QUERY_MAXIMUM_RESULTS": str(QUERY_LIMIT)}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(servers, "_environment", limited)  # only while it starts
        process = servers.WeaviateProcess(tmp_path_factory.mktemp("weaviate-query-limit"))
        server = process.start()
    try:
        yield server
    finally:
        process.stop()


def stored(server: WeaviateServer, name: str) -> int:
    reply = server.rest("POST", "/v1/graphql", json={"query": f"{{Aggregate{{{name}{{meta{{count}}}}}}}}"})
    return int(reply.json()["data"]["Aggregate"][name][0]["meta"]["count"])


def test_a_delete_of_more_ids_than_the_servers_query_limit_deletes_them_all(
    limited_server: WeaviateServer,
) -> None:
    name = servers.collection_name("query_limit")
    rows = [{"id": f"r{i}", "values": [1.0, 2.0, float(i)]} for i in range(3 * QUERY_LIMIT)]
    try:
        with connect(limited_server.uri(name), **limited_server.options(), create=True) as client:
            assert client.upsert(rows).written == 3 * QUERY_LIMIT
            report = client.delete([f"r{i}" for i in range(3 * QUERY_LIMIT - 10)])
            assert report.ok and report.deleted == 3 * QUERY_LIMIT - 10, report
            assert stored(limited_server, name) == 10  # the ten left out, and nothing else
            assert client.clear().startswith("10 objects in weaviate://")
        assert stored(limited_server, name) == 0
    finally:
        limited_server.rest("DELETE", f"/v1/schema/{name}")


def test_a_delete_cut_short_by_the_limit_that_fails_objects_counts_no_unnamed_row_deleted() -> None:
    """The reply the server gives when its limit cut a delete and some of the objects it tried failed: the
    row it names fails with its reason, and the others, which may remain, are not counted deleted."""
    backend = WeaviateBackend(WeaviateOptions(uri="weaviate://127.0.0.1/Docs"))
    batch = RowBatch(ids=[f"r{i}" for i in range(5)], vectors=None, op=DELETE)
    failed = {"id": as_uuid("r3"), "status": "FAILED", "errors": {"error": [{"message": "disk full"}]}}
    results = {"matches": 5, "limit": 2, "successful": 1, "failed": 1, "objects": [failed]}
    reply = WireReply(body=orjson.dumps({"results": results}))
    outcome = backend.outcome_of(batch, backend.request_for(batch), reply)
    assert outcome.written == 0
    assert [(f.ids, f.error_type) for f in outcome.failures] == [
        (("r3",), "Rejected"),
        (("r0", "r1", "r2", "r4"), "Unattributed"),
    ]
    assert outcome.failures[0].error == "disk full"
    assert "matched 5 objects and tried 2 (at most 2 a request" in outcome.failures[1].error
