"""A commit run again for the same job while its import runs: a Spark foreachBatch micro-batch replayed after a
driver crash has the same job name (``batch-<n>-<query>-<target>``) and its tasks stage their rows again. The
second commit must follow the import the first one started: no second import (it would fail, its namespace
being the first's, and report as failed the rows the first one imports), no file moved into its folder."""

from __future__ import annotations

import pytest

from tests.bulk.conftest import S3Store
from tests.bulk.test_pinecone_import import assert_imported_exactly, client_for, rows
from tests.servers.pinecone_control import ImportScript, PineconeImportServer
from vectordb.connector.backends.pinecone_import import ImportStager, finish_import, import_folder
from vectordb.connector.errors import DeadlineExceeded

JOB = "batch-7-q1234-pinecone"


def test_a_replayed_micro_batch_follows_the_running_import_and_moves_no_file_into_its_folder(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    index_host.imports.set_script(ImportScript(delay_s=1.0))  # the import takes a while, as Pinecone's do
    table = rows(20)
    uri = s3_store.uri(prefix)

    def commit(partition: int, attempt: int, timeout_s: float):
        with client_for(
            index_host, uri, namespace="docs", on_error="report", import_timeout_s=timeout_s
        ) as client:
            folder = import_folder(client.options)
            with ImportStager(client, folder, JOB, partition=partition, attempt=attempt) as stager:
                staged = stager.write(table)
            return finish_import(client, staged, [(partition, attempt)], JOB)

    with pytest.raises(DeadlineExceeded, match="still"):
        commit(0, 0, 0.2)  # the driver stops waiting (it crashed): the import goes on
    first = s3_store.files(prefix)
    assert first == [f"{JOB}/docs/part-00000.parquet"]
    # the replay's tasks are partitioned otherwise: its files would land beside the first run's
    report = commit(3, 0, 30)
    index_host.imports.join()
    assert [(j.status, j.records_imported) for j in index_host.imports.all()] == [("Completed", 20)]
    assert (report.written, report.failed, report.failed_ids) == (20, 0, []), report
    assert (
        s3_store.files(prefix) == first
    )  # nothing moved into the folder the import reads, nothing staged left
    assert_imported_exactly(index_host, table, "docs")
