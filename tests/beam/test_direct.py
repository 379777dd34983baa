"""``WriteToVectorDB`` on the DirectRunner against the Pinecone-protocol servers: data, failures, metrics.

Beam's ``DirectRunner`` first tries the Prism runner (a binary it downloads; with no internet
it falls back at once), then runs batch pipelines on the in-memory ``FnApiRunner`` and
pipelines with processing-time timers (``GroupIntoBatches`` with a buffering time) on the
``BundleBasedDirectRunner``. Most tests name the runner it ends on, so they need no network
and always test the same thing; one test goes through ``DirectRunner`` itself.
"""

from __future__ import annotations

import base64
import bz2
import json
from pathlib import Path
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pytest
from apache_beam.ml.rag.types import Chunk, Content, Embedding
from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.utils.secret import Secret

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB
from vectordb.connector import AuthError, ConfigError

from . import data
from .conftest import counters

SHARDS = 20  # 20,000 records


def write_records(
    uri: str, shards: int = SHARDS, runner: Any = None, **options: Any
) -> tuple[beam.Pipeline, Any]:
    pipeline = beam.Pipeline(runner=runner or FnApiRunner())
    records = pipeline | beam.Create(list(range(shards))) | beam.FlatMap(data.records)
    return pipeline, records | WriteToVectorDB(uri, **options)


def assert_stored(
    server: ServerHandle, want: dict[str, tuple[bytes, dict[str, Any]]], namespace: str = ""
) -> None:
    arrived = server.arrived()
    assert arrived.ids(namespace) == set(want)
    for row_id, (vector, metadata) in want.items():
        got = arrived.vector(row_id, namespace)
        assert got.values_f32 == vector, row_id
        assert got.metadata == metadata, row_id


@pytest.mark.parametrize("kind", ["grpc", "rest"])
def test_twenty_thousand_records_arrive_exactly(kind: str, request: pytest.FixtureRequest) -> None:
    server: ServerHandle = request.getfixturevalue(f"{kind}_server")
    pipeline, result = write_records(server.uri, api_key="k-1", namespace="docs")
    _ = (
        result.written
        | beam.Map(lambda report: report.written)
        | "sum written" >> beam.CombineGlobally(sum)
        | beam.Map(check_equals, 20_000)
    )
    run = pipeline.run()
    run.wait_until_finish()

    assert_stored(server, data.expected(SHARDS), "docs")
    arrived = server.arrived()
    assert {r.api_key for r in arrived.requests} == {"k-1"}
    assert all(r.outcome == "ok" for r in arrived.requests)
    assert counters(run) == {
        "written": 20_000,
        "requests": len(arrived.requests),
        "bytes_sent": sum(r.size for r in arrived.requests),
    }
    assert max(r.vector_count for r in arrived.requests) == 500  # the backend's default rows per request


def check_equals(value: int, want: int) -> None:
    if value != want:
        raise AssertionError(f"{value} != {want}")


