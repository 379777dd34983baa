"""The sink's parts without a pipeline: reading elements, batches, coders, dead letters, display data."""

from __future__ import annotations

import pickle
from typing import Any

import apache_beam as beam
import msgspec
import numpy as np
import pyarrow as pa
import pytest
from apache_beam.coders import registry
from apache_beam.ml.rag.types import Chunk, Content, Embedding
from apache_beam.transforms.display import DisplayData

from vectordb.beam import Row, RowCoder, VectorBatch, VectorBatchCoder, WriteToVectorDB
from vectordb.beam.batch import assemble
from vectordb.beam.elements import ElementReader, Refusal
from vectordb.connector.client import resolve_options
from vectordb.connector.report import BatchFailure
from vectordb.connector.rows import Columns, ColumnSpec
from vectordb.connector.rows.ops import DeleteMark


def read(element: Any, **options: Any) -> Row | Refusal:
    return ElementReader.from_options(resolve_options({"uri": "pinecone://127.0.0.1:1", **options})).read(
        element
    )


def test_dict_rows_follow_the_column_options() -> None:
    row = read({"id": 7, "values": [1, 2], "metadata": '{"a": 1}', "b": None, "c": "x", "namespace": "n"})
    assert isinstance(row, Row)
    assert row.id == 7 and row.vector.dtype == np.float32 and row.vector.tolist() == [1.0, 2.0]
    assert row.metadata == {"a": 1, "c": "x"} and row.namespace == "n"
    row = read({"k": "a", "emb": np.ones(3), "tenant": None, "x": 1, "y": 2}, id_column="k", vector_column="emb",
               namespace_column="tenant", metadata_columns="y")  # fmt: skip
    assert isinstance(row, Row)
    assert (row.id, row.metadata, row.namespace) == ("a", {"y": 2}, None)
    row = read({"id": "a", "values": [1.0]}, namespace="docs")
    assert isinstance(row, Row) and row.namespace == "docs"


def test_a_float32_vector_is_not_copied() -> None:
    vector = np.arange(4, dtype=np.float32)
    row = read({"id": "a", "values": vector})
    assert isinstance(row, Row) and row.vector is vector


def test_rag_items_and_beam_rows() -> None:
    item = Chunk(
        id="c1",
        index=2,
        content=Content(text="the text"),
        metadata={"src": "a.txt", "id": "not the id"},
        embedding=Embedding(dense_embedding=[0.5, 1.5], sparse_embedding=([1, 5], [0.1, 0.2])),
    )
    row = read(item)
    assert isinstance(row, Row)
    assert row.id == "c1" and row.vector.tolist() == [0.5, 1.5]
    assert row.sparse is not None and row.sparse[0].tolist() == [1, 5]
    assert row.metadata == {"id": "not the id", "src": "a.txt", "content": "the text"}
    no_text = ElementReader(content_key=None).read(item)
    assert isinstance(no_text, Row) and no_text.metadata == {"id": "not the id", "src": "a.txt"}
    row = read(beam.Row(id="r", values=[1.0], lang="en"))
    assert isinstance(row, Row) and (row.id, row.metadata) == ("r", {"lang": "en"})


def test_unreadable_elements_are_refused_with_the_reason() -> None:
    cases = {
        "vector is not a sequence of numbers": {"id": "a", "values": ["x"]},
        "sparse indices must be integers and values numbers": {
            "id": "a",
            "values": [1.0],
            "sparse_values": {"indices": ["q"], "values": [1.0]},
        },
        "metadata is not a JSON object": {"id": "a", "values": [1.0], "metadata": "[1, 2]"},
        "id 1.5 is neither a string nor an integer": {"id": 1.5, "values": [1.0]},
    }
    for reason, element in cases.items():
        refused = read(element)
        assert isinstance(refused, Refusal), reason
        assert refused.dead_letter["error"] == reason and refused.dead_letter["attempts"] == 0
    other = read(5)  # not an element the sink takes: refused, saying what it was
    assert isinstance(other, Refusal) and other.dead_letter["element"] == "5"
    assert "not int" in other.dead_letter["error"]


