"""Fixtures: one Milvus Lite server for the session, started through ``vectordb.connector.backends.milvus.lite``.

Starting it through the connector's own embedded module is the point: the session proves that
``ensure_server`` starts a server other clients (pymilvus here) can use, and ``stop`` ends it.
Each test gets a fresh collection name, dropped afterwards.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from vectordb.connector.backends.milvus import lite as embedded
from vectordb.connector.transports.base import forget_shared

__all__ = ["LiteServer", "collection_name", "milvus_lite"]


@dataclass
class LiteServer:
    path: str  # the data directory the connector's URIs name
    address: str  # "127.0.0.1:PORT"
    client: Any  # pymilvus.MilvusClient on the same server

    @property
    def uri(self) -> str:
        return f"milvus+lite://{self.path}"


@pytest.fixture(scope="session")
def milvus_lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteServer]:
    pymilvus = pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    path = str(tmp_path_factory.mktemp("milvus") / "vectors.db")
    # an idle timeout, not "never": a test run killed before teardown must not leave a server behind
    address = embedded.ensure_server(path, idle_timeout_s=600)
    client = pymilvus.MilvusClient(uri=f"http://{address}")
    try:
        yield LiteServer(path=path, address=address, client=client)
    finally:
        client.close()
        assert embedded.stop(path), "the session's Milvus Lite server was not running at teardown"
        forget_shared()  # the channels to the stopped server


@pytest.fixture
def collection_name(request: pytest.FixtureRequest, milvus_lite: LiteServer) -> Iterator[str]:
    """A fresh collection name for this test (not created), dropped afterwards."""
    stem = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:60]
    name = f"t_{stem}_{uuid.uuid4().hex[:6]}"
    yield name
    if milvus_lite.client.has_collection(name):
        milvus_lite.client.drop_collection(name)
