"""Input positions on rows and failures, and the one function that turns failures back into rows."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest

from vectordb.connector.dead_letters import dead_letters
from vectordb.connector.report import BatchFailure, WriteReport
from vectordb.connector.rows import (
    Columns,
    ColumnSpec,
    DimensionState,
    RowBatch,
    RowRules,
    input_chunks,
    prepare_arrow,
    prepare_dicts,
)
from vectordb.connector.rows.chunks import DICT_CHUNK_ROWS

RULES = RowRules()
UUID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def rejected(ids: tuple[str | None, ...], positions: tuple[int, ...] = ()) -> BatchFailure:
    return BatchFailure(ids=ids, positions=positions, error="no", attempts=1)


# -- positions on the way in -------------------------------------------------------------------------


def test_positions_count_across_the_chunks_of_one_input() -> None:
    dicts = [{"id": f"d{i}", "values": [1.0]} for i in range(DICT_CHUNK_ROWS + 7)]
    arrow = pa.record_batch({"id": ["a0", "a1", "a2"], "values": [[1.0]] * 3})
    chunks = list(input_chunks([*dicts[:5], arrow, *dicts[5:]]))
    assert [len(c.positions) for c in chunks] == [5, 3, DICT_CHUNK_ROWS, 2]
    assert [int(c.positions[0]) for c in chunks] == [0, 5, 8, 8 + DICT_CHUNK_ROWS]


def test_refused_rows_and_batches_keep_their_input_positions() -> None:
    rows = [{"id": "a", "values": [1.0, 2.0]}, {"id": "b", "values": [1.0]}, {"values": [3.0, 4.0]}]
    rows += [{"id": "a", "values": [5.0, 6.0]}]  # the same id again: a second batch
    prepared = prepare_dicts(
        rows, ColumnSpec(), RULES, DimensionState(2), positions=np.array([10, 11, 12, 13])
    )
    assert {f.error: (f.ids, f.positions) for f in prepared.failures} == {
        "vector has 1 dimensions; expected 2": (("b",), (11,)),
        "missing id": ((None,), (12,)),
    }
    assert [(b.ids, b.positions.tolist()) for b in prepared.batches] == [(["a"], [10]), (["a"], [13])]


def test_slices_selections_and_refusals_keep_positions() -> None:
    batch = RowBatch(
        ids=["a", "b", "c", "d"], vectors=np.ones((4, 2), np.float32), positions=np.array([7, 3, 9, 1])
    )
    assert batch.slice(1, 3).positions.tolist() == [3, 9]
    assert batch.take([3, 0]).positions.tolist() == [1, 7]
    kept, failures = batch.without({0: "too big", 2: "too big"})
    assert kept is not None and kept.positions.tolist() == [3, 1]
    assert [(f.ids, f.positions, f.error_type) for f in failures] == [(("a", "c"), (7, 9), "Invalid")]
    assert RowBatch(ids=["x", "y"], vectors=None).positions.tolist() == [0, 1]  # the whole input


@pytest.mark.parametrize("typ", [pa.binary(16), pa.binary(), pa.large_binary()])
def test_binary_uuid_ids_are_their_text_and_other_lengths_are_refused(typ: pa.DataType) -> None:
    values = [UUID.bytes, None] if typ == pa.binary(16) else [UUID.bytes, None, b"short"]
    batch = pa.record_batch({"id": pa.array(values, type=typ), "values": [[1.0]] * len(values)})
    prepared = prepare_arrow(batch, ColumnSpec(), RULES, DimensionState(1))
    assert [b.ids for b in prepared.batches] == [[str(UUID)]]
    reasons = {f.error: (f.ids, f.positions) for f in prepared.failures}
    assert reasons.pop("missing id") == ((None,), (1,))
    if typ != pa.binary(16):
        assert reasons.pop("id is 5 bytes; a binary id must be a 16-byte UUID") == ((b"short".hex(),), (2,))
    assert not reasons


# -- failures back into rows ---------------------------------------------------------------------------


def test_arrow_letters_are_the_rows_by_position_with_their_columns_and_types() -> None:
    table = pa.table(
        {
            "id": ["a", "a", None],
            "values": pa.array([[1.0], [2.0], [3.0]], type=pa.list_(pa.float32())),
            "error": ["x", "y", "z"],  # named like the reason: kept as row_error
            "blob": pa.array([b"1", b"2", b"3"], type=pa.binary()),
        }
    )
    failures = [
        rejected(("a",), (1,)),
        BatchFailure(ids=(None,), positions=(2,), error="missing id", error_type="Invalid"),
    ]
    letters = dead_letters(table, WriteReport(failed=2, failures=failures))
    assert isinstance(letters, pa.Table)
    assert letters.column_names == [
        "id",
        "error",
        "error_type",
        "retryable",
        "attempts",
        "values",
        "row_error",
        "blob",
    ]
    assert letters.schema.field("values").type == pa.list_(pa.float32())
    assert letters.to_pylist() == [
        {"id": "a", "error": "no", "error_type": "Rejected", "retryable": False, "attempts": 1, "values": [2.0],
         "row_error": "y", "blob": b"2"},
        {"id": None, "error": "missing id", "error_type": "Invalid", "retryable": False, "attempts": 0,
         "values": [3.0], "row_error": "z", "blob": b"3"},
    ]  # fmt: skip


def test_an_id_column_of_another_name_stays_and_a_column_named_id_becomes_row_id() -> None:
    batch = pa.record_batch(
        {"key": pa.array([UUID.bytes], type=pa.binary(16)), "id": ["other"], "values": [[1.0]]}
    )
    (letter,) = dead_letters(batch, [rejected((str(UUID),), (0,))], ColumnSpec(id_column="key")).to_pylist()
    assert (letter["id"], letter["key"], letter["row_id"]) == (str(UUID), UUID.bytes, "other")


def test_dict_and_record_letters_keep_the_row_as_it_was() -> None:
    rows = [{"id": f"r{i}", "values": [float(i)], "title": f"t{i}"} for i in range(3)]
    letters = dead_letters(rows, [rejected(("r2", "r0"), (2, 0))])
    assert isinstance(letters, list)
    assert [(d["id"], d["values"], d["title"], d["error"]) for d in letters] == [
        ("r2", [2.0], "t2", "no"),
        ("r0", [0.0], "t0", "no"),
    ]


def test_columns_letters_are_in_the_clients_dict_form() -> None:
    cols = Columns(
        n=2,
        ids=["a", 7],
        flat=np.array([1.0, 2.0, 3.0], np.float32),
        offsets=np.array([0, 2, 3]),
        null_vector=np.array([False, True]),
        sparse=[{"indices": np.array([1, 4]), "values": np.array([0.5, 1.0], np.float32)}, None],
        metadata=[{"k": 1}, {}],
        namespaces=None,
    )
    letters = dead_letters(cols, [rejected(("a", "7"), (0, 1))], namespace="docs")
    assert letters == [
        {"id": "a", "error": "no", "error_type": "Rejected", "retryable": False, "attempts": 1, "values": [1.0, 2.0],
         "sparse_values": {"indices": [1, 4], "values": [0.5, 1.0]}, "metadata": {"k": 1}, "namespace": "docs"},
        {"id": 7, "error": "no", "error_type": "Rejected", "retryable": False, "attempts": 1, "namespace": "docs"},
    ]  # fmt: skip


def test_rows_named_by_id_alone_take_the_first_free_row_with_that_id() -> None:
    table = pa.table(
        {
            "id": pa.array([UUID.bytes, b"\x01" * 16, UUID.bytes, UUID.bytes], type=pa.binary(16)),
            "n": [0, 1, 2, 3],
        }
    )
    by_position = rejected((str(UUID),), (0,))
    by_id = rejected((str(UUID), str(UUID), "absent"))  # as a database reply names them
    letters = dead_letters(table, [by_position, by_id]).to_pylist()
    # each letter has its row's own id, its 16 bytes; the one with no row has no id of that type
    assert [(d["id"], d["n"]) for d in letters] == [
        (UUID.bytes, 0),
        (UUID.bytes, 2),
        (UUID.bytes, 3),
        (None, None),
    ]


def test_no_failures_no_letters_and_unnamed_rows_have_none() -> None:
    table = pa.table({"id": ["a"], "values": [[1.0]]})
    empty = dead_letters(table, [BatchFailure(ids=(), error="skipped", unnamed=3)])
    assert isinstance(empty, pa.Table) and empty.num_rows == 0 and "values" in empty.column_names
    assert dead_letters([{"id": "a"}], WriteReport()) == []


# -- the letter's id is the row's own -------------------------------------------------------------


def test_dict_letters_keep_the_rows_own_id_of_its_type() -> None:
    """Fed back, a letter must write the row it came from: with the report's text '5' for an int id 5,
    Qdrant wrote a new point (a UUIDv5 of '5') instead of point 5. A row with a null or no id keeps null."""
    rows = [{"id": 5, "values": [1.0]}, {"id": None, "values": [2.0]}, {"values": [3.0]}]
    letters = dead_letters(rows, [rejected(("5", None, None), (0, 1, 2))])
    assert isinstance(letters, list)
    assert [(d["id"], d["values"]) for d in letters] == [(5, [1.0]), (None, [2.0]), (None, [3.0])]
    assert [type(d["id"]) for d in letters] == [int, type(None), type(None)]


def test_arrow_letters_keep_the_id_columns_type() -> None:
    table = pa.table({"id": pa.array([5, None, 7], type=pa.int64()), "values": [[1.0], [2.0], [3.0]]})
    letters = dead_letters(table, [rejected(("7", None), (2, 1))])
    assert isinstance(letters, pa.Table)
    assert letters.schema.field("id").type == pa.int64()
    assert letters.column("id").to_pylist() == [7, None]
    # a letter with no row (an id the input does not hold) still has the column's type: one Spark
    # task's letter file keeps one schema
    unmatched = dead_letters(table, [rejected(("5",), (0,)), rejected(("9",)), rejected(("x",))])
    assert unmatched.schema.field("id").type == pa.int64()
    assert unmatched.column("id").to_pylist() == [5, 9, None]
