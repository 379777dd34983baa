"""RowCoder and VectorBatchCoder give back exactly what they were given: every row of the bad-input
catalogue (tests/badinput/cases.py), odd metadata values, and every kind of element the sink takes.

Runners that encode elements between steps (Flink, Prism, Dataflow; ``batching="unbounded"``, which every
streaming input takes) run these coders; the in-memory runners never do. A row the catalogue says fails
alone or is written crashed the pipeline there (an int beyond 64 bits, a non-text key or namespace), and
metadata values came back changed (a datetime re-zoned to UTC, a numpy datetime64 as an int, a float32
widened), so what the sink wrote depended on the runner.
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import math
import uuid
from collections import OrderedDict
from typing import Any

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.rag.types import Chunk, Content, Embedding

from tests.badinput.cases import CASES, V
from vectordb.beam import RowCoder, VectorBatchCoder
from vectordb.beam.batch import VectorBatch, assemble
from vectordb.beam.elements import ElementReader, NamedRow, Refusal, Row
from vectordb.connector.rows.ops import DeleteMark


class Colour(enum.IntEnum):
    RED = 1


class Text(str):
    pass


TZ = dt.timezone(dt.timedelta(hours=2))
# metadata values msgpack does not give back as they are, or cannot hold at all
ODD_VALUES: dict[str, Any] = {
    "aware datetime": dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=TZ),
    "naive datetime": dt.datetime(2024, 5, 6, 7, 8, 9),
    "date": dt.date(2024, 5, 6),
    "time": dt.time(7, 8, 9),
    "timedelta": dt.timedelta(days=1, seconds=5),
    "datetime64[ns]": np.datetime64("2024-01-02T03:04:05.000000000"),
    "datetime64[s]": np.datetime64("2024-01-02T03:04:05"),
    "float32 array": np.array([0.1], dtype=np.float32),
    "float32": np.float32(0.1),
    "float64": np.float64(0.1),
    "int64": np.int64(3),
    "bool_": np.bool_(True),
    "decimal": decimal.Decimal("10.25"),
    "uuid": uuid.UUID(int=5),
    "tuple": (1, 2),
    "set": {1, 2},
    "bytes": b"\x00\xff",
    "bytearray": bytearray(b"\x00"),
    "int 2^64": 2**64,
    "int -2^63-1": -(2**63) - 1,
    "int 2^70 in a list": [1, 2**70],
    "lone surrogate": "a\udc80b",
    "int enum": Colour.RED,
    "str subclass": Text("x"),
    "ordered dict": OrderedDict(a=1),
    "nested datetime": {"a": [{"at": dt.datetime(2024, 5, 6, tzinfo=TZ)}]},
    "nan": math.nan,
    "nested plain": {"a": [1, {"b": 2.5, "c": None}], "d": "x", "e": True},
}
ODD_KEYS: list[dict[Any, Any]] = [
    {1: "x"},
    {1.5: "x", None: "y", True: "z"},
    {(1, 2): "x"},
    {dt.date(2024, 5, 6): "x"},
    {decimal.Decimal(1): "x"},
]


def same(a: Any, b: Any) -> bool:
    """Equal and of one type all the way down (``==`` alone takes 1 for True, a re-zoned datetime for
    the same instant, a list for a tuple's equal)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return (
            list(a) == list(b)
            and all(same(k, j) for k, j in zip(a, b, strict=True))
            and all(same(a[k], b[k]) for k in a)
        )
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dt.datetime | dt.time):
        return a == b and a.utcoffset() == b.utcoffset() and repr(a) == repr(b)
    return bool(a == b) and repr(a) == repr(b)


def same_row(a: Row | NamedRow, b: Row | NamedRow) -> bool:
    return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))


def same_batch(a: VectorBatch, b: VectorBatch) -> bool:
    names = ("ids", "flat", "offsets", "nulls", "sparse", "metadata", "namespace", "namespaces")
    if a.columns is not None or b.columns is not None:
        assert a.columns is not None and b.columns is not None
        return (
            same(a.ids, b.ids)
            and same(a.namespace, b.namespace)
            and same(a.columns.metadata, b.columns.metadata)
        )
    return all(same(getattr(a, n), getattr(b, n)) for n in names)