def test_rejected_ids_are_exactly_the_dead_letters(grpc_server: ServerHandle, tmp_path: Path) -> None:
    rejected = data.rejected_ids(SHARDS)
    grpc_server.script(reject_ids=rejected)
    pipeline, _ = write_records(grpc_server.uri, on_error="dead_letter", dead_letter_path=str(tmp_path))
    run = pipeline.run()
    run.wait_until_finish()

    letters = [
        json.loads(line)
        for f in sorted(tmp_path.glob("dead-letters-*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    assert sorted(letter["id"] for letter in letters) == sorted(rejected)
    want = data.expected(SHARDS)
    for letter in letters:
        vector, metadata = want[letter["id"]]
        assert np.asarray(letter["values"], dtype=np.float32).tobytes() == vector
        assert {k: letter[k] for k in metadata} == metadata  # the element as it came: its fields at the top
        assert letter["error_type"] == "Rejected" and "rejected" in letter["error"]
        assert letter["retryable"] is False and letter["attempts"] >= 1
    assert_stored(grpc_server, {k: v for k, v in want.items() if k not in rejected})
    found = counters(run)
    assert found["written"] == 20_000 - len(rejected) and found["failed"] == len(rejected)
    assert found["requests"] == len(grpc_server.arrived().requests)


def test_throttling_server_gets_everything(grpc_server: ServerHandle) -> None:
    grpc_server.script(throttle_first=12, max_in_flight=2, retry_after_s=0.01)
    pipeline, result = write_records(grpc_server.uri, shards=5, max_concurrency=8, on_error="report")
    _ = result.failed | "no dead letters" >> beam.combiners.Count.Globally() | beam.Map(check_equals, 0)
    run = pipeline.run()
    run.wait_until_finish()

    assert_stored(grpc_server, data.expected(5))
    arrived = grpc_server.arrived()
    throttled = arrived.count("throttled") + arrived.count("over_quota")
    assert throttled >= 12
    found = counters(run)
    assert found["written"] == 5000 and "failed" not in found
    assert found["throttled"] == throttled and found["retries"] == throttled
    assert found["requests"] == len(arrived.requests)


def test_unbounded_batching_groups_into_sized_batches(grpc_server: ServerHandle) -> None:
    # processing-time timers: the DirectRunner runs this on the BundleBasedDirectRunner, whose
    # metrics keep only the first bundle of each step (its state sampler reuses the first bundle's
    # metrics container), so this test counts through the reports instead
    pipeline, result = write_records(
        grpc_server.uri,
        shards=3,
        runner=BundleBasedDirectRunner(),
        batching="unbounded",
        rows_per_batch=700,
        max_buffering_s=1,
    )
    sizes = result.written | beam.Map(lambda report: report.written)
    _ = (
        sizes
        | "all sized" >> beam.Map(lambda n: n <= 700)
        | beam.CombineGlobally(all)
        | beam.Map(check_equals, True)
    )
    _ = sizes | "sum" >> beam.CombineGlobally(sum) | "all written" >> beam.Map(check_equals, 3000)
    pipeline.run().wait_until_finish()
    assert_stored(grpc_server, data.expected(3))


def test_every_input_kind(grpc_server: ServerHandle) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((6, 4)).astype(np.float32)
    table = pa.RecordBatch.from_pydict(
        {
            "id": ["arrow-1", "arrow-2"],
            "values": pa.array([vectors[4].tolist(), vectors[5].tolist()], type=pa.list_(pa.float32())),
            "lang": ["en", "fr"],
        }
    )
    elements = [
        {"id": "dict-list", "values": vectors[0].tolist(), "metadata": {"a": 1}, "year": 2020},
        {
            "id": "dict-numpy",
            "values": vectors[1],
            "sparse_values": {"indices": [1, 7], "values": [0.5, 0.25]},
        },
        beam.Row(id="row", values=vectors[2].tolist(), topic="beam"),
        Chunk(
            id="chunk",
            content=Content(text="hello"),
            metadata={"source": "doc.txt"},
            embedding=Embedding(dense_embedding=vectors[3].tolist(), sparse_embedding=([3, 4], [1.0, 2.0])),
        ),
        table,
    ]
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        _ = pipeline | beam.Create(elements, reshuffle=False) | WriteToVectorDB(grpc_server.uri)

    arrived = grpc_server.arrived()
    assert arrived.ids() == {"dict-list", "dict-numpy", "row", "chunk", "arrow-1", "arrow-2"}
    expect = {"dict-list": 0, "dict-numpy": 1, "row": 2, "chunk": 3, "arrow-1": 4, "arrow-2": 5}
    for row_id, i in expect.items():
        assert arrived.vector(row_id).values_f32 == vectors[i].tobytes(), row_id
    assert arrived.vector("dict-list").metadata == {"a": 1, "year": 2020}
    assert arrived.vector("dict-numpy").metadata is None
    assert arrived.vector("dict-numpy").sparse_indices == [1, 7]
    assert arrived.vector("row").metadata == {"topic": "beam"}
    chunk = arrived.vector("chunk")
    assert chunk.metadata == {"source": "doc.txt", "content": "hello"}
    assert chunk.sparse_indices == [3, 4]
    assert np.frombuffer(chunk.sparse_values_f32 or b"", "<f4").tolist() == [1.0, 2.0]
    assert arrived.vector("arrow-2").metadata == {"lang": "fr"}


def test_column_options_and_per_row_namespaces(grpc_server: ServerHandle) -> None:
    elements = [
        {
            "doc": "a",
            "part": i,
            "emb": [float(i) + 0.5] * 4,  # none all zeros (Pinecone refuses them)
            "tenant": "t1" if i % 2 else "t2",
            "keep": i,
            "drop": "x",
        }
        for i in range(10)
    ]
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = (
            pipeline
            | beam.Create(elements)
            | WriteToVectorDB(
                grpc_server.uri,
                id_from="doc,part",
                vector_column="emb",
                namespace_column="tenant",
                metadata_columns="keep,part",
            )
        )
    from vectordb.connector.rows import derive_id

    arrived = grpc_server.arrived()
    for i in range(10):
        stored = arrived.vector(derive_id(["a", i]), "t1" if i % 2 else "t2")
        assert stored.values.tolist() == [float(i) + 0.5] * 4
        assert stored.metadata == {"keep": i, "part": i}


def test_unreadable_and_invalid_rows_are_dead_letters(grpc_server: ServerHandle) -> None:
    elements = [
        {"id": "ok-1", "values": [1.0, 2.0, 3.0]},
        {"id": "words", "values": ["a", "b", "c"]},  # refused while reading
        {"id": "nan", "values": [1.0, float("nan"), 3.0]},  # refused by the client
        {"id": "short", "values": [1.0, 2.0]},
        {"values": [1.0, 2.0, 3.0]},
        {"id": "ok-2", "values": np.ones(3, dtype=np.float64)},
    ]
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        result = (
            pipeline
            | beam.Create(elements, reshuffle=False)
            | WriteToVectorDB(grpc_server.uri, on_error="report")
        )
        reasons = result.failed | beam.Map(lambda d: (d["id"], d["error"], d["error_type"], d["attempts"]))
        assert_that(
            reasons,
            equal_to(
                [
                    ("words", "vector is not a sequence of numbers", "Invalid", 0),
                    ("nan", "vector has NaN or infinity at index 1", "Invalid", 0),
                    ("short", "vector has 2 dimensions; expected 3", "Invalid", 0),
                    (None, "missing id", "Invalid", 0),  # null, as the element had it
                ]
            ),
        )
    assert grpc_server.arrived().ids() == {"ok-1", "ok-2"}


def test_on_error_fail_fails_the_pipeline(grpc_server: ServerHandle) -> None:
    grpc_server.script(reject_ids=frozenset({"s0-5"}))
    pipeline, _ = write_records(grpc_server.uri, shards=1)
    with pytest.raises(Exception, match="1 of 1000 rows failed"):
        pipeline.run().wait_until_finish()


def test_options_are_checked_when_the_pipeline_is_built() -> None:
    with pytest.raises(ConfigError, match="bach_size"):
        WriteToVectorDB("pinecone+grpc://127.0.0.1:1", bach_size=10)
    with pytest.raises(ConfigError, match="batch_size"):
        WriteToVectorDB("pinecone+grpc://127.0.0.1:1", batch_size=5000)  # Pinecone takes ≤ 1000 per request
    with pytest.raises(ConfigError, match="api_key"):
        WriteToVectorDB("pinecone+grpc://my-index.svc.pinecone.io")
    with pytest.raises(ConfigError, match="batching"):
        WriteToVectorDB("pinecone+grpc://127.0.0.1:1", batching="sometimes")  # type: ignore[arg-type]


def test_element_of_another_type_fails_with_its_name(grpc_server: ServerHandle) -> None:
    with pytest.raises(Exception, match="not int"), beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = pipeline | beam.Create([1]) | WriteToVectorDB(grpc_server.uri)


def test_check_target_asks_the_database_while_the_pipeline_is_built(grpc_server: ServerHandle) -> None:
    grpc_server.script(api_key="right-key", dimension=data.DIM)
    with pytest.raises(AuthError):
        WriteToVectorDB(grpc_server.uri, api_key="wrong-key", check_target=True)
    sink = WriteToVectorDB(grpc_server.uri, api_key="right-key", check_target=True)
    assert getattr(sink.options, "verify", None) is False  # the workers need not ask again
    assert sink.options.dimension == data.DIM  # and refuse rows of another length before sending
    pipeline, _ = write_records(grpc_server.uri, shards=1, api_key="right-key", check_target=True)
    pipeline.run().wait_until_finish()
    assert len(grpc_server.arrived().ids()) == 1000


def test_a_bad_key_fails_the_pipeline_whatever_on_error_says(grpc_server: ServerHandle) -> None:
    grpc_server.script(api_key="right-key")
    pipeline, _ = write_records(grpc_server.uri, shards=1, api_key="wrong-key", on_error="report")
    with pytest.raises(Exception, match="UNAUTHENTICATED"):
        pipeline.run().wait_until_finish()
    assert grpc_server.arrived().ids() == set()


def pickled_fns(pipeline: beam.Pipeline) -> list[bytes]:
    """Every ParDo's pickled DoFn as the runner stores it (Dataflow stages this), decompressed."""
    out = []
    for transform in pipeline.to_runner_api().components.transforms.values():
        if transform.spec.urn == common_urns.primitives.PAR_DO.urn:
            encoded = beam_runner_api_pb2.ParDoPayload.FromString(transform.spec.payload).do_fn.payload
            out.append(bz2.decompress(base64.b64decode(encoded)))
    return out


def test_api_key_env_is_read_on_the_workers_and_never_stored_in_the_pipeline(
    grpc_server: ServerHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    grpc_server.script(api_key="s3cr3t-right-key")
    monkeypatch.setenv("VDB_TEST_KEY", "s3cr3t-right-key")
    pipeline, _ = write_records(grpc_server.uri, shards=1, api_key_env="VDB_TEST_KEY")
    fns = pickled_fns(pipeline)
    assert any(b"VDB_TEST_KEY" in fn for fn in fns)  # the sink's options are in there, by name only
    assert not any(b"s3cr3t" in fn for fn in fns)
    pipeline.run().wait_until_finish()
    assert len(grpc_server.arrived().ids()) == 1000
    monkeypatch.delenv("VDB_TEST_KEY")  # a worker without the variable stops with its name
    pipeline, _ = write_records(grpc_server.uri, shards=1, api_key_env="VDB_TEST_KEY")
    with pytest.raises(Exception, match="option api_key_env: environment variable 'VDB_TEST_KEY' is not set"):
        pipeline.run().wait_until_finish()


class FileSecret(Secret):
    """A Beam ``Secret`` kept in a file: fetched where ``get_secret_bytes`` runs, as ``GcpSecret`` is."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = str(path)

    def get_secret_bytes(self) -> bytes:
        return Path(self.path).read_bytes()


def test_a_beam_secret_is_fetched_on_the_workers(grpc_server: ServerHandle, tmp_path: Path) -> None:
    grpc_server.script(api_key="s3cr3t-right-key")
    key_file = tmp_path / "key"
    key_file.write_text("s3cr3t-wrong-key")
    with pytest.raises(AuthError):  # check_target fetches it at once, to ask the database
        WriteToVectorDB(grpc_server.uri, api_key=FileSecret(key_file), check_target=True)
    key_file.write_text("s3cr3t-right-key")
    pipeline, _ = write_records(grpc_server.uri, shards=1, api_key=FileSecret(key_file))
    fns = pickled_fns(pipeline)
    assert any(str(key_file).encode() in fn for fn in fns) and not any(b"s3cr3t" in fn for fn in fns)
    pipeline.run().wait_until_finish()
    assert len(grpc_server.arrived().ids()) == 1000
    key_file.unlink()
    pipeline, _ = write_records(grpc_server.uri, shards=1, api_key=FileSecret(key_file))
    with pytest.raises(Exception, match="option api_key: the FileSecret could not be read"):
        pipeline.run().wait_until_finish()


def test_large_arrow_batches_are_written_in_slices(grpc_server: ServerHandle) -> None:
    n, dim = 2500, 4
    matrix = np.arange(n * dim, dtype=np.float32).reshape(n, dim)
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int32))
    batch = pa.RecordBatch.from_pydict(
        {
            "id": [f"a{i}" for i in range(n)],
            "values": pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1))),
        }
    )
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        result = pipeline | beam.Create([batch]) | WriteToVectorDB(grpc_server.uri, rows_per_batch=1000)
        assert_that(result.written | beam.Map(lambda report: report.written), equal_to([1000, 1000, 500]))
    arrived = grpc_server.arrived()
    assert len(arrived.ids()) == n and arrived.vector("a2499").values_f32 == matrix[2499].tobytes()


def test_a_null_namespace_is_the_writes_whatever_the_rows_beside_it(grpc_server: ServerHandle) -> None:
    """Rows whose namespace is null land in the write's namespace, as rows without one do, whether their
    batch holds only such rows or also a row of another namespace (two rows a batch here); as
    ``Client.write`` puts them."""
    v = [1.0, 2.0, 3.0, 4.0]
    elements = [
        {"id": "a1", "values": v, "namespace": None},
        {"id": "a2", "values": v},
        {"id": "b1", "values": v, "namespace": None},
        {"id": "b2", "values": v, "namespace": "other"},
        {"id": "c1", "values": v, "namespace": ""},  # a namespace: the database's default
    ]
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        _ = (
            pipeline
            | beam.Create(elements, reshuffle=False)
            | WriteToVectorDB(grpc_server.uri, api_key="k", namespace="docs", rows_per_batch=2)
        )
    arrived = grpc_server.arrived()
    assert (arrived.ids("docs"), arrived.ids("other"), arrived.ids("")) == (
        {"a1", "a2", "b1"},
        {"b2"},
        {"c1"},
    )
