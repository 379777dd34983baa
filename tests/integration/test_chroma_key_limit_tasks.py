"""The per-row metadata-key limit is one fixed figure, the local server's max_batch_size (5,461: SQLite's bound
variables), for every client: a Spark task's client, built from the driver's ``resolved_options()``, asks no
pre-flight, so a limit read from the pre-flight made the same row fail in a plain client and land from a task.
A loopback proxy in front of the real server announces a max_batch_size of 100 (as Chroma Cloud announces a
smaller one): a row with 150 keys lands from both, a row over 5,461 keys fails alone in both."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.test_chroma_small_server_limit import LIMIT, _Proxy
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer

LOCAL_MAX = 5461  # a local server's pre-flight max_batch_size


@pytest.fixture
def small_server(chroma_server: ChromaServer) -> Iterator[str]:
    """The address of a proxy announcing max_batch_size 100 (``LIMIT``) in front of the real server."""
    handler = type("Handler", (_Proxy,), {"upstream": chroma_server.url, "upserts": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    forget_shared()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def row(row_id: str, keys: int) -> dict[str, Any]:
    return {"id": row_id, "values": [1.0, 0.5, 0.25, 0.125], **{f"k{j}": j for j in range(keys)}}


def test_a_driver_and_its_tasks_refuse_the_same_rows(
    small_server: str, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    uri = f"chroma://{small_server}/{chroma_collection}"
    wide, too_wide = LIMIT + 50, LOCAL_MAX  # with the namespace key: 151 and 5,462 keys
    with connect(uri, on_error="report") as driver:
        plain = driver.write([row("wide", wide), row("too-wide", too_wide)])
        resolved = driver.backend.resolved_options()
    assert resolved["verify"] is False and resolved["batch_size"] == LIMIT  # a task asks no pre-flight
    with connect(uri, on_error="report", **resolved) as task:
        from_task = task.write([row("wide-task", wide), row("too-wide-task", too_wide)])
    for report, suffix in ((plain, ""), (from_task, "-task")):
        assert report.written == 1, report
        assert [ids for f in report.failures for ids in f.ids] == [f"too-wide{suffix}"]
        assert f"metadata has {LOCAL_MAX + 1} keys" in report.failures[0].error
    assert sorted(collection.get()["ids"]) == ["wide", "wide-task"]
