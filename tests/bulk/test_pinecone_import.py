"""Pinecone bulk import end to end, in one process: rows staged as Parquet in a real S3-compatible store
(moto's server), imported by the project's Pinecone index host, read back exactly from the index.

Every test goes through the store over HTTP and through ``/bulk/imports``; the server reads each
Parquet file back and checks every row, so a wrong column type, a NaN or a wrong layout fails the
import, not just an assertion here.
"""

from __future__ import annotations

import functools
import logging
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from tests.bulk.conftest import STORE_SECRET, S3Store, minio_binary
from tests.embedding.fixtures import embeddings_server, expected_vectors, words
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.servers.pinecone_control import ImportScript, PineconeImportServer, store_opener
from tests.servers.script import FaultScript
from vectordb.connector import ConfigError, WriteFailed, connect
from vectordb.connector.backends.pinecone_import import (
    STAGED_FOR,
    ImportStager,
    finish_import,
    import_data,
    import_folder,
    publish_staged,
)
from vectordb.connector.client import Client
from vectordb.connector.errors import DeadlineExceeded, Rejected, Unavailable
from vectordb.connector.report import WriteReport
from vectordb.connector.staging import Folder, StagingFailed, staged_name, staging_dir

__all__ = ["embeddings_server"]

DIM = 8
API_KEY = "pc-test-key-91b2"


def rows(n: int, *, seed: int = 0, start: int = 0, namespaces: list[str | None] | None = None) -> pa.Table:
    """``n`` rows: float32 vectors, a sparse vector on every third row, metadata columns."""
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, DIM), dtype=np.float32)
    sparse_type = pa.struct([("indices", pa.list_(pa.int32())), ("values", pa.list_(pa.float32()))])
    columns = {
        "id": pa.array([f"v{start + i}" for i in range(n)]),
        "values": pa.array(list(matrix), type=pa.list_(pa.float32())),
        "sparse": pa.array(
            [{"indices": [i, i + 3], "values": [0.5, -1.25]} if i % 3 == 0 else None for i in range(n)],
            type=sparse_type,
        ),
        "title": pa.array([f"doc {start + i}" for i in range(n)]),
        "rank": pa.array(range(start, start + n), type=pa.int64()),
    }
    if namespaces is not None:
        columns["tenant"] = pa.array([namespaces[i % len(namespaces)] for i in range(n)])
    return pa.table(columns)


def client_for(server: PineconeImportServer, uri: str, **options: object):
    return connect(
        server.uri,
        api_key=API_KEY,
        write_mode="import",
        import_uri=uri,
        import_poll_s=0.05,
        **{"sparse_column": "sparse", **options},
    )


def assert_imported_exactly(server: PineconeImportServer, table: pa.Table, namespace: str) -> None:
    """Every row of ``table`` is in ``namespace`` of the index, byte for byte, and nothing else is."""
    stored = server.state.snapshot().namespaces.get(namespace, {})
    expected = table.to_pylist()
    assert sorted(stored) == sorted(r["id"] for r in expected)
    for row in expected:
        got = stored[row["id"]]
        assert got.values_f32 == np.asarray(row["values"], dtype="<f4").tobytes(), row["id"]
        if row["sparse"] is None:
            assert got.sparse_indices is None
        else:
            assert got.sparse_indices == row["sparse"]["indices"]
            assert got.sparse_values_f32 == np.asarray(row["sparse"]["values"], dtype="<f4").tobytes()
        assert got.metadata == {"title": row["title"], "rank": row["rank"]}


def test_the_store_is_minio_wherever_it_was_built(s3_store: S3Store) -> None:
    """moto stands in only where MinIO's binary is missing (no Go): the real server is the one to trust."""
    assert s3_store.server == ("minio" if minio_binary() else "moto")


