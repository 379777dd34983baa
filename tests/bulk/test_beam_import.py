"""``WriteToVectorDB(..., write_mode="import")`` on the DirectRunner: bundles stage Parquet in the S3-compatible
store, one import brings them into the index; every vector read back exactly, a refused row on ``failed``."""

from __future__ import annotations

import itertools
from typing import Any

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
from apache_beam.testing.util import assert_that, equal_to

from tests.beam.conftest import counters
from tests.bulk.conftest import S3Store
from tests.servers.pinecone_control import ImportScript, PineconeImportServer
from vectordb.beam import WriteToVectorDB
from vectordb.connector import ConfigError, WriteFailed, connect
from vectordb.connector.backends.pinecone_import import ImportStager

DIM = 5
API_KEY = "beam-key-8c"


def records(n: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(11)
    matrix = rng.standard_normal((n, DIM), dtype=np.float32)
    out = [{"id": f"b{i}", "values": matrix[i].tolist(), "metadata": {"n": i}} for i in range(n)]
    out[9]["values"][1] = float("nan")
    return out


def sink(index_host: PineconeImportServer, s3_store: S3Store, prefix: str, **options: Any) -> WriteToVectorDB:
    return WriteToVectorDB(
        index_host.uri,
        api_key=API_KEY,
        namespace="docs",
        write_mode="import",
        import_uri=s3_store.uri(prefix),
        import_poll_s=0.05,
        rows_per_batch=100,
        **options,
    )


def summary(report: Any) -> tuple[int, int]:
    return report.written, report.failed


def test_a_beam_import_lands_every_vector_and_the_refused_row_is_failed(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    data = records(450)
    with beam.Pipeline(runner="DirectRunner", options=PipelineOptions()) as p:
        result = p | beam.Create(data) | sink(index_host, s3_store, prefix, on_error="report")
        assert_that(result.written | beam.Map(summary), equal_to([(449, 1)]), label="one report")
        assert_that(result.failed | beam.Map(lambda d: d["id"]), equal_to(["b9"]), label="failed")
    stored = index_host.state.snapshot().namespaces["docs"]
    assert len(stored) == 449
    for row in data:
        if row["id"] == "b9":
            assert "b9" not in stored
            continue
        got = stored[row["id"]]
        assert got.values_f32 == np.asarray(row["values"], dtype="<f4").tobytes()
        assert got.metadata == row["metadata"]
    (job,) = index_host.imports.all()
    assert job.status == "Completed" and job.records_imported == 449
    assert all(f.split("/")[1] == "docs" for f in s3_store.files(prefix))


def test_a_failed_import_fails_the_beam_pipeline(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    index_host.imports.set_script(ImportScript(fail_after_rows=100))
    # the DirectRunner wraps the sink's WriteFailed in a RuntimeError that names it
    with (
        pytest.raises(Exception, match=f"{WriteFailed.__name__}.*190 staged rows were not imported"),
        beam.Pipeline(runner="DirectRunner") as p,
    ):
        _ = p | beam.Create(records(300)[10:]) | sink(index_host, s3_store, prefix)
    assert len(index_host.state.snapshot().namespaces["docs"]) == 100  # what landed stays


def test_an_existing_namespace_or_unbounded_input_is_refused_while_the_pipeline_is_built(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    with connect(index_host.uri, api_key=API_KEY, namespace="docs") as upserts:
        upserts.upsert([{"id": "old", "values": [0.5] * DIM}])
    p = beam.Pipeline(runner="DirectRunner")
    with pytest.raises(ConfigError, match="already exists"):
        _ = p | beam.Create(records(20)) | sink(index_host, s3_store, prefix)
    p = beam.Pipeline(runner="DirectRunner")
    with pytest.raises(ConfigError, match="for bounded input"):
        _ = p | beam.Create(records(20)) | sink(index_host, s3_store, prefix, batching="unbounded")
    assert index_host.imports.all() == []


def test_the_counters_are_the_imports_report_when_it_imports_part_of_the_rows(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """written: rows imported; failed: the refused row and the staged rows the import left out."""
    index_host.imports.set_script(ImportScript(fail_after_rows=100))
    pipeline = beam.Pipeline(runner="DirectRunner")
    result = pipeline | beam.Create(records(300)) | sink(index_host, s3_store, prefix, on_error="report")
    assert_that(result.written | beam.Map(summary), equal_to([(100, 200)]))
    run = pipeline.run()
    run.wait_until_finish()
    assert len(index_host.state.snapshot().namespaces["docs"]) == 100
    got = counters(run)
    assert (got.get("written"), got.get("failed"), got.get("staged")) == (100, 200, 299), got


def test_a_staging_bundle_the_runner_retries_counts_its_rows_once(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The BundleBasedDirectRunner retries a failed bundle and keeps the counter increments it made."""
    write, calls = ImportStager.write, itertools.count()

    def fails_once(self: ImportStager, *args: Any, **kwargs: Any) -> Any:
        if next(calls) == 1:  # the second batch: its bundle has staged (and refused) rows already
            raise RuntimeError("staging fails once")
        return write(self, *args, **kwargs)

    monkeypatch.setattr(ImportStager, "write", fails_once)
    pipeline = beam.Pipeline(runner=BundleBasedDirectRunner())
    _ = (
        pipeline
        | beam.Create([300])
        | beam.FlatMap(records)  # one bundle of 300 rows: three batches of 100
        | sink(index_host, s3_store, prefix, on_error="report")
    )
    run = pipeline.run()
    run.wait_until_finish()
    assert next(calls) > 4  # the bundle ran again
    assert len(index_host.state.snapshot().namespaces["docs"]) == 299
    got = counters(run)
    assert (got.get("written"), got.get("failed"), got.get("staged")) == (299, 1, 299), got


def test_a_row_whose_letter_holds_a_lone_surrogate_fails_alone(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """A Chunk whose metadata holds a lone surrogate is refused by staging; its letter (the text as given)
    stopped the pipeline in Beam's coder for ``dict[str, Any]``, which writes strict UTF-8."""
    from apache_beam.ml.rag.types import Chunk, Content, Embedding
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    lone = "lone \ud800 surrogate"
    chunks = [
        Chunk(
            id=f"c{i}",
            index=i,
            content=Content(text=f"text {i}"),
            embedding=Embedding(dense_embedding=[0.5] * DIM),
        )
        for i in range(3)
    ]
    chunks[1].metadata = {"title": lone}
    with beam.Pipeline(runner=FnApiRunner()) as p:
        result = (
            p | beam.Create(chunks, reshuffle=False) | sink(index_host, s3_store, prefix, on_error="report")
        )
        assert_that(result.written | beam.Map(summary), equal_to([(2, 1)]), label="one report")
        assert_that(
            result.failed | beam.Map(lambda d: (d["id"], repr(lone) in repr(d))), equal_to([("c1", True)])
        )
    assert set(index_host.state.snapshot().namespaces["docs"]) == {"c0", "c2"}
