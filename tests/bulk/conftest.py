"""Bulk-import test set-up: a real S3-compatible store and the Pinecone index host with imports.

The store is MinIO, built from its Go module (`.ci/run` does it), in its own process with its own data
folder; where there is no MinIO binary, moto's S3 server from PyPI in a thread of this process (the
tests then say which store ran). Tasks (Spark executors are other processes) reach it over HTTP on a
free loopback port like any S3 endpoint, named in the import URI's query
(``?endpoint_override=127.0.0.1:P&scheme=http``). Credentials come from the environment, set here
before any JVM starts so Spark's Python workers inherit them; the secret is a value no log or
report may ever show (tests check it).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from jobs.processes import stop_process
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from tests.spark.conftest import free_port

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
    server: str  # "minio" or "moto"

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


def minio_binary() -> str | None:
    """MinIO as ``go install`` leaves it (GOPATH/bin), or on PATH."""
    gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
    built = Path(gopath) / "bin" / "minio"
    return str(built) if built.exists() else shutil.which("minio")


@pytest.fixture(scope="session")
def s3_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Store]:
    binary = minio_binary()
    if binary is None:
        yield from moto_store()
    else:
        yield from minio_store(binary, tmp_path_factory.mktemp("minio"))


def minio_store(binary: str, data: Path) -> Iterator[S3Store]:
    env = {
        **os.environ,
        "MINIO_ROOT_USER": os.environ["AWS_ACCESS_KEY_ID"],
        "MINIO_ROOT_PASSWORD": os.environ["AWS_SECRET_ACCESS_KEY"],
        "MINIO_BROWSER": "off",
        "MINIO_UPDATE": "off",
    }
    log = data / "minio.log"
    for attempt in range(3):  # another process may take the probed port before MinIO binds it
        port = free_port()
        with open(log, "ab") as out:
            server = subprocess.Popen(
                [binary, "server", str(data / "store"), "--address", f"127.0.0.1:{port}", "--quiet"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        if _started(server, port):
            break
        stop_process(server, grace_s=20)
        if attempt == 2:
            pytest.fail(
                f"MinIO did not start on 127.0.0.1:{port}:\n{log.read_text(errors='replace')[-2000:]}"
            )
    try:
        store = S3Store(endpoint=f"127.0.0.1:{port}", bucket="vectors", server="minio")
        store.fs().create_dir(store.bucket)
        yield store
    finally:
        stop_process(server, grace_s=20)


def _started(server: subprocess.Popen[bytes], port: int) -> bool:
    """MinIO answers its liveness check within a minute, or ``False`` once it has exited (a port taken)."""
    deadline = time.monotonic() + 60
    while not _live(port):
        if server.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _live(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/minio/health/live", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def moto_store() -> Iterator[S3Store]:
    server_module = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        store = S3Store(endpoint=f"{host}:{port}", bucket="vectors", server="moto")
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
