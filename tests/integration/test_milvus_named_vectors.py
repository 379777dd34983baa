"""Named dense vectors into Milvus Lite (option ``vector_columns``): a FloatVector field per name, read back
exactly with pymilvus; the existing collection checked per name before any row; multi-vectors refused with
the reason (Milvus Lite's version)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.milvus import Layout, MilvusBackend, encode_upsert
from vectordb.connector.backends.milvus.schema import encode_schema
from vectordb.connector.client import Client, resolve_options
from vectordb.connector.rows import RowBatch

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

NAMES = {"title": "title_vec", "body": "body_vec"}
DIMS = {"title": 8, "body": 5}


def matrices(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal((n, dim), dtype=np.float32) for name, dim in DIMS.items()}


def arrow_rows(ids: list[str], vectors: dict[str, np.ndarray], **extra: Any) -> pa.Table:
    columns: dict[str, Any] = {"id": ids}
    for name, column in NAMES.items():
        matrix = vectors[name]
        columns[column] = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])
    return pa.table({**columns, **extra})


def stored(server: LiteServer, collection: str) -> dict[str, dict[str, Any]]:
    server.client.load_collection(collection)
    rows = server.client.query(collection, filter='id != ""', output_fields=["*"], limit=16_384)
    return {row["id"]: row for row in rows}


def as_f32(values: Any) -> bytes:
    return np.asarray(values, dtype=np.float32).tobytes()


def make_collection(server: LiteServer, name: str, fields: dict[str, int]) -> None:
    """A collection made by pymilvus: VarChar key ``id``, a FloatVector field per entry, ``extra`` VarChar."""
    from pymilvus import DataType

    client = server.client
    schema = client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("extra", DataType.VARCHAR, max_length=64, nullable=True)
    for field, dim in fields.items():
        schema.add_field(field, DataType.FLOAT_VECTOR, dim=dim)
    index = client.prepare_index_params()
    for field in fields:
        index.add_index(field, index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=index)


def test_create_makes_a_field_and_an_index_per_name_and_reads_back_exactly(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    vectors = matrices(300)
    ids = [f"r{i}" for i in range(300)]
    with connect(
        milvus_lite.uri, collection=collection_name, create=True, vector_columns=NAMES, metric="euclidean"
    ) as client:
        report = client.upsert(arrow_rows(ids, vectors, n=list(range(300))))
    assert report.ok and report.written == 300
    fields = {f["name"]: f for f in milvus_lite.client.describe_collection(collection_name)["fields"]}
    assert {name: int(fields[name]["type"]) for name in DIMS} == {"title": 101, "body": 101}
    assert {name: fields[name]["params"]["dim"] for name in DIMS} == DIMS
    assert "vector" not in fields
    assert sorted(milvus_lite.client.list_indexes(collection_name)) == ["body", "title"]
    metric = milvus_lite.client.describe_index(collection_name, "title")["metric_type"]
    assert metric == "L2"
    got = stored(milvus_lite, collection_name)
    assert len(got) == 300
    for i, row_id in enumerate(ids):
        for name in DIMS:
            assert as_f32(got[row_id][name]) == vectors[name][i].tobytes(), (row_id, name)
        assert got[row_id]["n"] == i


def test_upsert_keeps_the_last_of_an_id_and_deletes_work_in_named_mode(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    first, second = matrices(4, seed=1), matrices(4, seed=2)
    options = {"collection": collection_name, "create": True, "vector_columns": NAMES, "op_column": "op"}
    with connect(milvus_lite.uri, **options) as client:
        client.upsert(arrow_rows(["a", "b", "c", "d"], first, op=["upsert"] * 4))
        # the same id twice in one write: the last occurrence wins
        twice = {name: np.stack([m[0], m[1]]) for name, m in second.items()}
        assert client.write(arrow_rows(["a", "a"], twice, op=["upsert", "upsert"])).ok
        client.write([{"id": "b", "op": "delete"}, {"id": "missing", "op": "delete"}])
        mixed = {name: np.stack([m[2], m[3]]) for name, m in second.items()}
        report = client.write(arrow_rows(["c", "d"], mixed, op=["delete", "upsert"]))
        assert report.ok
    got = stored(milvus_lite, collection_name)
    assert sorted(got) == ["a", "d"]
    for name in DIMS:
        assert as_f32(got["a"][name]) == second[name][1].tobytes()
        assert as_f32(got["d"][name]) == second[name][3].tobytes()


def test_dict_rows_learn_each_dimension_from_the_rows(milvus_lite: LiteServer, collection_name: str) -> None:
    vectors = matrices(20, seed=3)
    records = [
        {"id": f"d{i}", "title_vec": vectors["title"][i], "body_vec": vectors["body"][i].tolist(), "k": "x"}
        for i in range(20)
    ]
    with connect(milvus_lite.uri, collection=collection_name, create=True, vector_columns=NAMES) as client:
        assert client.upsert(records).ok
    got = stored(milvus_lite, collection_name)
    for i in range(20):
        for name in DIMS:
            assert as_f32(got[f"d{i}"][name]) == vectors[name][i].tobytes()
        assert got[f"d{i}"]["k"] == "x"


def test_an_existing_collection_is_written_by_field_name(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    make_collection(milvus_lite, collection_name, {"body": 5, "title": 8})
    vectors = matrices(10, seed=4)
    with connect(milvus_lite.uri, collection=collection_name, vector_columns=NAMES) as client:
        report = client.upsert(arrow_rows([f"e{i}" for i in range(10)], vectors, extra=["x"] * 10))
    assert report.ok
    got = stored(milvus_lite, collection_name)
    for i in range(10):
        for name in DIMS:
            assert as_f32(got[f"e{i}"][name]) == vectors[name][i].tobytes()
        assert got[f"e{i}"]["extra"] == "x"


@pytest.mark.parametrize(
    ("fields", "options", "message"),
    [
        (
            {"title": 8},
            {},
            r"option vector_columns: name 'body': milvus collection '\w+' has no field 'body', where a "
            r"FloatVector field is needed \(its FloatVector fields: title\)",
        ),
        (
            {"title": 8, "body": 6},
            {"vector_dimensions": "title:8,body:5"},
            r"option vector_dimensions: name 'body': field 'body' of milvus collection '\w+' has dim 6, the "
            r"write's vectors have 5",
        ),
        (
            {"title": 8, "body": 5},
            {"vector_columns": {"title": "title_vec", "extra": "body_vec"}},
            r"name 'extra': milvus collection '\w+' has a field of type VarChar 'extra'",
        ),
        (
            {"title": 8, "third": 2},
            {"vector_columns": {"title": "title_vec"}},
            r"also requires FloatVector field 'third', which no name fills",
        ),
    ],
)
def test_an_existing_collection_is_checked_per_name_before_any_row(
    milvus_lite: LiteServer,
    collection_name: str,
    fields: dict[str, int],
    options: dict[str, Any],
    message: str,
) -> None:
    make_collection(milvus_lite, collection_name, fields)
    raw = {"uri": milvus_lite.uri, "collection": collection_name, "vector_columns": NAMES, **options}
    with pytest.raises(ConfigError, match=message):
        Client(resolve_options(raw)).prepare_target()  # a job's driver
    if "vector_dimensions" not in options:  # one process: the rows' dimensions are checked before sending
        with pytest.raises(ConfigError, match=message), connect(**raw) as client:
            client.upsert(arrow_rows(["x"], matrices(1)))
    milvus_lite.client.load_collection(collection_name)
    assert milvus_lite.client.query(collection_name, filter='id != ""', output_fields=["id"]) == []


@pytest.mark.parametrize("stated", [{}, {"vector_dimensions": {"title": 8}}])
def test_rows_of_another_dimension_than_the_field_fail_alone(
    milvus_lite: LiteServer, collection_name: str, stated: dict[str, Any]
) -> None:
    """No dimension stated for 'body': the field's dim is the write's, as the single vector's is. Most
    rows' 'body' is 5 long where the field is 6: those rows fail alone, and the row that fits is written
    (the dimension the rows gave is no statement to refuse the whole write for)."""
    make_collection(milvus_lite, collection_name, {"title": 8, "body": 6})
    vectors = matrices(3)
    body = [row.tolist() for row in vectors["body"]]
    body[2] = body[2] + [0.5]  # the one row of the field's dim
    table = pa.table(
        {
            "id": ["x", "y", "z"],
            "title_vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors["title"].reshape(-1)), 8),
            "body_vec": pa.array(body, pa.list_(pa.float32())),
        }
    )
    options = {"collection": collection_name, "vector_columns": NAMES, "on_error": "report", **stated}
    with connect(milvus_lite.uri, **options) as client:
        report = client.write(table)
    assert report.written == 1
    assert {f.ids: f.error for f in report.failures} == {
        ("x", "y"): "vector 'body' has 5 dimensions; expected 6"
    }
    got = stored(milvus_lite, collection_name)
    assert sorted(got) == ["z"] and as_f32(got["z"]["body"]) == np.asarray(body[2], np.float32).tobytes()


def test_a_stated_dimension_the_field_contradicts_stops_the_write_before_any_row(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    make_collection(milvus_lite, collection_name, {"title": 8, "body": 6})
    message = r"option vector_dimensions: name 'body': .* has dim 6, the write's vectors have 5"
    options = {"collection": collection_name, "vector_columns": NAMES, "vector_dimensions": {"body": 5}}
    with pytest.raises(ConfigError, match=message), connect(milvus_lite.uri, **options) as client:
        client.upsert(arrow_rows(["x", "y"], matrices(2)))
    assert stored(milvus_lite, collection_name) == {}


def test_bad_rows_fail_alone_by_name_and_dead_letters_carry_the_whole_row(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    vectors = matrices(6, seed=5)
    title = [vectors["title"][i].tolist() for i in range(6)]
    body: list[Any] = [vectors["body"][i].tolist() for i in range(6)]
    title[1] = title[1][:7]  # wrong length under 'title'
    body[3] = None  # no 'body'
    body[4] = [float("nan")] * 5
    table = pa.table(
        {
            "id": [f"b{i}" for i in range(6)],
            "title_vec": pa.array(title, pa.list_(pa.float32())),
            "body_vec": pa.array(body, pa.list_(pa.float32())),
            "note": [f"n{i}" for i in range(6)],
        }
    )
    options = {"collection": collection_name, "create": True, "vector_columns": NAMES, "on_error": "report"}
    options["vector_dimensions"] = DIMS
    with connect(milvus_lite.uri, **options) as client:
        report = client.upsert(table)
        letters = client.dead_letters(table, report).to_pylist()
    assert report.written == 3 and report.failed == 3
    reasons = {f.ids[0]: f.error for f in report.failures}
    assert "'title'" in reasons["b1"] and "'body'" in reasons["b3"] and "'body'" in reasons["b4"]
    assert sorted(stored(milvus_lite, collection_name)) == ["b0", "b2", "b5"]
    by_id = {letter["id"]: letter for letter in letters}
    assert sorted(by_id) == ["b1", "b3", "b4"]
    assert by_id["b1"]["title_vec"] == pytest.approx(title[1]) and by_id["b1"]["note"] == "n1"
    assert by_id["b3"]["body_vec"] is None and by_id["b3"]["title_vec"] == pytest.approx(title[3])


def test_multi_vectors_are_refused_naming_milvus_lites_version() -> None:
    with pytest.raises(ConfigError) as caught:
        connect("milvus://127.0.0.1:1/docs", vector_columns="title:t", multi_vector_columns="colbert:c")
    message = str(caught.value)
    assert message.startswith("option multi_vector_columns: milvus does not store multi-vectors: ")
    assert "ArrayOfVector" in message and "Milvus Lite 3.2" in message


def test_vector_field_is_refused_beside_named_vectors() -> None:
    with pytest.raises(ConfigError, match="option vector_field: names the field of the single vector"):
        connect("milvus://127.0.0.1:1/docs", vector_columns="title:t", vector_field="emb")


@pytest.mark.parametrize("name", ["id", "sparse", "9lives", "has space"])
def test_create_refuses_names_milvus_cannot_make_a_field_of(
    milvus_lite: LiteServer, collection_name: str, name: str
) -> None:
    raw = {
        "uri": milvus_lite.uri,
        "collection": collection_name,
        "create": "true",
        "vector_columns": {name: "v"},
        "vector_dimensions": {name: 4},
    }
    with pytest.raises(ConfigError, match=f"option vector_columns: name '{name}'"):
        Client(resolve_options(raw)).prepare_target()
    assert not milvus_lite.client.has_collection(collection_name)


def test_named_upsert_bytes_parse_like_pymilvus() -> None:
    from pymilvus import DataType
    from pymilvus.client.prepare import Prepare
    from pymilvus.grpc_gen import milvus_pb2

    vectors = matrices(3, seed=6)
    batch = RowBatch(
        ids=["a", "b", "c"], vectors=None, metadata=[{"k": 1}, {}, {"k": 3}], named_vectors=dict(vectors)
    )
    layout = Layout(collection="c", dim=None, vector="", named=(("title", 8), ("body", 5)))
    ours = encode_upsert(batch, layout)
    fields_info = [
        {"name": "id", "type": DataType.VARCHAR, "params": {"max_length": 64}, "is_primary": True},
        {"name": "title", "type": DataType.FLOAT_VECTOR, "params": {"dim": 8}},
        {"name": "body", "type": DataType.FLOAT_VECTOR, "params": {"dim": 5}},
    ]
    entities = [
        {"id": row_id, "title": vectors["title"][i].tolist(), "body": vectors["body"][i].tolist(), **meta}
        for i, (row_id, meta) in enumerate(zip(batch.ids, batch.metadata or [], strict=True))
    ]
    theirs = Prepare.row_upsert_param("c", entities, "", fields_info, enable_dynamic=True)
    assert milvus_pb2.UpsertRequest.FromString(ours.body) == theirs
    assert ours.body == theirs.SerializeToString(deterministic=True)
    # row sizes count every name's floats
    backend = MilvusBackend(resolve_options({"uri": "milvus://h/c", "vector_columns": "title:t,body:b"}))
    assert (backend.row_bytes(batch) >= (8 + 5) * 4).all()


def test_create_schema_has_a_float_vector_field_per_name() -> None:
    from pymilvus.grpc_gen import schema_pb2

    schema = schema_pb2.CollectionSchema.FromString(
        encode_schema("docs", None, key_int64=True, sparse=False, named={"title": 8, "body": 5})
    )
    vectors = {
        f.name: dict((p.key, p.value) for p in f.type_params) for f in schema.fields if f.data_type == 101
    }
    assert vectors == {"title": {"dim": "8"}, "body": {"dim": "5"}}
    assert [f.name for f in schema.fields if f.is_primary_key] == ["id"]


def test_a_job_driver_makes_the_collection_when_the_key_type_is_stated(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """With ``id_type`` and every dimension stated the driver makes the collection; its workers then write."""
    raw = {
        "uri": milvus_lite.uri,
        "collection": collection_name,
        "create": "true",
        "id_type": "int64",
        "vector_columns": NAMES,
        "vector_dimensions": DIMS,
    }
    resolved = Client(resolve_options(raw)).prepare_target().resolved
    assert resolved["vector_dimensions"] == DIMS
    fields = {f["name"]: f for f in milvus_lite.client.describe_collection(collection_name)["fields"]}
    assert int(fields["id"]["type"]) == 5 and {fields[n]["params"]["dim"] for n in DIMS} == {8, 5}
    vectors = matrices(3, seed=8)
    worker = Client(resolve_options({**raw, **resolved}))
    with worker:
        table = arrow_rows(["1", "2", "3"], vectors).set_column(0, "id", pa.array([1, 2, 3]))
        assert worker.upsert(table).ok
    milvus_lite.client.load_collection(collection_name)
    rows = milvus_lite.client.query(collection_name, filter="id > 0", output_fields=["*"])
    assert {row["id"]: as_f32(row["body"]) for row in rows} == {
        i + 1: vectors["body"][i].tobytes() for i in range(3)
    }


def test_a_metadata_column_named_as_a_vector_field_fails_its_rows_naming_the_clash(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    """A ``title`` text column beside the named vector ``title``: Milvus took it for the vector field and
    refused the requests without naming a row (a systemic stop at 300 rows)."""
    vectors = matrices(300)
    ids = [f"r{i}" for i in range(300)]
    titles = [f"t{i}" if i % 3 == 0 else None for i in range(300)]  # a third of the rows carry one
    with connect(
        milvus_lite.uri, collection=collection_name, create=True, vector_columns=NAMES, on_error="report"
    ) as client:
        report = client.upsert(arrow_rows(ids, vectors, title=titles))
    assert (report.written, report.failed) == (200, 100), report
    assert {f.error for f in report.failures} == {
        f"metadata key 'title' is the name of collection {collection_name}'s field 'title' (its key or a "
        "vector): rename the column, or leave it out (option metadata_columns)"
    }
    assert sorted(stored(milvus_lite, collection_name)) == sorted(
        i for i, t in zip(ids, titles, strict=True) if t is None
    )