def rows(n: int, dim: int = 4) -> list[Row]:
    vectors = np.random.default_rng(n).standard_normal((n, dim)).astype(np.float32)
    return [
        Row(
            f"r{i}",
            None if i == 1 else vectors[i],
            (np.array([i, i + 3]), np.array([0.5, 1.0], np.float32)) if i % 2 else None,
            {"i": i} if i else {},
            "a" if i < 2 else "b",
        )
        for i in range(n)
    ]


def test_assemble_makes_one_buffer_that_the_client_reads_as_it_is() -> None:
    given = rows(5)
    batch = assemble(given)
    assert batch.flat.size == 16 and batch.nulls is not None and batch.nulls.tolist() == [0, 1, 0, 0, 0]
    assert batch.namespaces == ["a", "a", "b", "b", "b"] and batch.namespace is None
    columns = batch.for_client()
    assert isinstance(columns, Columns)
    assert columns.flat is batch.flat  # no copy on the way to the client
    assert columns.null_vector.tolist() == [False, True, False, False, False]
    assert columns.sparse is not None and columns.sparse[0] is None
    assert columns.sparse[1]["indices"].tolist() == [1, 4] and columns.sparse[1]["values"].tolist() == [
        0.5,
        1.0,
    ]
    assert columns.metadata is not None and columns.metadata[3] == {"i": 3}
    arrow = pa.RecordBatch.from_pydict({"id": ["x"], "values": [[1.0, 2.0]]})
    assert VectorBatch.of_arrow(arrow).for_client() is arrow


def test_coders_round_trip_and_beat_pickle() -> None:
    batch = assemble(rows(6))
    coder = registry.get_coder(VectorBatch)
    assert isinstance(coder, VectorBatchCoder)
    back = coder.decode(coder.encode(batch))
    for name in ("ids", "metadata", "namespace", "namespaces"):
        assert getattr(back, name) == getattr(batch, name)
    assert back.flat.tobytes() == batch.flat.tobytes() and back.offsets.tolist() == batch.offsets.tolist()
    assert back.nulls is not None and batch.nulls is not None and back.nulls.tolist() == batch.nulls.tolist()
    assert [None if s is None else s[0].tolist() for s in back.sparse or []] == [
        None if s is None else s[0].tolist() for s in batch.sparse or []
    ]
    arrow = VectorBatch.of_arrow(pa.RecordBatch.from_pydict({"id": ["x"], "values": [[1.0, 2.0]]}))
    decoded = coder.decode(coder.encode(arrow)).arrow
    assert decoded is not None and arrow.arrow is not None and decoded.equals(arrow.arrow)

    row_coder = registry.get_coder(Row)
    assert isinstance(row_coder, RowCoder)
    row = rows(4)[3]
    back_row = row_coder.decode(row_coder.encode(row))
    assert back_row.vector is not None and row.vector is not None
    assert (back_row.id, back_row.metadata, back_row.namespace) == (row.id, row.metadata, row.namespace)
    assert back_row.vector.tobytes() == row.vector.tobytes()
    listed = row._replace(vector=row.vector.tolist())
    assert len(row_coder.encode(row)) < len(pickle.dumps(listed, protocol=5)) / 2


def test_coders_keep_a_deletes_mark() -> None:
    """A delete's metadata is a ``DeleteMark``; written as a plain ``{}`` it decoded as an upsert without a
    vector, and the row failed as a null vector wherever a runner encodes (Flink, Dataflow)."""
    given = rows(4)
    given[2] = Row("r2", None, None, DeleteMark(), "b")
    given[3] = Row("r3", None, None, {}, "b")  # an upsert without metadata stays one
    back = VectorBatchCoder().decode(VectorBatchCoder().encode(assemble(given)))
    assert back.metadata is not None
    assert [type(m).__name__ for m in back.metadata] == ["dict", "dict", "DeleteMark", "dict"]
    row_coder = RowCoder()
    assert type(row_coder.decode(row_coder.encode(given[2])).metadata) is DeleteMark
    assert type(row_coder.decode(row_coder.encode(given[3])).metadata) is dict
    named = read({"id": "n", "op": "delete"}, vector_columns="a=a")
    assert (
        not isinstance(named, Refusal)
        and type(row_coder.decode(row_coder.encode(named)).metadata) is DeleteMark
    )