def test_an_import_lands_every_row_exactly_and_leaves_the_layout_pinecone_reads(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    table = rows(300)
    with client_for(index_host, s3_store.uri(prefix), namespace="docs") as client:
        report = import_data(client, table)
    assert (report.written, report.failed) == (300, 0), report
    assert_imported_exactly(index_host, table, "docs")
    (job,) = index_host.imports.all()
    assert (job.status, job.records_imported, job.error_mode) == ("Completed", 300, "abort")
    assert job.uri.startswith(f"s3://{s3_store.bucket}/{prefix}/job-") and "?" not in job.uri
    files = s3_store.files(prefix)
    job_dir = job.uri.rstrip("/").rsplit("/", 1)[1]
    assert files == [f"{job_dir}/docs/part-00000.parquet"]  # no staging left behind
    arrived = index_host.state.snapshot()
    assert all(r.headers.get("x-import-id") == job.id for r in arrived.requests)  # nothing was upserted


def test_namespaces_from_a_column_get_one_folder_each_and_the_default_one_is_default(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    table = rows(90, namespaces=["a", "b", None])
    with client_for(index_host, s3_store.uri(prefix), namespace_column="tenant") as client:
        report = import_data(client, table)
    assert (report.written, report.failed) == (90, 0)
    folders = sorted({f.split("/")[1] for f in s3_store.files(prefix)})
    assert folders == ["__default__", "a", "b"]
    for name, ns in (("a", "a"), ("b", "b"), (None, "")):
        part = table.filter(
            pa.compute.equal(table["tenant"], name) if name else pa.compute.is_null(table["tenant"])
        )
        assert_imported_exactly(index_host, part.drop_columns(["tenant"]), ns)


def test_rows_pinecone_would_refuse_fail_with_their_reasons_and_the_rest_is_imported(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    table = rows(40).to_pylist()
    table[3]["values"][2] = float("nan")
    table[7]["id"] = None
    table[11]["title"] = "x" * 50_000  # metadata over Pinecone's 40 KB
    with client_for(index_host, s3_store.uri(prefix), namespace="docs", on_error="report") as client:
        report = import_data(client, table)
    assert (report.written, report.failed) == (37, 3), report
    reasons = {f.ids: f.error for f in report.failures}
    assert "NaN" in reasons[("v3",)]
    assert "the limit is 40960" in reasons[("v11",)]
    assert reasons[(None,)]  # a row with no id keeps no id
    good = pa.Table.from_pylist(
        [r for i, r in enumerate(table) if i not in (3, 7, 11)], schema=rows(1).schema
    )
    assert_imported_exactly(index_host, good, "docs")
    assert index_host.imports.all()[0].error_mode == "continue"  # on_error=report: skip, do not abort


def test_an_existing_namespace_is_refused_before_anything_is_staged(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    with connect(index_host.uri, api_key=API_KEY, namespace="docs") as upserts:
        upserts.upsert([{"id": "old", "values": [0.5] * DIM}])
    with (
        client_for(index_host, s3_store.uri(prefix), namespace="docs") as client,
        pytest.raises(ConfigError, match=r"namespace 'docs' \(1 vectors\) already exists"),
    ):
        import_data(client, rows(10))
    assert s3_store.files(prefix) == []
    assert index_host.imports.all() == []
    assert set(index_host.state.snapshot().namespaces["docs"]) == {"old"}


def test_an_import_that_fails_half_way_fails_the_write_with_pinecones_reason(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    index_host.imports.set_script(ImportScript(fail_after_rows=120))
    with (
        client_for(index_host, s3_store.uri(prefix), namespace="docs") as client,
        pytest.raises(WriteFailed) as info,
    ):
        import_data(client, rows(300))
    report = info.value.report
    assert (report.written, report.failed) == (120, 180), report
    (failure,) = report.failures
    assert failure.error_type == "NotImported"
    assert "180 staged rows were not imported" in failure.error and "Failed" in failure.error
    assert "fault script" in failure.error  # Pinecone's own reason, passed on
    # Pinecone does not say which rows it imported: the reason says so, and what to do about it
    assert failure.ids == () and "Pinecone imported 120 of 300 and does not say which" in failure.error
    assert "write_mode=upsert is safe" in failure.error
    assert failure.rows == 180 and report.reasons()[0][1] == 180  # counted in the summary, though unnamed
    assert "180× NotImported" in repr(report), repr(report)
    assert len(index_host.state.snapshot().namespaces["docs"]) == 120  # what landed stays, and is counted


def test_an_import_that_fails_half_way_is_reported_not_silent_under_on_error_report(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    index_host.imports.set_script(ImportScript(fail_after_rows=50))
    with client_for(index_host, s3_store.uri(prefix), namespace="docs", on_error="report") as client:
        report = import_data(client, rows(80))
    assert not report.ok
    assert (report.written, report.failed) == (50, 30)
    assert "FAILED" not in report.summary() and "PARTIAL" in report.summary()


def test_an_unreachable_store_is_a_clear_error_before_anything_else(
    index_host: PineconeImportServer, prefix: str
) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    uri = f"s3://vectors/{prefix}?endpoint_override={dead}&scheme=http"
    with (
        client_for(index_host, uri, namespace="docs", max_retries=0, timeout_s=2) as client,
        pytest.raises(
            ConfigError, match=rf"option import_uri: cannot write to 's3://vectors/{prefix}'"
        ) as info,
    ):
        import_data(client, rows(5))
    assert "endpoint_override" not in str(info.value)  # the query is not shown
    assert index_host.imports.all() == []


def test_a_retried_task_attempt_is_published_once(
    s3_store: S3Store, index_host: PineconeImportServer, prefix: str
) -> None:
    """Two attempts of partition 0 staged different rows; only the attempt that succeeded is imported."""
    with client_for(index_host, s3_store.uri(prefix), namespace="docs") as client:
        store = import_folder(client.options)
        for attempt, first in ((0, 0), (1, 1000)):
            with ImportStager(client, store, "job-x", partition=0, attempt=attempt) as stager:
                stager.write(rows(5, start=first))
        published = publish_staged(store, "job-x", [(0, 1)])
    assert list(published) == ["docs"]
    assert s3_store.files(prefix) == ["job-x/docs/part-00000.parquet"]
    ids = pa.parquet.read_table(
        f"{s3_store.bucket}/{prefix}/job-x/docs/part-00000.parquet", filesystem=s3_store.fs()
    )
    assert ids["id"].to_pylist() == [f"v{i}" for i in range(1000, 1005)]


def test_no_secret_reaches_logs_errors_or_reports(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    messages: list[str] = []
    index_host.imports.set_script(ImportScript(fail_after_rows=10))
    with client_for(index_host, s3_store.uri(prefix), namespace="docs", on_error="report") as client:
        report = import_data(client, rows(30), progress=messages.append)
        shown = " ".join([caplog.text, *messages, repr(report), repr(client.options), str(report.failures)])
    assert messages and "import 1 started" in " ".join(messages)
    for secret in (STORE_SECRET, API_KEY):
        assert secret not in shown


@pytest.mark.parametrize(
    "uri", ["s3://vectors/x?secret_key=abc", "s3://key:abc@vectors/x", "gs://b/x?access_token=abc"]
)
def test_credentials_in_the_import_uri_are_refused(index_host: PineconeImportServer, uri: str) -> None:
    with pytest.raises(ConfigError, match="through the environment") as info:
        client_for(index_host, uri, namespace="docs")
    assert "abc" not in str(info.value)


def test_an_import_that_outlasts_import_timeout_s_says_where_it_goes_on(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    index_host.imports.set_script(ImportScript(delay_s=5))
    with (
        client_for(index_host, s3_store.uri(prefix), namespace="docs", import_timeout_s=0.3) as client,
        pytest.raises(DeadlineExceeded, match=r"still .* after 0.3 s .*cancel_import"),
    ):
        import_data(client, rows(5))
    assert s3_store.files(prefix) != []  # the import goes on reading them


@pytest.mark.parametrize("refusal", ["namespace", "start"])
def test_files_no_import_will_read_are_deleted_when_the_import_cannot_start(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, refusal: str
) -> None:
    """A namespace a row names exists already (found only once the files are published), or Pinecone
    refuses the import: the published files are deleted, as the staged ones are."""
    with connect(index_host.uri, api_key=API_KEY, namespace="b") as upserts:
        upserts.upsert([{"id": "old", "values": [0.5] * DIM}])
    if refusal == "namespace":
        options: dict[str, object] = {"namespace_column": "tenant"}
        raised: type[Exception] = ConfigError
    else:  # a source URI whose scheme Pinecone does not read: 400
        options = {"namespace": "docs", "import_source_uri": "ftp://elsewhere/imports"}
        raised = Rejected
    with (
        client_for(index_host, s3_store.uri(prefix), **options) as client,
        pytest.raises(raised, match="already exists" if refusal == "namespace" else "scheme"),
    ):
        import_data(client, rows(12, namespaces=["a", "b"]))
    assert s3_store.files(prefix) == []
    assert index_host.imports.all() == []


def test_a_start_whose_reply_is_lost_adopts_the_import_it_started_and_starts_no_second(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """Pinecone started the import and a gateway answered 503: a second start would fail (the namespace is
    the first's) and every row would be reported not imported while the first import lands them."""
    index_host.imports.set_script(ImportScript(lose_start_replies=1))
    table = rows(20)
    with client_for(index_host, s3_store.uri(prefix), namespace="docs", on_error="report") as client:
        report = import_data(client, table)
    assert (report.written, report.failed, report.failures) == (20, 0, [])
    assert [job.status for job in index_host.imports.all()] == ["Completed"]
    assert_imported_exactly(index_host, table, "docs")


def test_a_start_that_fails_unclearly_with_no_import_listed_fails_saying_one_may_run(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """A 503 to the start and no import of the job's folder listed: not started again blindly; the error
    says an import may be running, and the published files stay for it."""
    index_host.imports.set_script(ImportScript(fail_starts=1))
    with (
        client_for(index_host, s3_store.uri(prefix), namespace="docs") as client,
        pytest.raises(
            Unavailable,
            match=r"import of s3://.*/job-\S+/ failed without a clear answer .*503"
            r".* may still be running",
        ),
    ):
        import_data(client, rows(5))
    assert index_host.imports.all() == []
    assert s3_store.files(prefix) != []


def test_an_import_uri_ending_in_a_slash_before_its_query_names_the_folder_the_files_are_in(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """``s3://bucket/prefix/?endpoint_override=...`` (the README's S3-compatible form with a trailing /):
    the files went under ``prefix/<job>/`` while Pinecone was told ``prefix//<job>/``."""
    table = rows(10)
    with client_for(index_host, s3_store.uri(prefix + "/"), namespace="docs") as client:
        report = import_data(client, table)
    assert (report.written, report.failed) == (10, 0), report
    (job,) = index_host.imports.all()
    assert job.uri.startswith(f"s3://{s3_store.bucket}/{prefix}/job-") and "//job" not in job.uri
    assert_imported_exactly(index_host, table, "docs")
    folder = Folder.parse(f"s3://b/{prefix}/?endpoint_override=h:9&scheme=http", "import_uri")
    assert folder.uri == f"s3://b/{prefix}?endpoint_override=h:9&scheme=http"


def test_upserting_in_import_mode_is_refused_not_done_quietly(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    with (
        client_for(index_host, s3_store.uri(prefix), namespace="docs") as client,
        pytest.raises(ConfigError, match="write_mode=import"),
    ):
        client.upsert(rows(3))
    assert index_host.state.snapshot().namespaces == {}


def test_a_local_folder_works_as_the_store(index_host: PineconeImportServer, tmp_path: Path) -> None:
    table = rows(25)
    with client_for(index_host, f"file://{tmp_path}/imports", namespace="docs") as client:
        report = import_data(client, table)
    assert (report.written, report.failed) == (25, 0)
    assert_imported_exactly(index_host, table, "docs")
    (job,) = index_host.imports.all()
    assert job.uri.startswith(f"file://{tmp_path}/imports/job-")
    assert [p.name for p in (tmp_path / "imports").rglob("*.parquet")] == ["part-00000.parquet"]


def test_a_store_pinecone_cannot_read_fails_the_import_with_its_reason(
    s3_store: S3Store, prefix: str
) -> None:
    """The executors can write, but Pinecone's side of the store (its integration) cannot read."""
    with PineconeImportServer(store_opener("127.0.0.1:9")) as blind:
        with (
            client_for(blind, s3_store.uri(prefix), namespace="docs") as client,
            pytest.raises(
                WriteFailed, match=r"30 staged rows were not imported: import 1 Failed: OSError"
            ) as info,
        ):
            import_data(client, rows(30))
        assert info.value.report.written == 0
        assert info.value.report.failed_ids == [f"v{i}" for i in range(30)]  # none imported: all named
        assert blind.state.snapshot().namespaces == {}


def test_rows_of_another_dimension_than_the_index_fail_before_staging(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    index_host.state.set_script(FaultScript(dimension=DIM))  # the index has dimension 8
    table = rows(12).to_pylist()
    for row in table[:7]:  # most rows of 7: the write alone would take 7 as its dimension
        row["values"] = row["values"][:7]
    with client_for(index_host, s3_store.uri(prefix), namespace="docs", on_error="report") as client:
        report = import_data(client, table)
    assert (report.written, report.failed) == (5, 7)
    assert report.reasons() == [("Invalid: vector has 7 dimensions; expected 8", 7)]
    assert set(index_host.state.snapshot().namespaces["docs"]) == {f"v{i}" for i in range(7, 12)}


def test_an_import_reads_what_an_upsert_reads_a_pandas_frame_too(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    table = rows(40)
    with client_for(index_host, s3_store.uri(prefix), namespace="docs") as client:
        report = import_data(client, table.to_pandas())
    assert (report.written, report.failed) == (40, 0), report
    assert_imported_exactly(index_host, table, "docs")


def test_an_import_embeds_text_as_an_upsert_does(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, embeddings_server: EmbeddingsServer
) -> None:
    """Rows with text and no vector go through the embedding stage on their way to the staged files."""
    texts = [words(i) for i in range(30)]
    texts[7] = ""  # refused by the embeddings server: that row fails alone, with its reason
    data = [{"id": f"t{i}", "text": text} for i, text in enumerate(texts)]
    with client_for(
        index_host,
        s3_store.uri(prefix),
        namespace="docs",
        on_error="report",
        sparse_column=None,
        text_column="text",
        metadata_columns=[],
        embed_url=embeddings_server.url,
        embed_model="test-embed-64",
        embed_dimensions=DIM,
        embed_api_key=DEFAULT_KEY,
    ) as client:
        report = import_data(client, data)
    assert (report.written, report.failed) == (29, 1), report
    assert report.failed_ids == ["t7"]
    stored = index_host.state.snapshot().namespaces["docs"]
    good = [i for i in range(30) if i != 7]
    assert sorted(stored) == sorted(f"t{i}" for i in good)
    expected = expected_vectors([texts[i] for i in good], dim=DIM, model="test-embed-64")
    for k, i in enumerate(good):
        assert stored[f"t{i}"].values_f32 == expected[k].astype("<f4").tobytes()


def test_an_import_stores_numpy_metadata_as_an_upsert_does(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """numpy scalars (as pandas and Arrow hand them over) are numbers and booleans in both, not their text."""
    data = [
        {"id": "a", "values": np.ones(DIM, np.float32), "n": np.int64(5), "f": np.float32(0.5)},
        {"id": "b", "values": np.ones(DIM, np.float32), "flag": np.bool_(True), "title": "doc"},
    ]
    with connect(index_host.uri, api_key=API_KEY, namespace="upserted") as client:
        assert client.upsert(data).ok
    with client_for(index_host, s3_store.uri(prefix), namespace="imported", sparse_column=None) as client:
        assert import_data(client, data).ok
    stored = index_host.state.snapshot().namespaces
    imported = {k: v.metadata for k, v in stored["imported"].items()}
    assert imported == {k: v.metadata for k, v in stored["upserted"].items()}
    assert imported == {"a": {"n": 5, "f": 0.5}, "b": {"flag": True, "title": "doc"}}


def test_an_imports_report_counts_its_embeddings_as_an_upserts_does(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, embeddings_server: EmbeddingsServer
) -> None:
    data = [{"id": f"t{i}", "text": words(i)} for i in range(30)]
    embed = {
        "text_column": "text",
        "metadata_columns": [],
        "embed_url": embeddings_server.url,
        "embed_model": "test-embed-64",
        "embed_dimensions": DIM,
        "embed_api_key": DEFAULT_KEY,
        "embed_batch_size": 8,
    }
    with connect(index_host.uri, api_key=API_KEY, namespace="upserted", **embed) as client:
        upserted = client.upsert(data)
    with client_for(
        index_host, s3_store.uri(prefix), namespace="imported", sparse_column=None, **embed
    ) as client:
        imported = import_data(client, data)
    assert (upserted.embedded, upserted.embed_requests) == (30, 4), upserted
    assert (imported.embedded, imported.embed_requests) == (30, 4), imported
    assert "30 embedded in 4 requests" in imported.summary()


@pytest.mark.parametrize("namespaces", [None, ["a", "b", None]], ids=["one namespace", "three namespaces"])
def test_an_import_that_imported_nothing_names_every_staged_row_and_they_become_dead_letters(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, namespaces: list[str | None] | None
) -> None:
    """Pinecone imported none of the rows, so every staged row failed: each is named, with its reason."""
    index_host.imports.set_script(ImportScript(fail_after_rows=0))
    table = rows(40, namespaces=namespaces)
    refused = table.num_rows - 1
    bad = table.to_pylist()
    bad[refused]["values"] = [float("nan")] * DIM  # refused while staging: failed, and not staged
    data = pa.Table.from_pylist(bad, schema=table.schema)
    where = {"namespace": "docs"} if namespaces is None else {"namespace_column": "tenant"}
    with client_for(index_host, s3_store.uri(prefix), on_error="report", **where) as client:
        report = import_data(client, data)
        letters = client.dead_letters(data, report)
    assert (report.written, report.failed) == (0, 40), report
    staged = [f"v{i}" for i in range(refused)]
    assert sorted(report.failed_ids) == sorted([*staged, f"v{refused}"])
    (not_imported,) = [f for f in report.failures if f.error_type == "NotImported"]
    assert sorted(not_imported.ids) == sorted(staged) and not_imported.unnamed == 0
    assert not_imported.error == (
        f"{refused} staged rows were not imported: import 1 Failed: "
        "Internal error while indexing records (fault script)"
    )
    letters = {r["id"]: r for r in letters.to_pylist()}  # each letter holds its own row, whole
    assert sorted(letters) == sorted(report.failed_ids)
    for i in range(refused):
        assert letters[f"v{i}"]["error"] == not_imported.error
        assert (letters[f"v{i}"]["title"], letters[f"v{i}"]["rank"]) == (f"doc {i}", i)
    assert index_host.state.snapshot().namespaces == {}


# -- what the driver's commit must not do: count rows written that no import wrote -----------------


def with_nan(table: pa.Table, *positions: int) -> pa.Table:
    """``table`` with a NaN in the vectors of the rows at ``positions``: refused while staging."""
    rows_ = table.to_pylist()
    for i in positions:
        rows_[i]["values"][0] = float("nan")
    return pa.Table.from_pylist(rows_, schema=table.schema)


def stage_parts(client: Client, folder: Folder, job: str, parts: dict[int, pa.Table]) -> WriteReport:
    """Stage each table as partition N's attempt 0, as Spark's tasks do; their merged report."""
    reports = []
    for partition, data in parts.items():
        with ImportStager(client, folder, job, partition=partition) as stager:
            reports.append(stager.write(data))
    return functools.reduce(WriteReport.merge, reports, WriteReport())


@pytest.mark.parametrize("on_error", ["fail", "report"])
@pytest.mark.parametrize("lost", ["one partition", "every partition"])
def test_staged_files_the_driver_cannot_find_fail_the_write_and_no_row_counts_written(
    index_host: PineconeImportServer, tmp_path: Path, on_error: str, lost: str
) -> None:
    """import_uri on each node's own disk: the tasks staged their rows, the driver finds some files or none.
    Nothing may be imported, and nothing reported written: the job fails and says which storage it needs."""
    root = tmp_path / "imports"
    with client_for(index_host, str(root), namespace="docs", on_error=on_error) as client:
        folder = import_folder(client.options)
        parts = {0: rows(10), 1: rows(15, start=10), 2: rows(5, start=25)}
        staged = stage_parts(client, folder, "job-x", parts)
        if lost == "one partition":  # on another node's disk
            (root / staged_name("job-x", 1, 0, "docs", STAGED_FOR)).unlink()
        else:
            shutil.rmtree(root / staging_dir("job-x", STAGED_FOR))
        with pytest.raises(StagingFailed) as info:
            finish_import(client, staged, [(0, 0), (1, 0), (2, 0)], "job-x")
    message = str(info.value)
    assert message.startswith(
        f"option import_uri: the driver cannot see the files the tasks staged under import_uri ({root}; "
        f"no file of partition {'1' if lost == 'one partition' else '0, 1, 2'}); import_uri must be "
        "storage shared by the driver and the executors"
    ), message
    assert "Nothing was imported and no row counts as written" in message
    assert index_host.imports.all() == []
    assert index_host.state.snapshot().namespaces == {}
    assert not (root / "job-x").exists()  # what the driver did see is deleted: no import will read it


def test_an_attempt_that_staged_nothing_is_no_missing_file(
    index_host: PineconeImportServer, tmp_path: Path
) -> None:
    """A Beam bundle whose rows were all refused is among the attempts that succeeded, with no file."""
    with client_for(index_host, str(tmp_path / "imports"), namespace="docs", on_error="report") as client:
        folder = import_folder(client.options)
        staged = stage_parts(client, folder, "job-y", {0: rows(10), 1: with_nan(rows(2, start=10), 0, 1)})
        report = finish_import(client, staged, [(0, 0), (1, 0)], "job-y")
    assert (report.written, report.failed) == (10, 2), report
    assert_imported_exactly(index_host, rows(10), "docs")


def test_a_row_refused_while_staging_fails_an_on_error_fail_import_before_it_starts(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """The write fails anyway: an import started first would fill the new namespace, and Pinecone refuses
    to import into it again, so the fixed write could not run. Nothing is imported, the namespace stays new."""
    table = rows(30)
    with (
        client_for(index_host, s3_store.uri(prefix), namespace="docs") as client,
        pytest.raises(WriteFailed) as info,
    ):
        import_data(client, with_nan(table, 4))
    message = str(info.value)
    assert "1 of 30 rows were refused while staging (first ids: v4): 1x " in message and "NaN" in message
    assert "Nothing was imported" in message and "can run again" in message
    assert "did land" not in message and "upserts the same ids" not in message
    assert (info.value.report.written, info.value.report.failed) == (
        0,
        30,
    )  # the 29 staged rows count as not imported
    assert index_host.imports.all() == []
    assert index_host.state.snapshot().namespaces == {}
    assert s3_store.files(prefix) == []  # the staged files are dropped with the write
    fixed = table.filter(pa.compute.not_equal(table["id"], "v4"))
    with client_for(index_host, s3_store.uri(prefix), namespace="docs") as client:
        report = import_data(client, fixed)
    assert (report.written, report.failed) == (29, 0), report
    assert_imported_exactly(index_host, fixed, "docs")
