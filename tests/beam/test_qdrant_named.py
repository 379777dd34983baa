"""Several vectors a point through ``WriteToVectorDB`` into Qdrant (the Qdrant-protocol servers, REST and gRPC):
Arrow RecordBatch elements with named dense vectors and a multi-vector, read back per name with qdrant-client
exactly; a bad row under one name comes out of ``.failed`` alone, naming it; with ``create=true`` the pipeline
makes the collection with every name (the multi-vector with max_sim)."""

from __future__ import annotations

from collections.abc import Iterator

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pytest
from apache_beam.testing.util import assert_that, equal_to
from qdrant_client import models

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam import WriteToVectorDB
from vectordb.connector.transports.base import forget_shared

MAX_SIM = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _batches(seed: int) -> tuple[list[pa.RecordBatch], np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    n = 90
    title = rng.standard_normal((n, 4)).astype(np.float32)
    body = rng.standard_normal((n, 5)).astype(np.float32)
    tokens = [rng.standard_normal((int(k), 2)).astype(np.float32) for k in rng.integers(1, 6, n)]
    title_rows: list[list[float]] = [list(map(float, v)) for v in title]
    title_rows[40] = title_rows[40][:3]  # a bad row under 'title'
    table = pa.table(
        {
            "id": list(range(n)),
            "title_vec": pa.array(title_rows, pa.list_(pa.float32())),
            "body_vec": pa.FixedSizeListArray.from_arrays(pa.array(body.reshape(-1)), 5),
            "tokens": pa.array([[list(v) for v in m] for m in tokens], pa.list_(pa.list_(pa.float32()))),
        }
    )
    return table.to_batches(max_chunksize=30), title, body, tokens


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_beam_writes_arrow_batches_with_named_and_multi_vectors(server: QdrantServer, transport: str) -> None:
    batches, title, body, tokens = _batches(seed=21)
    official = server.client(prefer_grpc=transport == "grpc")
    official.create_collection(
        "beam_named",
        vectors_config={
            "title": models.VectorParams(size=4, distance=models.Distance.COSINE),
            "body": models.VectorParams(size=5, distance=models.Distance.COSINE),
            "colbert": models.VectorParams(size=2, distance=models.Distance.DOT, multivector_config=MAX_SIM),
        },
    )
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        result = (
            pipeline
            | beam.Create(batches, reshuffle=False)
            | WriteToVectorDB(
                server.uri(transport, "beam_named"),
                vector_columns="title:title_vec,body:body_vec",
                multi_vector_columns="colbert:tokens",
                on_error="report",
                check_target=True,  # each name checked against the collection where the pipeline is built
            )
        )
        failed = result.failed | beam.Map(lambda d: (d["id"], "title" in d["error"]))
        assert_that(failed, equal_to([(40, True)]))  # a dead letter keeps the row's own id, an int here
    records = {r.id: r.vector for r in official.retrieve("beam_named", list(range(90)), with_vectors=True)}
    official.close()
    assert sorted(records) == [i for i in range(90) if i != 40]
    for i, vector in records.items():
        assert isinstance(vector, dict)
        assert np.asarray(vector["title"], np.float32).tobytes() == title[i].tobytes()
        assert np.asarray(vector["body"], np.float32).tobytes() == body[i].tobytes()
        assert np.asarray(vector["colbert"], np.float32).tobytes() == tokens[i].tobytes()


def test_beam_creates_the_collection_with_every_name(server: QdrantServer) -> None:
    batches, _, _, tokens = _batches(seed=22)
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        _ = (
            pipeline
            | beam.Create(batches, reshuffle=False)
            | WriteToVectorDB(
                server.grpc_uri("beam_created"),
                create=True,
                metric="dotproduct",
                vector_columns="title:title_vec,body:body_vec",
                multi_vector_columns="colbert:tokens",
                vector_dimensions="title:4,body:5,colbert:2",
                on_error="report",
            )
        )
    official = server.client()
    params = official.get_collection("beam_created").config.params
    records = {r.id: r.vector for r in official.retrieve("beam_created", list(range(90)), with_vectors=True)}
    official.close()
    assert params.vectors == {
        "title": models.VectorParams(size=4, distance=models.Distance.DOT),
        "body": models.VectorParams(size=5, distance=models.Distance.DOT),
        "colbert": models.VectorParams(size=2, distance=models.Distance.DOT, multivector_config=MAX_SIM),
    }
    assert sorted(records) == [i for i in range(90) if i != 40]
    for i, vector in records.items():
        assert isinstance(vector, dict)
        assert np.asarray(vector["colbert"], np.float32).tobytes() == tokens[i].tobytes()
