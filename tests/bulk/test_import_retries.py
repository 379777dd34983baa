"""Pinecone bulk import when its driver step runs again or loses sight of the import: a runner retrying
Beam's "Start import" step (or a Spark driver running the finish again) must follow the import already
started, never delete the files it reads nor start a second; a poll of the import that fails is an outage
of the poll, not the import failing; and a row the index refuses is refused alike by import and upsert."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import apache_beam as beam
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner

from tests.bulk.conftest import S3Store
from tests.bulk.test_pinecone_import import API_KEY, assert_imported_exactly, client_for, rows, stage_parts
from tests.servers import pinecone_rules
from tests.servers.pinecone_control import ImportScript, PineconeImportServer, store_opener
from vectordb.beam import WriteToVectorDB
from vectordb.connector import connect
from vectordb.connector.backends.pinecone_import import (
    finish_import,
    import_data,
    import_folder,
    publish_staged,
)
from vectordb.connector.errors import DeadlineExceeded

FOUR = ["a", "b", "c", "d"]


def _files(s3_store: S3Store, prefix: str) -> list[str]:
    return s3_store.files(prefix)


# -- 1. the finish step run again -----------------------------------------------------------------


def test_a_finish_run_again_follows_the_import_it_started_and_deletes_none_of_its_files(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """The first run started the import and stopped waiting (import_timeout_s); the runner runs the step
    again, as often as it fails: each run adopts the running import, until it ends with every row."""
    index_host.imports.set_script(ImportScript(delay_s=0.3))  # a file each 0.3 s: 4 files, 1.2 s
    table = rows(40, namespaces=FOUR)
    uri = s3_store.uri(prefix)
    with client_for(index_host, uri, namespace_column="tenant", on_error="report", import_timeout_s=0.2) as c:
        staged = stage_parts(c, import_folder(c.options), "job-again", {0: table})
        bulk = c.bulk
        assert bulk is not None
        with pytest.raises(DeadlineExceeded, match="still"):
            bulk.finish(staged, [(0, 0)], "job-again")
        published = _files(s3_store, prefix)
        assert len(published) == 4
        for _ in range(30):  # as a runner retries the step
            try:
                report = bulk.finish(staged, [(0, 0)], "job-again")
                break
            except DeadlineExceeded:
                assert _files(s3_store, prefix) == published  # nothing deleted under the running import
        else:
            pytest.fail("the import never ended")
    assert (report.written, report.failed) == (40, 0), report
    (job,) = index_host.imports.all()  # one import: the retries started none
    assert (job.status, job.records_imported) == ("Completed", 40)
    for ns in FOUR:
        part = table.filter(pa.compute.equal(table["tenant"], ns)).drop_columns(["tenant"])
        assert_imported_exactly(index_host, part, ns)


def test_a_finish_run_again_after_it_published_imports_what_it_published(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """The first run moved the files and stopped before the start (the driver died): the staging folder is
    gone, the files are where Pinecone reads them, and no import reads them yet. The next run imports them
    instead of failing as if the driver could not see the files."""
    table = rows(30)
    with client_for(index_host, s3_store.uri(prefix), namespace="docs") as client:
        folder = import_folder(client.options)
        staged = stage_parts(client, folder, "job-moved", {0: table.slice(0, 10), 1: table.slice(10)})
        publish_staged(folder, "job-moved", [(0, 0), (1, 0)])
        report = finish_import(client, staged, [(0, 0), (1, 0)], "job-moved")
    assert (report.written, report.failed) == (30, 0), report
    assert [job.status for job in index_host.imports.all()] == ["Completed"]
    assert_imported_exactly(index_host, table, "docs")


def test_beams_start_import_step_retried_by_the_runner_starts_one_import_and_lands_every_row(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """The BundleBasedDirectRunner runs a failed bundle again (up to 4 times), as Dataflow does."""
    index_host.imports.set_script(ImportScript(delay_s=0.25))
    data = [{"id": f"b{i}", "values": [float(i + 1), 1.0, 2.0], "metadata": {"n": i}} for i in range(60)]
    pipeline = beam.Pipeline(runner=BundleBasedDirectRunner())
    _ = (
        pipeline
        | beam.Create(data)
        | WriteToVectorDB(
            index_host.uri,
            api_key=API_KEY,
            namespace="docs",
            write_mode="import",
            import_uri=s3_store.uri(prefix),
            import_poll_s=0.05,
            import_timeout_s=0.2,
            on_error="report",
        )
    )
    pipeline.run().wait_until_finish()
    (job,) = index_host.imports.all()
    assert (job.status, job.records_imported) == ("Completed", 60)
    assert sorted(index_host.state.snapshot().namespaces["docs"]) == sorted(r["id"] for r in data)
    assert _files(s3_store, prefix) != []


# -- 2. the poll of a running import fails ----------------------------------------------------------


def test_status_polls_that_fail_for_a_while_do_not_fail_the_import(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """503s to describe_import beyond the control path's retries: the import goes on, so the write waits."""
    index_host.imports.set_script(ImportScript(fail_describes=4, delay_s=0.2))
    table = rows(20)
    with client_for(index_host, s3_store.uri(prefix), namespace="docs", max_retries=0) as client:
        report = import_data(client, table)
    assert (report.written, report.failed) == (20, 0), report
    assert_imported_exactly(index_host, table, "docs")


