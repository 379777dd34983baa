"""Several vectors a point through Spark into Qdrant (the Qdrant-protocol test server, REST and gRPC): named
dense vectors (``array<float>``) and a multi-vector (``array<array<float>>``) written by the executors and
read back per name with qdrant-client exactly; an existing collection lacking a name is a ConfigError on the
driver, before any task."""

from __future__ import annotations

import csv
import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from qdrant_client import models

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer

qdrant_session_server = qdrant_grpc.qdrant_session_server  # the fixture

MAX_SIM = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)


def _table(n: int, seed: int) -> tuple[pa.Table, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    title = rng.standard_normal((n, 6)).astype(np.float32)
    tokens = [rng.standard_normal((int(k), 3)).astype(np.float32) for k in rng.integers(1, 5, n)]
    table = pa.table(
        {
            "id": list(range(n)),
            "title_vec": pa.array([list(v) for v in title], pa.list_(pa.float32())),
            "tokens": pa.array([[list(v) for v in m] for m in tokens], pa.list_(pa.list_(pa.float32()))),
            "n": list(range(n)),
        }
    )
    return table, title, tokens


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_spark_writes_named_and_multi_vectors_to_qdrant_exactly(
    spark: Any, qdrant_session_server: QdrantServer, transport: str
) -> None:
    collection = f"spark_named_{transport}"
    table, title, tokens = _table(300, seed=11)
    (
        spark.createDataFrame(table)
        .repartition(3)
        .write.format("vectordb")
        .option("uri", qdrant_session_server.uri(transport, collection))
        .option("create", "true")
        .option("vector_columns", "title:title_vec")
        .option("multi_vector_columns", "colbert:tokens")
        .option("vector_dimensions", "title:6,colbert:3")
        .mode("append")
        .save()
    )
    client = qdrant_session_server.client(prefer_grpc=transport == "grpc")
    params = client.get_collection(collection).config.params
    assert params.vectors["colbert"].multivector_config == MAX_SIM  # type: ignore[index]
    records = {r.id: r for r in client.retrieve(collection, list(range(300)), with_vectors=True)}
    client.close()
    assert len(records) == 300
    for i in range(300):
        vector = records[i].vector
        assert isinstance(vector, dict)
        assert np.asarray(vector["title"], np.float32).tobytes() == title[i].tobytes()
        assert np.asarray(vector["colbert"], np.float32).tobytes() == tokens[i].tobytes()
        assert records[i].payload == {"n": i}


def test_spark_refuses_a_collection_without_the_name_on_the_driver(
    spark: Any, qdrant_session_server: QdrantServer
) -> None:
    collection = "spark_named_missing"
    official = qdrant_session_server.client()
    official.create_collection(
        collection, vectors_config={"title": models.VectorParams(size=6, distance=models.Distance.COSINE)}
    )
    official.close()
    before = len(qdrant_session_server.store.log)
    table, _, _ = _table(20, seed=12)
    with pytest.raises(
        Exception, match="option multi_vector_columns: collection 'spark_named_missing' has no"
    ):
        (
            spark.createDataFrame(table)
            .write.format("vectordb")
            .option("uri", qdrant_session_server.uri("grpc", collection))
            .option("vector_columns", "title:title_vec")
            .option("multi_vector_columns", "colbert:tokens")
            .mode("append")
            .save()
        )
    assert len(qdrant_session_server.store.log) == before  # no task sent anything


def test_vectordb_load_writes_named_and_multi_vectors(
    spark: Any, qdrant_session_server: QdrantServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--option vector_columns=…``: the command needs no ``values`` column and states no ``dimension``
    (it refused both before: "no column 'values'", then "vector_column and vector_columns exclude each
    other")."""
    import pyarrow.parquet as pq

    from vectordb.spark.load import main

    table, title, tokens = _table(20, seed=5)
    path = tmp_path / "named.parquet"
    pq.write_table(table, path)
    uri = qdrant_session_server.uri("grpc", "load_named")
    argv = ["--input", str(path), "--uri", uri, "--option", "vector_columns=title:title_vec"]
    argv += [
        "--option",
        "multi_vector_columns=tokens:tokens",
        "--option",
        "vector_dimensions=title:6,tokens:3",
    ]
    assert main(argv) == 0, capsys.readouterr()
    assert "written:  20 of 20 rows" in capsys.readouterr().out
    client = qdrant_session_server.client()
    try:
        points, _ = client.scroll("load_named", limit=50, with_vectors=True)
    finally:
        client.close()
    got = {int(p.id): p.vector for p in points}
    assert len(got) == 20
    for i, vectors in got.items():
        assert np.asarray(vectors["title"], dtype=np.float32).tobytes() == title[i].tobytes()
        assert np.asarray(vectors["tokens"], dtype=np.float32).tobytes() == tokens[i].tobytes()


def test_a_named_vector_may_be_a_spark_ml_vector_column(
    spark: Any, qdrant_session_server: QdrantServer
) -> None:
    """``vector_columns`` takes a ``VectorUDT`` column as ``vector_column`` does (dense rows as they are,
    sparse ones made dense); it was refused on the driver."""
    from pyspark.ml.linalg import Vectors

    rows = [(0, Vectors.dense([0.5, -1.0, 2.0])), (1, Vectors.sparse(3, [2], [4.0]))]
    (
        spark.createDataFrame(rows, ["id", "title_vec"])
        .write.format("vectordb")
        .option("uri", qdrant_session_server.uri("grpc", "spark_named_ml"))
        .option("create", "true")
        .option("vector_columns", "title:title_vec")
        .option("vector_dimensions", "title:3")
        .mode("append")
        .save()
    )
    client = qdrant_session_server.client(prefer_grpc=True)
    try:
        records = {r.id: r.vector for r in client.retrieve("spark_named_ml", [0, 1], with_vectors=True)}
    finally:
        client.close()
    assert records == {0: {"title": [0.5, -1.0, 2.0]}, 1: {"title": [0.0, 0.0, 4.0]}}


def test_vectordb_load_reads_named_and_multi_vectors_from_csv_text(
    spark: Any, qdrant_session_server: QdrantServer, tmp_path: Path
) -> None:
    """A CSV holds text only: each named column's JSON is read as its vectors (only the single vector
    column's was, and a named one failed the job: "column 't' has type string")."""
    from vectordb.spark.load import main

    _, title, tokens = _table(5, seed=3)
    path = tmp_path / "named.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "t", "tok"])
        for i in range(5):
            writer.writerow([uuid.UUID(int=i), json.dumps(title[i].tolist()), json.dumps(tokens[i].tolist())])
    uri = qdrant_session_server.uri("grpc", "load_csv_named")
    argv = ["--input", str(path), "--uri", uri, "--option", "vector_columns=title:t"]
    argv += [
        "--option",
        "multi_vector_columns=colbert:tok",
        "--option",
        "vector_dimensions=title:6,colbert:3",
    ]
    assert main(argv) == 0
    client = qdrant_session_server.client(prefer_grpc=True)
    ids = [str(uuid.UUID(int=i)) for i in range(5)]  # a CSV's ids are text: UUIDs are Qdrant's own
    records = {r.id: r for r in client.retrieve("load_csv_named", ids, with_vectors=True)}
    for i in range(5):
        vectors = records[ids[i]].vector
        assert isinstance(vectors, dict)
        assert np.asarray(vectors["title"], np.float32).tobytes() == title[i].tobytes()
        assert np.asarray(vectors["colbert"], np.float32).tobytes() == tokens[i].tobytes()