def test_dead_letters_carry_the_row_and_the_reason() -> None:
    batch = assemble(rows(4))
    failure = BatchFailure(
        ids=("r3", "r1"), positions=(3, 1), error="nope", error_type="Rejected", attempts=2
    )
    letters = batch.dead_letters([failure], ColumnSpec())
    assert [d["id"] for d in letters] == ["r3", "r1"]
    assert letters[0]["values"] == batch.flat[batch.offsets[3] : batch.offsets[4]].tolist()
    assert letters[0]["sparse_values"] == {"indices": [3, 6], "values": [0.5, 1.0]}
    assert letters[0]["metadata"] == {"i": 3} and letters[0]["namespace"] == "b"
    assert "values" not in letters[1]
    assert (letters[0]["error"], letters[0]["error_type"], letters[0]["attempts"]) == ("nope", "Rejected", 2)
    arrow = VectorBatch.of_arrow(pa.RecordBatch.from_pydict({"key": ["a", "b"], "values": [[1.0], [2.0]]}))
    letters = arrow.dead_letters(
        [BatchFailure(ids=("b",), positions=(1,), error="no")], ColumnSpec(id_column="key")
    )
    assert letters == [
        {"key": "b", "values": [2.0], "id": "b", "error": "no", "error_type": "Rejected", "retryable": False,
         "attempts": 0}
    ]  # fmt: skip


def display_values(items: Any) -> dict[str, Any]:
    return {item.key: item.value for item in DisplayData.create_from(items).items}


def test_display_data_names_the_target_without_the_credential() -> None:
    transform = WriteToVectorDB(
        "pinecone+grpc://127.0.0.1:5000", api_key="secret-key-123", namespace="docs", max_concurrency=8
    )
    shown = display_values(transform)
    assert shown["target"] == "pinecone+grpc://127.0.0.1:5000"
    assert shown["namespace"] == "docs" and shown["max_concurrency"] == 8 and shown["batching"] == "auto"
    assert "secret-key-123" not in repr(shown) and "secret-key-123" not in repr(transform)
    pipeline = beam.Pipeline()
    _ = pipeline | beam.Create([{"id": "a", "values": [1.0]}]) | transform
    proto = pipeline.to_runner_api()
    for component in proto.components.transforms.values():
        for item in component.display_data:
            assert b"secret-key-123" not in item.payload


def test_options_travel_pickled_and_resolve_once() -> None:
    transform = WriteToVectorDB("pinecone://127.0.0.1:1", batch_size="50", max_retries="2")
    assert transform.options.batch_size == 50 and transform.options.max_retries == 2
    copy = pickle.loads(pickle.dumps(transform.options))
    assert msgspec.structs.asdict(copy) == msgspec.structs.asdict(transform.options)


def test_vector_conversions() -> None:
    cases = {
        "ints": ([1, 2, 3], [1.0, 2.0, 3.0]),
        "beyond float32": ([1e39, 1.0], [float("inf"), 1.0]),  # the client refuses infinity by name
        "a tuple": ((0.1, 0.2), np.array([0.1, 0.2], np.float32).tolist()),
        "float64 numpy": (np.array([0.1, 0.2]), np.array([0.1, 0.2], np.float32).tolist()),
    }
    for name, (given, want) in cases.items():
        row = read({"id": "a", "values": given})
        assert isinstance(row, Row) and row.vector is not None, name
        assert row.vector.dtype == np.float32 and row.vector.tolist() == want, name
    nested = read({"id": "a", "values": [[1.0, 2.0], [3.0, 4.0]]})  # flattened, another vector: refused
    assert (
        isinstance(nested, Refusal) and nested.dead_letter["error"] == "vector is not a sequence of numbers"
    )
    flags = read({"id": "a", "values": [1, 2, True]})  # True is no 1.0
    assert isinstance(flags, Refusal) and flags.dead_letter["error"] == "vector is not a sequence of numbers"


def test_a_host_without_its_scheme_is_refused_where_the_pipeline_is_built(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vectordb.connector import ConfigError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="is not SCHEME://host"):
        WriteToVectorDB("my-index-abc.svc.pinecone.io", create=True)
    assert list(tmp_path.iterdir()) == []
