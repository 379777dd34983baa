"""Several vectors a point on Qdrant (options vector_columns, multi_vector_columns), over REST and gRPC, through
connect() against the Qdrant-protocol servers: the encoders against qdrant-client's generated classes and
REST models, exact read-back per name with qdrant-client, the collection made with every name (multi-vectors
with max_sim), an existing collection checked per name before any request, bad rows failing alone with
the name, and requests split under the size limit with the vectors counted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qdrant_client import grpc as qg
from qdrant_client import models
from qdrant_client.http import models as rest

from tests.float32_cases import encoder, matrices
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.qdrant import QdrantBackend, QdrantOptions, encode_grpc, encode_json
from vectordb.connector.rows import MultiVectors, RowBatch
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(90)
TRANSPORTS = ["rest", "grpc"]
NAMED = {"vector_columns": "title:title_vec,body:body_vec", "multi_vector_columns": "colbert:tokens"}
MAX_SIM = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _rows(n: int, seed: int, dims: tuple[int, int, int] = (4, 3, 2)) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 6, n)
    return {
        "title": rng.standard_normal((n, dims[0])).astype(np.float32),
        "body": rng.standard_normal((n, dims[1])).astype(np.float32),
        "tokens": [rng.standard_normal((int(k), dims[2])).astype(np.float32) for k in counts],
    }


def _table(ids: list[Any], rows: dict[str, Any], **columns: Any) -> pa.Table:
    """title_vec as list<float>, body_vec as fixed_size_list<float>, tokens as list<list<float>>."""
    title, body = rows["title"], rows["body"]
    return pa.table(
        {
            "id": ids,
            "title_vec": pa.array([list(v) for v in title], pa.list_(pa.float32())),
            "body_vec": pa.FixedSizeListArray.from_arrays(pa.array(body.reshape(-1)), body.shape[1]),
            "tokens": pa.array(
                [[list(v) for v in m] for m in rows["tokens"]], pa.list_(pa.list_(pa.float32()))
            ),
            **columns,
        }
    )


def _read_back(server: QdrantServer, transport: str, collection: str, ids: list[Any]) -> dict[Any, Any]:
    client = server.client(prefer_grpc=transport == "grpc")
    try:
        return {r.id: r.vector for r in client.retrieve(collection, ids, with_vectors=True)}
    finally:
        client.close()


def _assert_exact(vectors: dict[Any, Any], ids: list[Any], rows: dict[str, Any]) -> None:
    for i, pid in enumerate(ids):
        got = vectors[pid]
        assert np.asarray(got["title"], np.float32).tobytes() == rows["title"][i].tobytes(), pid
        assert np.asarray(got["body"], np.float32).tobytes() == rows["body"][i].tobytes(), pid
        tokens = np.asarray(got["colbert"], np.float32)
        assert tokens.shape == rows["tokens"][i].shape and tokens.tobytes() == rows["tokens"][i].tobytes(), (
            pid
        )


# -- encoders against the official classes ----------------------------------------------------------


def _batch() -> RowBatch:
    rows = _rows(5, seed=1)
    flat = np.concatenate(rows["tokens"])
    counts = np.array([len(m) for m in rows["tokens"]])
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return RowBatch(
        ids=[0, 7, "5e85dbc1-191f-4ec4-9f59-dc30e8685b42", 9, 11],
        vectors=None,
        metadata=[{"a": 1}, {}, {"t": "x"}, {}, {}],
        named_vectors={"title": rows["title"], "body": rows["body"]},
        multi_vectors={"colbert": MultiVectors(flat, offsets)},
    ).slice(1, 5)  # offsets[0] != 0: a slice keeps the buffer


def _options(transport: str, **extra: Any) -> QdrantOptions:
    scheme = "qdrant+grpc" if transport == "grpc" else "qdrant"
    return QdrantOptions(
        uri=f"{scheme}://h/c",
        vector_columns={"title": "title_vec", "body": "body_vec"},
        multi_vector_columns={"colbert": "tokens"},
        **extra,
    )


def _expected_points(batch: RowBatch, sparse: bool = False) -> qg.UpsertPoints:
    want = qg.UpsertPoints(collection_name="c", wait=True)
    for i, pid in enumerate(batch.ids):
        point = want.points.add()
        if isinstance(pid, int):
            point.id.num = pid
        else:
            point.id.uuid = pid
        assert batch.metadata is not None
        for key, value in batch.metadata[i].items():
            point.payload[key].string_value = value
        named = point.vectors.vectors.vectors
        for name, matrix in batch.named_vectors.items():
            named[name].dense.data.extend(matrix[i].tolist())
        for row in batch.multi_vectors["colbert"].row(i):
            named["colbert"].multi_dense.vectors.add().data.extend(row.tolist())
        if sparse and batch.sparse is not None and batch.sparse[i] is not None:
            indices, values = batch.sparse[i]  # type: ignore[misc]
            named["sparse"].sparse.values.extend(values.tolist())
            named["sparse"].sparse.indices.extend(indices.tolist())
    return want


def test_grpc_encoding_is_the_official_messages_bytes() -> None:
    batch = _batch()
    body = encode_grpc(batch, "c", _options("grpc"))
    want = _expected_points(batch)
    assert qg.UpsertPoints.FromString(body) == want
    assert body == want.SerializeToString(deterministic=True)
    # with a sparse vector beside them, on some rows only
    batch.sparse = [None, (np.array([1, 5], np.uint32), np.array([0.5, 0.25], np.float32)), None, None]
    body = encode_grpc(batch, "c", _options("grpc", sparse_column="s"))
    assert body == _expected_points(batch, sparse=True).SerializeToString(deterministic=True)


def test_json_encoding_reads_as_qdrants_points() -> None:
    batch = _batch()
    doc = orjson.loads(encode_json(batch, _options("rest")))
    parsed = rest.PointsBatch.model_validate(doc)
    vectors = parsed.batch.vectors
    assert isinstance(vectors, dict) and set(vectors) == {"title", "body", "colbert"}
    for i in range(len(batch)):
        assert (
            np.asarray(vectors["title"][i], np.float32).tobytes() == batch.named_vectors["title"][i].tobytes()
        )
        tokens = np.asarray(vectors["colbert"][i], np.float32)
        assert tokens.tobytes() == batch.multi_vectors["colbert"].row(i).tobytes()
    assert doc["batch"]["ids"] == batch.ids
    # shortest float32 text, not doubles
    text = encode_json(batch, _options("rest")).decode()
    assert str(np.float32(batch.named_vectors["title"][0][0])) in text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=matrices(min_rows=1, max_rows=12, min_dim=1, max_dim=9), data=st.data())
@pytest.mark.parametrize("writer", ["native", "python"])
def test_json_multi_vectors_read_back_to_the_same_float32_bits(
    writer: str, values: np.ndarray, data: Any
) -> None:
    """Any float32 (subnormals, -0.0, the one whose shortest text rounds through a double) reads back exactly,
    from the native writer and from orjson alike; each row holds its own vectors."""
    cuts = sorted(
        data.draw(st.sets(st.integers(1, len(values) - 1), max_size=4)) if len(values) > 1 else set()
    )
    offsets = np.array([0, *cuts, len(values)], np.int64)
    batch = RowBatch(
        ids=list(range(len(offsets) - 1)),
        vectors=None,
        multi_vectors={"colbert": MultiVectors(values, offsets)},
    )
    with encoder(writer):
        doc = orjson.loads(encode_json(batch, _options("rest")))
    rows = doc["batch"]["vectors"]["colbert"]
    for i, row in enumerate(rows):
        want = values[offsets[i] : offsets[i + 1]]
        assert np.asarray(row, np.float32).view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_row_bytes_count_every_name() -> None:
    batch = _batch()
    for transport in TRANSPORTS:
        backend = QdrantBackend(_options(transport))
        sizes = backend.row_bytes(batch)
        encode = encode_grpc if transport == "grpc" else None
        for i in range(len(batch)):
            one = batch.slice(i, i + 1)
            body = encode(one, "c", backend.options) if encode else encode_json(one, backend.options)
            assert sizes[i] >= len(body) - 64, (transport, i, sizes[i], len(body))  # the envelope is apart
            assert sizes[i] <= 1.3 * len(body) + 200, (transport, i, sizes[i], len(body))


# -- connect(): create, write, read back -------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_connect_creates_and_writes_named_and_multi_vectors_exactly(
    server: QdrantServer, transport: str
) -> None:
    rows = _rows(40, seed=2)
    ids = list(range(40))
    with connect(
        server.uri(transport, "docs"),
        create=True,
        metric="dotproduct",
        vector_dimensions="title:4,body:3,colbert:2",
        batch_size=16,
        **NAMED,
    ) as client:
        report = client.upsert(_table(ids, rows, lang=["en"] * 40))
    assert report.ok and report.written == 40 and report.requests == 3
    params = server.client().get_collection("docs").config.params
    assert params.vectors == {
        "title": models.VectorParams(size=4, distance=models.Distance.DOT),
        "body": models.VectorParams(size=3, distance=models.Distance.DOT),
        "colbert": models.VectorParams(size=2, distance=models.Distance.DOT, multivector_config=MAX_SIM),
    }
    _assert_exact(_read_back(server, transport, "docs", ids), ids, rows)
    assert server.store.points("docs")[5].payload == {"lang": "en"}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_connect_writes_dict_rows_with_named_vectors(server: QdrantServer, transport: str) -> None:
    rows = _rows(6, seed=3)
    _create(server, "docs")
    records = [
        {
            "id": i,
            "title_vec": rows["title"][i].tolist(),
            "body_vec": rows["body"][i],
            "tokens": rows["tokens"][i],
        }
        for i in range(6)
    ]
    with connect(server.uri(transport, "docs"), **NAMED) as client:
        report = client.upsert(records)
    assert report.ok and report.written == 6
    _assert_exact(_read_back(server, transport, "docs", list(range(6))), list(range(6)), rows)


def _create(server: QdrantServer, name: str, **changes: models.VectorParams) -> None:
    client = server.client()
    vectors = {
        "title": models.VectorParams(size=4, distance=models.Distance.COSINE),
        "body": models.VectorParams(size=3, distance=models.Distance.COSINE),
        "colbert": models.VectorParams(size=2, distance=models.Distance.COSINE, multivector_config=MAX_SIM),
        **changes,
    }
    client.create_collection(name, vectors_config={k: v for k, v in vectors.items() if v is not None})
    client.close()


# -- an existing collection, checked per name before any request --------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("changes", "options", "message"),
    [
        (
            {"body": None},
            {},
            r"option vector_columns: collection 'docs' has no vector 'body' \(it has \['colbert', 'title'\]\)",
        ),
        (
            {"colbert": models.VectorParams(size=2, distance=models.Distance.COSINE)},
            {},
            r"option multi_vector_columns: vector 'colbert' of collection 'docs' is a dense vector "
            r"\(no multivector_config\); write it with option vector_columns",
        ),
        (
            {
                "title": models.VectorParams(
                    size=4, distance=models.Distance.COSINE, multivector_config=MAX_SIM
                )
            },
            {},
            r"option vector_columns: vector 'title' of collection 'docs' is a multi-vector "
            r"\(multivector_config max_sim\); write it with option multi_vector_columns",
        ),
        (
            {},
            {"vector_dimensions": "title:8"},
            r"option vector_dimensions: vector 'title' of qdrant.*/docs has dimension 4, not 8",
        ),
        (
            {},
            {"vector_dimensions": "colbert:3"},
            r"option vector_dimensions: vector 'colbert' of qdrant.*/docs has its vectors' length 2, not 3",
        ),
    ],
)
def test_an_existing_collection_is_checked_per_name_before_any_request(
    server: QdrantServer, transport: str, changes: dict[str, Any], options: dict[str, str], message: str
) -> None:
    _create(server, "docs", **changes)
    client = connect(server.uri(transport, "docs"), **NAMED, **options)
    with pytest.raises(ConfigError, match=message):
        client.prepare_target()  # what a Spark or Beam driver runs before any task
    with pytest.raises(ConfigError, match=message):
        client.upsert(_table([1, 2], _rows(2, seed=4)))
    client.close()
    assert server.store.log == []  # no upsert request was sent


def test_vector_name_beside_named_vectors_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="option vector_name: names the one dense vector"):
        connect("qdrant://127.0.0.1:6333/docs", vector_name="dense", **NAMED)


def test_a_missing_collection_without_create_is_a_config_error(server: QdrantServer) -> None:
    client = connect(server.uri("grpc", "nope"), **NAMED)
    with pytest.raises(ConfigError, match="collection 'nope' does not exist"):
        client.prepare_target()
    client.close()


def test_create_makes_nothing_while_a_dimension_is_unknown_on_the_driver(server: QdrantServer) -> None:
    client = connect(server.uri("rest", "docs"), create=True, vector_dimensions="title:4,body:3", **NAMED)
    with pytest.raises(ConfigError, match=r"option vector_dimensions: .*'colbert'"):
        client.prepare_target()
    client.close()
    assert not server.store.exists("docs")


def test_the_driver_hands_the_collections_dimensions_to_workers(server: QdrantServer) -> None:
    _create(server, "docs")
    with connect(server.uri("grpc", "docs"), **NAMED) as client:
        resolved = client.prepare_target().resolved
    assert resolved["vector_dimensions"] == {"title": 4, "body": 3, "colbert": 2}
    assert resolved["create"] is False


# -- bad rows fail alone, with the name ----------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_rows_fail_alone_with_the_name(server: QdrantServer, transport: str) -> None:
    _create(server, "docs")
    rows = _rows(12, seed=5)
    table = _table(list(range(12)), rows)
    title = table.column("title_vec").to_pylist()
    tokens = table.column("tokens").to_pylist()
    title[3] = [0.5, 0.5, 0.5]  # wrong length under 'title'
    tokens[5] = [[0.5, 0.5], [0.5]]  # ragged under 'colbert'
    tokens[7] = []  # empty under 'colbert'
    title[9] = [float("nan"), 0.0, 0.0, 0.0]
    table = table.set_column(1, "title_vec", pa.array(title, pa.list_(pa.float32())))
    table = table.set_column(3, "tokens", pa.array(tokens, pa.list_(pa.list_(pa.float32()))))
    with connect(server.uri(transport, "docs"), on_error="report", **NAMED) as client:
        report = client.upsert(table)
    assert report.written == 8 and report.failed == 4
    reasons = {pid: f.error for f in report.failures for pid in f.ids}
    assert set(reasons) == {"3", "5", "7", "9"}
    assert "title" in reasons["3"] and "title" in reasons["9"]
    assert "colbert" in reasons["5"] and "colbert" in reasons["7"]
    good = [i for i in range(12) if i not in (3, 5, 7, 9)]
    stored = server.store.points("docs")
    assert sorted(stored) == good
    for i in good:
        assert stored[i].multi_vector("colbert").tobytes() == rows["tokens"][i].tobytes()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_rows_of_another_length_than_the_collections_fail_alone(server: QdrantServer, transport: str) -> None:
    """Dimensions learnt from the rows give way to the collection's: the rows that differ fail, the rest go."""
    _create(server, "docs", body=models.VectorParams(size=5, distance=models.Distance.COSINE))
    rows = _rows(4, seed=6)
    with connect(server.uri(transport, "docs"), on_error="report", **NAMED) as client:
        report = client.upsert(_table([1, 2, 3, 4], rows))
    assert report.written == 0 and report.failed == 4
    assert all("body" in f.error for f in report.failures)
    assert server.store.log == []


