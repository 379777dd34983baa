"""The object store goes away while an import's rows are staged: the write fails with the store's error.

Cleaning up after it (deleting the staged files) fails too, for the same outage; that failure leaves files
behind, which a warning says, and must not take the place of the error that failed the write.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from tests.bulk.conftest import S3Store
from tests.bulk.test_spark_import import options, plan
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import connect
from vectordb.connector.backends.pinecone_import import import_data
from vectordb.connector.report import WriteReport
from vectordb.connector.staging import StagingFailed

DIM = 4


@pytest.fixture
def store_to_stop() -> Iterator[tuple[S3Store, Any]]:
    """A store of this test's own (moto's S3 server in a thread), and the server, to stop it."""
    server_module = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    store = S3Store(endpoint=f"{host}:{port}", bucket="outage", server="moto")
    store.fs().create_dir(store.bucket)
    running = [True]

    def stop() -> None:
        if running[0]:
            running[0] = False
            server.stop()

    try:
        yield store, stop
    finally:
        stop()


def test_a_store_gone_while_staging_fails_the_import_with_its_own_error_not_the_cleanups(
    store_to_stop: tuple[S3Store, Any], caplog: pytest.LogCaptureFixture
) -> None:
    store, stop = store_to_stop

    def batches() -> Iterator[pa.RecordBatch]:
        for b in range(4):
            values = pa.array([[1.0 + i] * DIM for i in range(200)], pa.list_(pa.float32()))
            yield pa.record_batch({"id": [f"r{b}-{i}" for i in range(200)], "values": values})
            if b == 1:
                stop()

    with (
        PineconeImportServer(store_opener(store.endpoint)) as server,
        connect(
            server.uri,
            api_key="k",
            namespace="docs",
            dimension=DIM,
            write_mode="import",
            import_uri=store.uri("pfx"),
            import_poll_s=0.05,
            timeout_s=2,
            max_retries=0,
        ) as client,
        caplog.at_level(logging.WARNING, logger="vectordb.connector.pinecone_import"),
        pytest.raises(StagingFailed) as info,
    ):
        import_data(client, batches())
    message = str(info.value)
    assert message.startswith("option import_uri: cannot write "), (
        message
    )  # staging's failure, not the delete's
    assert "_temporary-import-job-" in message
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "the staged files stay in s3://outage/pfx/_temporary-import-job-" in warning.getMessage()
    assert "cannot delete" in warning.getMessage()
    assert server.imports.all() == []


def test_sparks_abort_with_the_store_gone_logs_what_stays_and_raises_nothing(
    store_to_stop: tuple[S3Store, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Spark reports the job's own error; an abort that raised would hide it behind the cleanup's."""
    from vectordb.spark.commit import abort_job
    from vectordb.spark.task import TaskReport

    store, stop = store_to_stop
    with PineconeImportServer(store_opener(store.endpoint)) as server:
        raw = options(server, store, "pfx", timeout_s="2", max_retries="0")  # type: ignore[arg-type]
        planned = plan(raw)
        stop()
        with caplog.at_level(logging.INFO):
            abort_job(planned, [TaskReport(report=WriteReport(written=10))], "job-a")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "job-a: the staged files stay in s3://outage/pfx/_temporary-import-job-a/" in w for w in warnings
    ), warnings
