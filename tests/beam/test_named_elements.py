"""Several vectors a row from Beam elements that are dicts (not Arrow): each element read into a
``NamedRow``, batched into the client's ``Columns``, through the coders where the runner does not fuse
the steps (``batching="unbounded"``: ``GroupIntoBatches`` keeps rows in state), into the Qdrant-protocol
server, read back exactly per name with qdrant-client; a row bad under one name comes out of
``.failed`` alone, with its whole element."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.coders import registry
from apache_beam.testing.util import assert_that, equal_to
from qdrant_client import models

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam import WriteToVectorDB
from vectordb.beam.batch import VectorBatch, assemble
from vectordb.beam.elements import ElementReader, NamedRow, Row
from vectordb.connector.client import resolve_options
from vectordb.connector.transports.base import forget_shared

MAX_SIM = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
N = 60


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def elements(seed: int) -> tuple[list[dict[str, Any]], np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    title = rng.standard_normal((N, 4)).astype(np.float32)
    tokens = [rng.standard_normal((int(k), 3)).astype(np.float32) for k in rng.integers(1, 5, N)]
    rows: list[dict[str, Any]] = [
        # vectors as Python lists (what JSON-decoded elements hold) and as numpy arrays, alternately
        {"id": i, "title_vec": title[i].tolist() if i % 2 else title[i], "tokens": tokens[i].tolist(), "n": i}
        for i in range(N)
    ]
    rows[17]["tokens"] = [[1.0, 2.0, 3.0], [1.0, 2.0]]  # ragged: fails alone, naming 'colbert'
    return rows, title, tokens


def reader() -> ElementReader:
    options = resolve_options(
        {
            "uri": "qdrant://127.0.0.1:1/c",
            "vector_columns": "title:title_vec",
            "multi_vector_columns": "colbert:tokens",
        }
    )
    return ElementReader.from_options(options)


def test_named_rows_and_their_batches_round_trip_through_the_coders() -> None:
    rows, title, tokens = elements(seed=5)
    read = [reader().read(r) for r in rows[:6]]
    assert all(type(r) is NamedRow for r in read)
    row_coder = registry.get_coder(Row)
    back = [row_coder.decode(row_coder.encode(r)) for r in read]
    for original, again in zip(read, back, strict=True):
        assert type(again) is NamedRow and again.id == original.id and again.metadata == original.metadata
        assert again.vectors["title"].tobytes() == original.vectors["title"].tobytes()
        assert [a.tobytes() for a in again.multi_vectors["colbert"]] == [
            a.tobytes() for a in original.multi_vectors["colbert"]
        ]
    batch = assemble(back)
    assert batch.columns is not None and len(batch) == 6
    coder = registry.get_coder(VectorBatch)
    decoded = coder.decode(coder.encode(batch))
    assert decoded.columns is not None and decoded.namespace == batch.namespace
    assert decoded.columns.named["title"].flat.tobytes() == title[:6].tobytes()
    assert decoded.columns.multi["colbert"].flat.tobytes() == np.concatenate(tokens[:6]).tobytes()


@pytest.mark.parametrize("batching", ["bounded", "unbounded"])
def test_dict_elements_with_named_and_multi_vectors_read_back_exactly(
    server: QdrantServer, batching: str
) -> None:
    rows, title, tokens = elements(seed=6)
    official = server.client(prefer_grpc=True)
    official.create_collection(
        "dicts_named",
        vectors_config={
            "title": models.VectorParams(size=4, distance=models.Distance.COSINE),
            "colbert": models.VectorParams(size=3, distance=models.Distance.DOT, multivector_config=MAX_SIM),
        },
    )
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        result = (
            pipeline
            | beam.Create(rows, reshuffle=False)
            | WriteToVectorDB(
                server.grpc_uri("dicts_named"),
                vector_columns="title:title_vec",
                multi_vector_columns="colbert:tokens",
                batching=batching,
                rows_per_batch=16,
                max_buffering_s=0.5,
                on_error="report",
            )
        )
        failed = result.failed | beam.Map(lambda d: (d["id"], "'colbert'" in d["error"], d["n"], d["tokens"]))
        assert_that(
            failed, equal_to([(17, True, 17, [[1.0, 2.0, 3.0], [1.0, 2.0]])])
        )  # the whole element as it came: its int id, its field n, its vectors under their own keys
    records = {r.id: r.vector for r in official.retrieve("dicts_named", list(range(N)), with_vectors=True)}
    official.close()
    assert sorted(records) == [i for i in range(N) if i != 17]
    for i, vector in records.items():
        assert isinstance(vector, dict)
        assert np.asarray(vector["title"], np.float32).tobytes() == title[i].tobytes()
        assert np.asarray(vector["colbert"], np.float32).tobytes() == tokens[i].tobytes()