def round_trip(row: Row | NamedRow) -> None:
    """The row through RowCoder, and in a batch of its own and beside a plain row through
    VectorBatchCoder, comes back exactly."""
    coder = RowCoder()
    back = coder.decode(coder.encode(row))
    assert same_row(back, row), (row, back)
    batch_coder = VectorBatchCoder()
    plain = Row("plain", np.array(V, dtype=np.float32), None, {"k": "v"}, row.namespace)
    for rows in ([row], [plain, row], [row, back]):
        batch = assemble(rows)
        batch_back = batch_coder.decode(batch_coder.encode(batch))
        assert same_batch(batch_back, batch), (batch, batch_back)


READER = ElementReader()
OP_READER = ElementReader(op_key="op")


@pytest.mark.parametrize("case", [c for c in CASES if c.row is not None], ids=lambda c: c.name)
def test_every_row_of_the_bad_input_catalogue_comes_back_exactly(case: Any) -> None:
    row = (OP_READER if case.row_options.get("op_column") else READER).read(case.row)
    if isinstance(row, Refusal):
        return  # refused before any coder: a dead letter already
    round_trip(row)


@pytest.mark.parametrize("name", list(ODD_VALUES))
def test_odd_metadata_values_come_back_exactly(name: str) -> None:
    row = READER.read({"id": "a", "values": V, "m": ODD_VALUES[name], "n": 1})
    assert isinstance(row, Row) and same(row.metadata["m"], ODD_VALUES[name])
    round_trip(row)


@pytest.mark.parametrize("metadata", ODD_KEYS, ids=repr)
def test_metadata_keys_that_are_not_text_come_back_exactly(metadata: dict[Any, Any]) -> None:
    round_trip(Row("a", np.array(V, dtype=np.float32), None, metadata, None))


@pytest.mark.parametrize(
    "row_id, namespace",
    [(2**64, None), (-(2**63) - 1, "ns"), ("x\udc80", None), ("a", 5), ("a", "ns\udcff"), ("a", 2**70)],
    ids=repr,
)
def test_ids_and_namespaces_come_back_exactly(row_id: Any, namespace: Any) -> None:
    round_trip(Row(row_id, np.array(V, dtype=np.float32), None, {"k": 1}, namespace))


def test_every_kind_of_element_comes_back_exactly() -> None:
    """Dicts, beam.Rows, named-vector rows, ml.rag Chunks, deletes and sparse vectors."""
    at = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=TZ)
    named = ElementReader(vector_columns=(("a", "a"),), multi_vector_columns=(("m", "m"),), op_key="op")
    elements: list[tuple[ElementReader, Any]] = [
        (READER, {"id": "d", "values": V, "at": at, "tags": ["x", "y"]}),
        (READER, {"id": "s", "values": V, "sparse_values": {"indices": [1, 7], "values": [0.5, 0.25]}}),
        (READER, beam.Row(id="r", values=np.array(V, dtype=np.float32), at=at, n=2**70)),
        (READER, Chunk(content=Content(text="hello"), id="c", metadata={"at": at}, embedding=Embedding(dense_embedding=V))),
        (OP_READER, {"id": "gone", "op": "delete"}),
        (OP_READER, {"id": 2**64, "op": "delete", "namespace": "ns"}),
        (named, {"id": "n", "a": V, "m": [V, V[:2]], "at": at}),
        (named, {"id": "n2", "a": None, "m": None, "k": "v"}),
        (named, {"id": "n3", "op": "delete"}),
    ]  # fmt: skip
    rows = []
    for reader, element in elements:
        row = reader.read(element)
        assert not isinstance(row, Refusal), row
        round_trip(row)
        rows.append(row)
    assert type(rows[4].metadata) is DeleteMark and type(rows[8].metadata) is DeleteMark
    plain_rows = [r for r in rows if type(r) is Row]
    batch = assemble(plain_rows)
    back = VectorBatchCoder().decode(VectorBatchCoder().encode(batch))
    assert same_batch(back, batch)
    assert back.metadata is not None and [type(m) for m in back.metadata].count(DeleteMark) == 3


def test_plain_rows_travel_as_msgpack_and_are_small() -> None:
    """The fast path stays: a plain row is not pickled, and its vector is its raw float32 bytes."""
    row = READER.read(
        {"id": "a", "values": np.ones(768, dtype=np.float32), "title": "t", "n": 3, "tags": ["a"]}
    )
    assert isinstance(row, Row)
    encoded = RowCoder().encode(row)
    assert b"\x80\x05\x95" not in encoded and len(encoded) < 768 * 4 + 64  # not pickled, no float lists
    batch = assemble([row] * 10)
    assert len(VectorBatchCoder().encode(batch)) < 10 * (768 * 4 + 64)