def test_an_index_host_gone_while_importing_fails_naming_the_import_and_keeps_the_account(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """No answer to any poll until import_timeout_s: the error names the import and its namespaces, says
    it may still be running and how to follow it, and carries the report (rows staged, none known written)."""
    index_host.imports.set_script(ImportScript(delay_s=0.5))
    table = rows(20, namespaces=["a", "b"])
    bad = table.to_pylist()
    bad[3]["values"][0] = float("nan")  # refused while staging: its failure stays in the account
    data = pa.Table.from_pylist(bad, schema=table.schema)

    def progress(line: str) -> None:
        if " started: " in line:  # the import runs at Pinecone; its host goes away
            index_host.rest.stop()

    options = {"namespace_column": "tenant", "on_error": "report", "max_retries": 0, "import_timeout_s": 1.0}
    with (
        client_for(index_host, s3_store.uri(prefix), **options) as client,
        pytest.raises(DeadlineExceeded) as info,
    ):
        import_data(client, data, progress=progress)
    message = str(info.value)
    assert "import 1 " in message and "'a', 'b'" in message, message
    assert "may still be running" in message and "describe_import" in message, message
    assert "could not be read" in message and "Connect" in message, message
    report = info.value.report
    assert report is not None
    assert (report.written, report.failed) == (0, 20), report
    assert ("v3",) in [f.ids for f in report.failures]
    (unknown,) = [f for f in report.failures if f.error_type == "DeadlineExceeded"]
    assert unknown.unnamed == 19 and "may still" in unknown.error
    assert _files(s3_store, prefix) != []  # the import may be reading them


# -- 3. a row with no dense vector in a dense index ---------------------------------------------------


MIXED = [
    {"id": "a", "values": [1.0, 2.0, 3.0]},
    {"id": "b", "values": None, "sparse": {"indices": [1], "values": [1.0]}},
    {"id": "c", "values": [1.0, 2.0, 4.0]},
]


@pytest.mark.parametrize("mode", ["import", "upsert"])
def test_a_row_with_no_dense_vector_in_a_dense_index_fails_before_staging_as_before_an_upsert(
    tmp_path: Path, mode: str
) -> None:
    """One check (the backend's ``refuse``) for both paths: the same row fails, for the same reason."""
    with PineconeImportServer(store_opener(), index=pinecone_rules.dense(3)) as server:
        options: dict[str, Any] = {"api_key": API_KEY, "namespace": "n", "sparse_column": "sparse"}
        if mode == "import":
            options.update(write_mode="import", import_uri=str(tmp_path), import_poll_s=0.05)
        with connect(server.uri, on_error="report", **options) as client:
            report = import_data(client, MIXED) if mode == "import" else client.write(MIXED)
        stored = server.state.snapshot().namespaces["n"]
    assert (report.written, report.failed) == (2, 1), report
    (failure,) = report.failures
    assert (failure.ids, failure.error_type) == (("b",), "Invalid")
    assert failure.error.startswith("no dense vector: the index is dense (dimension 3)"), failure.error
    assert sorted(stored) == ["a", "c"]


def _import_file(server: PineconeImportServer, root: Path, records: list[dict[str, Any]], mode: str) -> Any:
    """Import one hand-written file of ``records`` into namespace ``n``; the import once it ended."""
    (root / "n").mkdir(parents=True)
    sparse = pa.struct([("indices", pa.list_(pa.uint32())), ("values", pa.list_(pa.float32()))])
    schema = pa.schema([("id", pa.string()), ("values", pa.list_(pa.float32())), ("sparse_values", sparse)])
    pq.write_table(pa.Table.from_pylist(records, schema=schema), root / "n" / "part-0.parquet")
    body = orjson.dumps({"uri": f"file://{root}/", "errorMode": {"onError": mode}})
    request = urllib.request.Request(f"{server.url}/bulk/imports", body, {"Api-Key": API_KEY})
    with urllib.request.urlopen(request) as reply:
        import_id = orjson.loads(reply.read())["id"]
    server.imports.join()
    return server.imports.get(import_id)


@pytest.mark.parametrize("index", [pinecone_rules.dense(3), None], ids=["dense index", "learning server"])
@pytest.mark.parametrize("mode", ["abort", "continue"])
def test_the_import_server_refuses_a_record_with_no_dense_values_in_a_dense_index(
    tmp_path: Path, index: pinecone_rules.IndexType | None, mode: str
) -> None:
    """As Pinecone does, and as the upsert servers do: a dense index needs every record's dense values."""
    records = [
        {"id": "a", "values": [1.0, 2.0, 3.0], "sparse_values": None},
        {"id": "b", "values": None, "sparse_values": {"indices": [1], "values": [1.0]}},
        {"id": "c", "values": [1.0, 2.0, 4.0], "sparse_values": None},
    ]
    with PineconeImportServer(store_opener(), index=index) as server:
        job = _import_file(server, tmp_path / "imp", records, mode)
        stored = server.state.snapshot().namespaces.get("n", {})
    if mode == "abort":
        assert job.status == "Failed" and job.error is not None
        assert "n/part-0.parquet row 1: record 'b': Vector dimension 0 does not match" in job.error, job.error
    else:
        assert (job.status, job.records_imported) == ("Completed", 2)
        assert sorted(stored) == ["a", "c"]
        assert all(np.frombuffer(v.values_f32, dtype="<f4").size == 3 for v in stored.values())


def test_a_sparse_index_still_imports_sparse_only_records(tmp_path: Path) -> None:
    records = [{"id": "s", "values": None, "sparse_values": {"indices": [2, 5], "values": [0.5, 1.0]}}]
    with PineconeImportServer(store_opener(), index=pinecone_rules.SPARSE) as server:
        job = _import_file(server, tmp_path / "imp", records, "abort")
        stored = server.state.snapshot().namespaces["n"]
    assert (job.status, job.records_imported) == ("Completed", 1)
    assert stored["s"].sparse_indices == [2, 5]
