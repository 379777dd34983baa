"""Qdrant's target checks for writes with several vectors a row, against the Qdrant-protocol test servers
and read back with qdrant-client: a write that leaves out one of the collection's vectors is refused (an upsert
replaces a point whole, so it would erase them), a dimension of 0 makes no collection, a vector named like
the sparse vector is refused, and a delete before the collection is made deletes nothing and succeeds."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from qdrant_client import models

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.backends.qdrant import QdrantBackend, QdrantOptions
from vectordb.connector.client import resolve_options
from vectordb.connector.errors import ConfigError, NotFound
from vectordb.connector.options import parse_options
from vectordb.connector.planner import DriverPlan
from vectordb.connector.rows import DELETE
from vectordb.connector.transports.base import WireReply, WireRequest

qdrant_server = qdrant_grpc.qdrant_server  # the fixture

pytestmark = pytest.mark.timeout(60)
TRANSPORTS = ["grpc", "rest"]
F32 = pa.list_(pa.float32())
SPARSE = pa.struct([("indices", pa.list_(pa.int32())), ("values", pa.list_(pa.float32()))])
NAMED: dict[str, Any] = {
    "vector_columns": {"title": "t"},
    "multi_vector_columns": {"colbert": "tok"},
    "sparse_column": "sp",
}


def _row(title: list[float], tokens: list[list[float]] | None = None, sparse: bool = True) -> pa.Table:
    columns: dict[str, Any] = {"id": [1], "t": pa.array([title], F32)}
    if tokens is not None:
        columns["tok"] = pa.array([tokens], pa.list_(F32))
    if sparse:
        columns["sp"] = pa.array([{"indices": [3], "values": [0.5]}], SPARSE)
    return pa.table(columns)


def _stored(server: QdrantServer, collection: str) -> Any:
    client = server.client()
    try:
        return client.retrieve(collection, [1], with_vectors=True)[0].vector
    finally:
        client.close()


FULL = {
    "title": [1.0, 2.0, 3.0, 4.0],
    "colbert": [[1.0, 2.0], [3.0, 4.0]],
    "sp": models.SparseVector(indices=[3], values=[0.5]),
}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("options", "data", "left_out"),
    [
        pytest.param(
            {"vector_columns": {"title": "t"}, "sparse_column": "sp"},
            _row([9, 9, 9, 9]),
            "'colbert' (multi_vector_columns)",
            id="multi",
        ),
        pytest.param(
            {"multi_vector_columns": {"colbert": "tok"}, "sparse_column": "sp"},
            pa.table({"id": [1], "tok": pa.array([[[9, 9]]], pa.list_(F32))}).append_column(
                "sp", pa.array([{"indices": [3], "values": [0.5]}], SPARSE)
            ),
            "'title' (vector_columns)",
            id="dense",
        ),
        pytest.param(
            {"vector_columns": {"title": "t"}, "multi_vector_columns": {"colbert": "tok"}},
            _row([9, 9, 9, 9], [[9, 9]], sparse=False),
            "'sp' (sparse_column)",
            id="sparse",
        ),
    ],
)
def test_a_write_leaving_out_a_vector_is_refused_and_erases_nothing(
    qdrant_server: QdrantServer, transport: str, options: dict[str, Any], data: pa.Table, left_out: str
) -> None:
    uri = qdrant_server.uri(transport, "docs")
    full = {**NAMED, "sparse_vector_name": "sp", "vector_dimensions": {"title": 4, "colbert": 2}}
    with connect(uri, create=True, **full) as client:
        assert client.upsert(_row([1, 2, 3, 4], [[1, 2], [3, 4]])).ok
    assert _stored(qdrant_server, "docs") == FULL
    with (
        connect(uri, sparse_vector_name="sp", **options) as client,
        pytest.raises(ConfigError, match="also has the vector") as refused,
    ):
        client.upsert(data)
    assert left_out in str(refused.value)
    assert "Qdrant replaces a point whole on upsert" in str(refused.value)
    assert _stored(qdrant_server, "docs") == FULL  # before the fix: the left-out vector was gone, report OK


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_zero_dimension_makes_no_collection(qdrant_server: QdrantServer, transport: str) -> None:
    options = parse_options(
        {"uri": qdrant_server.uri(transport, "c"), "create": True, **NAMED}, QdrantOptions
    )
    backend = QdrantBackend(options)
    transport_ = backend.open_transport()
    with pytest.raises(ConfigError, match="option multi_vector_columns: vector 'colbert' has dimension 0"):
        backend.check_named_target(transport_, {"title": 2, "colbert": 0})
    client = qdrant_server.client()
    # before the fix: 'c' was made with 'title' only, and every later write naming 'colbert' refused
    assert not client.collection_exists("c")
    client.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"vector_columns": {"sparse": "t"}, "vector_dimensions": {"sparse": 2}}, "vector_columns"),
        ({"multi_vector_columns": {"sparse": "t"}}, "multi_vector_columns"),
        ({"vector_name": "sparse", "vector_column": "t"}, "vector_name"),
    ],
)
def test_a_vector_named_as_the_sparse_vector_is_refused(
    qdrant_server: QdrantServer, transport: str, options: dict[str, Any], option: str
) -> None:
    table = pa.table({"id": [1], "t": pa.array([[1, 2]], F32)}).append_column(
        "sp", pa.array([{"indices": [3], "values": [1.0]}], SPARSE)
    )
    clash = f"options {option} and sparse_vector_name: both name the vector 'sparse'"
    with (
        pytest.raises(ConfigError, match=clash),
        connect(qdrant_server.uri(transport, "c"), create=True, sparse_column="sp", **options) as client,
    ):
        client.upsert(table)  # before the fix: written with one of the two lost, or every row refused
    client = qdrant_server.client()
    assert not client.collection_exists("c")
    client.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_vector_named_sparse_is_written_without_a_sparse_column(
    qdrant_server: QdrantServer, transport: str
) -> None:
    """The default ``sparse_vector_name`` is "sparse": it clashes only when option sparse_column fills it."""
    with connect(
        qdrant_server.uri(transport, "c"),
        create=True,
        vector_columns={"sparse": "t"},
        vector_dimensions={"sparse": 2},
    ) as client:
        assert client.upsert(pa.table({"id": [1], "t": pa.array([[1, 2]], F32)})).ok
    assert _stored(qdrant_server, "c") == {"sparse": [1.0, 2.0]}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_delete_before_the_collection_is_made_deletes_nothing(
    qdrant_server: QdrantServer, transport: str
) -> None:
    """create=true with no vector_dimensions: the collection is made by the first upsert, once every name's
    dimension is known; deletes before it find no point, as a delete of a missing id does."""
    uri = qdrant_server.uri(transport, "docs")
    named = {"vector_columns": {"title": "t"}, "multi_vector_columns": {"colbert": "tok"}}
    with connect(uri, create=True, op_column="op", on_error="report", **named) as client:
        report = client.write(pa.table({"id": [7], "op": ["delete"]}))
        assert report.ok and report.deleted == 1, report  # before the fix: NotFound, the write stopped
        assert client.delete([8]).deleted == 1
        assert "does not exist yet" in client.clear()
        upserts = _row([1, 2, 3, 4], [[1, 2], [3, 4]], sparse=False).append_column("op", pa.array(["upsert"]))
        assert client.write(upserts).ok
        assert client.delete([1]).deleted == 1  # the collection now exists: a real delete
    reader = qdrant_server.client()
    assert sorted(reader.get_collection("docs").config.params.vectors) == ["colbert", "title"]
    assert reader.count("docs", exact=True).count == 0
    reader.close()


@pytest.mark.parametrize("status", ["NOT_FOUND", 404])
def test_a_delete_not_found_about_anything_else_stays_fatal(status: int | str) -> None:
    """Only Qdrant's "Collection `docs` doesn't exist" reads as nothing deleted; another 404 (a proxy's, a wrong
    path) stops the write as before."""
    options = parse_options({"uri": "qdrant://127.0.0.1:6333/docs", "create": True, **NAMED}, QdrantOptions)
    backend = QdrantBackend(options)
    backend._awaiting_create = True  # what check_named_target leaves while a dimension is unknown
    request = WireRequest("POST /collections/docs/points/delete", b"{}", answers=frozenset({status}))
    batch: Any = type("Batch", (), {"op": DELETE, "__len__": lambda self: 2})()
    missing = b'{"status":{"error":"Not found: Collection `docs` doesn\'t exist!"},"time":0.0}'
    assert backend.outcome_of(batch, request, WireReply(missing, status=status)).written == 2
    with pytest.raises(NotFound):
        backend.outcome_of(batch, request, WireReply(b"404 page not found", status=status))


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("vectors", "options", "left_out"),
    [
        pytest.param(
            {
                "title": models.VectorParams(size=2, distance=models.Distance.COSINE),
                "colbert": models.VectorParams(
                    size=2,
                    distance=models.Distance.DOT,
                    multivector_config=models.MultiVectorConfig(
                        comparator=models.MultiVectorComparator.MAX_SIM
                    ),
                ),
            },
            {"vector_name": "title"},
            "option vector_name: collection 'docs' also has the vector(s) 'colbert' (multi_vector_columns)",
            id="named",
        ),
        pytest.param(
            models.VectorParams(size=2, distance=models.Distance.COSINE),
            {},
            "option vector_column: collection 'docs' also has the vector(s) 'sp' (sparse_column)",
            id="unnamed",
        ),
    ],
)
def test_an_upsert_of_the_one_vector_leaving_out_others_is_refused_and_deletes_are_not(
    qdrant_server: QdrantServer, transport: str, vectors: Any, options: dict[str, Any], left_out: str
) -> None:
    """Option vector_name (or the unnamed vector) into a collection with other vectors: its upserts would erase
    them, so they are a ConfigError (without op_column when the target is checked, with it at the first upsert
    batch); its deletes erase no vector and go on where the write says it may delete (op_column)."""
    reader = qdrant_server.client()
    reader.create_collection(
        "docs", vectors_config=vectors, sparse_vectors_config={"sp": models.SparseVectorParams()}
    )
    dense = {"title": [0.6, 0.8], "colbert": [[1.0, 2.0]]} if options else {"": [0.6, 0.8]}
    stored = {**dense, "sp": models.SparseVector(indices=[3], values=[0.5])}
    reader.upsert("docs", points=[models.PointStruct(id=i, vector=stored) for i in (1, 2)])
    before = reader.retrieve("docs", [1], with_vectors=True)[0].vector
    uri = qdrant_server.uri(transport, "docs")
    for op_column in (None, "op"):
        with connect(uri, vector_column="t", op_column=op_column, **options) as client:
            with pytest.raises(ConfigError, match="also has the vector") as refused:
                client.upsert(pa.table({"id": [1], "t": pa.array([[0.0, 1.0]], F32), "op": ["upsert"]}))
            assert left_out in str(refused.value)
    with connect(uri, vector_column="t", op_column="op", **options) as client:
        assert client.delete([2]).deleted == 1
    # before the fix: written, and the point had lost 'colbert' and 'sp'
    assert reader.retrieve("docs", [1], with_vectors=True)[0].vector == before
    assert reader.count("docs", exact=True).count == 1
    reader.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("vectors", "options", "blamed"),
    [
        pytest.param(
            {"title": models.VectorParams(size=2, distance=models.Distance.COSINE)},
            {"vector_name": "title"},
            "option vector_name",
            id="named",
        ),
        pytest.param(
            models.VectorParams(size=2, distance=models.Distance.COSINE),
            {},
            "option vector_column",
            id="unnamed",
        ),
    ],
)
def test_the_driver_refuses_an_upsert_of_the_one_vector_leaving_out_others(
    qdrant_server: QdrantServer, transport: str, vectors: Any, options: dict[str, Any], blamed: str
) -> None:
    """What Spark's driver runs before any task (``DriverPlan.ask_target``) refuses a write of the one dense
    vector into a collection that also has the sparse vector 'sp'. Before the fix it passed, and the first
    upsert batch on an executor raised the ConfigError, after the tasks had started. With op_column the
    write may only delete, so the driver lets it through (its upserts are refused at their first batch)."""
    reader = qdrant_server.client()
    reader.create_collection(
        "docs", vectors_config=vectors, sparse_vectors_config={"sp": models.SparseVectorParams()}
    )
    reader.close()
    raw = {"uri": qdrant_server.uri(transport, "docs"), "vector_column": "t", **options}
    with DriverPlan(resolve_options(raw)) as plan, pytest.raises(ConfigError) as refused:
        plan.ask_target()
    assert str(refused.value).startswith(
        f"{blamed}: collection 'docs' also has the vector(s) 'sp' (sparse_column)"
    )
    with DriverPlan(resolve_options({**raw, "op_column": "op"})) as plan:
        plan.ask_target()