# -- request sizes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_requests_split_under_max_batch_bytes_with_every_vector_counted(
    server: QdrantServer, transport: str
) -> None:
    _create(
        server,
        "big",
        title=models.VectorParams(size=64, distance=models.Distance.COSINE),
        body=models.VectorParams(size=64, distance=models.Distance.COSINE),
        colbert=models.VectorParams(size=32, distance=models.Distance.COSINE, multivector_config=MAX_SIM),
    )
    rows = _rows(60, seed=7, dims=(64, 64, 32))
    limit = 20_000
    with connect(server.uri(transport, "big"), max_batch_bytes=limit, batch_size=1000, **NAMED) as client:
        report = client.upsert(_table(list(range(60)), rows))
    assert report.ok and report.written == 60
    sizes = [entry.size for entry in server.store.log]
    assert len(sizes) > 3 and max(sizes) <= limit, sizes
    _assert_exact(_read_back(server, transport, "big", list(range(60))), list(range(60)), rows)


def test_clear_checks_the_target_by_its_names_then_empties_it(server: QdrantServer) -> None:
    official = server.client()
    official.create_collection(
        "cleared", vectors_config={"title": models.VectorParams(size=4, distance=models.Distance.COSINE)}
    )
    table = pa.table(
        {"id": [1, 2], "title_vec": pa.array([[1.0, 2, 3, 4], [1.0, 0, 0, 1]], pa.list_(pa.float32()))}
    )
    with connect(server.grpc_uri("cleared"), vector_columns="title:title_vec") as client:
        assert client.upsert(table).written == 2
        assert "every point" in client.clear()
    assert official.count("cleared").count == 0
    # a write whose names the collection lacks clears nothing: the names are checked first
    with (
        connect(server.grpc_uri("cleared"), vector_columns="body:title_vec") as client,
        pytest.raises(ConfigError, match="body"),
    ):
        client.clear()
    official.close()
