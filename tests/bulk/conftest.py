"""Bulk-import test set-up: a real S3-compatible store (moto's S3 server) and the Pinecone index host with imports.

The store runs in a thread of this process on a free loopback port; tasks (Spark executors are
other processes) reach it over HTTP like any S3 endpoint, named in the import URI's query
(``?endpoint_override=127.0.0.1:P&scheme=http``). Credentials come from the environment, set here
before any JVM starts so Spark's Python workers inherit them; the secret is a value no log or
report may ever show (tests check it).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow.fs as pafs
import pytest

from tests.servers.pinecone_control import PineconeImportServer, store_opener

# Before any JVM starts (collection imports this before a test runs): workers inherit the environment.
STORE_KEY_ID = "vdb-test-key-id"
STORE_SECRET = "vdb-store-secret-7f3a9c"  # must never appear in logs, errors or reports
os.environ.setdefault("AWS_ACCESS_KEY_ID", STORE_KEY_ID)
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", STORE_SECRET)
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # no instance-metadata lookups on a laptop or CI


@dataclass(frozen=True)
class S3Store:
    endpoint: str  # "127.0.0.1:P"
    bucket: str

    def uri(self, prefix: str) -> str:
        """The connector's import URI for ``prefix`` in this bucket, naming the endpoint in its query."""
        return f"s3://{self.bucket}/{prefix}?endpoint_override={self.endpoint}&scheme=http&region=us-east-1"

    def fs(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            endpoint_override=self.endpoint, scheme="http", region="us-east-1", allow_bucket_creation=True
        )

    def files(self, prefix: str) -> list[str]:
        """Every file under ``prefix``, relative to it, sorted."""
        root = f"{self.bucket}/{prefix}"
        infos = self.fs().get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        return sorted(i.path[len(root) + 1 :] for i in infos if i.type == pafs.FileType.File)


@pytest.fixture(scope="session")
def s3_store() -> Iterator[S3Store]:
    server_module = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        store = S3Store(endpoint=f"{host}:{port}", bucket="vectors")
        store.fs().create_dir(store.bucket)
        yield store
    finally:
        server.stop()


@pytest.fixture
def prefix() -> str:
    """A fresh folder in the bucket for this test."""
    return f"imports-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def index_host(s3_store: S3Store) -> Iterator[PineconeImportServer]:
    """A fresh Pinecone index host (data plane and bulk import) reading the test store."""
    with PineconeImportServer(store_opener(s3_store.endpoint)) as server:
        yield server


# The Spark tests share the Spark tests' session (one JVM per test run).
from tests.spark.conftest import spark  # noqa: E402, F401
