"""Reading a mapping: the shortcuts ``DictReader.read_record`` takes for the usual row (the id's key, a
float32 vector taken as it is, no metadata when every key is a column's) give what the general rules
give (``read_id``, ``float32_vector``, the metadata of every other key), for any row and any options."""

from __future__ import annotations

import enum
import uuid
from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis import given, settings

from vectordb.connector.rows.dicts import DictReader, Refused, Row
from vectordb.connector.rows.floats import float32_vector, vector_problem
from vectordb.connector.rows.ops import DeleteMark

ids = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.text(max_size=5).map(np.str_),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.uuids(),
    st.uuids().map(lambda u: u.bytes),
    st.integers(0, 2**63 - 1).map(np.int64),
    st.floats(allow_nan=False),
    st.just(b"short"),
)
vectors = st.one_of(
    st.none(),
    st.lists(st.floats(-10, 10, width=32), min_size=1, max_size=4),
    st.lists(st.floats(-10, 10, width=32), min_size=1, max_size=4).map(lambda v: np.array(v, np.float32)),
    st.lists(st.floats(-10, 10), min_size=1, max_size=4).map(np.array),  # float64: converted
    st.just(np.ones((2, 2), np.float32)),  # 2-d: flattened
    st.just(np.ones(3, np.float32)[::2]),  # strided 1-d float32: taken as it is
    st.just("abc"),
)
extra_keys = st.dictionaries(
    st.sampled_from(["genre", "year", "namespace", "op", "metadata"]),
    st.none() | st.integers(0, 3) | st.just("delete") | st.just({"k": 1}) | st.just("{bad"),
    max_size=3,
)


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    record: dict[str, Any] = draw(extra_keys)
    if draw(st.booleans()):
        record["id"] = draw(ids)
    if draw(st.booleans()):
        record["values"] = draw(vectors)
    return record


readers = st.builds(
    DictReader,
    id_from=st.sampled_from([(), ("genre",), ("genre", "year")]),
    metadata_columns=st.sampled_from([None, ("genre",), ()]),
    op_key=st.sampled_from([None, "op"]),
    namespace=st.sampled_from([None, "ns"]),
)


def by_the_rules(reader: DictReader, record: dict[str, Any]) -> Row | Refused:
    """The row as the general rules read it."""
    row_id = reader.read_id(record)
    if not (row_id is None or type(row_id) is str or type(row_id) is int or type(row_id) is bool):
        return Refused(row_id, f"id {row_id!r} is neither a string nor an integer")
    op = record.get("op") if reader.op_key else None
    if op is not None and op != "delete" and op != "upsert":
        return reader.read_record(record)  # op rules: not what the shortcuts change
    namespace = record.get(reader.namespace_key)
    namespace = reader.namespace if namespace is None else namespace  # null: the write's, as a missing one
    if op == "delete":
        return Row(row_id, None, None, DeleteMark(), namespace)
    given = record.get(reader.vector_column)
    vector = None
    if given is not None and not (isinstance(given, str) and not given.strip()):  # blank text: no vector
        vector = float32_vector(given)
        if vector is None:
            # a text names its column, as Arrow's reader does
            named = f"column {reader.vector_column!r}: " if isinstance(given, str) else ""
            return Refused(row_id, named + vector_problem(given))
    metadata = reader._metadata(record)
    if metadata is None:
        return Refused(row_id, "metadata is not a JSON object")
    return Row(row_id, vector, None, metadata, namespace)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b)
        )
    if isinstance(a, tuple) and isinstance(b, tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@settings(max_examples=600, deadline=None)
@given(reader=readers, record=records())
def test_a_row_reads_as_the_rules_say(reader: DictReader, record: dict[str, Any]) -> None:
    assert same(reader.read_record(record), by_the_rules(reader, record))


def test_the_usual_row_keeps_its_vector_and_has_no_metadata() -> None:
    vector = np.ones(4, np.float32)
    row = DictReader(op_key="op").read_record({"id": uuid.UUID(int=1), "values": vector})
    assert (
        type(row) is Row and row.vector is vector and row.metadata == {} and row.id == str(uuid.UUID(int=1))
    )


class Kind(str, enum.Enum):  # noqa: UP042  # the older spelling, whose str() is not its value
    DOC = "doc-1"


def test_an_id_of_a_str_subclass_is_its_text() -> None:
    """numpy's ``str_`` (ids taken from a numpy array) and a ``str`` enum's value: a plain ``str``."""
    reader = DictReader()
    for row_id, text in ((np.array(["n1"])[0], "n1"), (Kind.DOC, "doc-1")):
        row = reader.read_record({"id": row_id, "values": [1.0, 2.0]})
        assert type(row) is Row and type(row.id) is str and row.id == text, row
