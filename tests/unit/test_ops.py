"""What each row is for (option ``op_column``): the spellings, the checks a delete row skips, bad input,
and the batches of one op each that keep an id's rows in input order."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from vectordb.connector import ConfigError
from vectordb.connector.client import delete_rows
from vectordb.connector.dead_letters import dead_letters
from vectordb.connector.report import BatchFailure, WriteReport
from vectordb.connector.rows import (
    Columns,
    ColumnSpec,
    DimensionState,
    Prepared,
    RowRules,
    prepare_arrow,
    prepare_columns,
    prepare_dicts,
)
from vectordb.connector.rows.ops import SPELLINGS, DeleteMark, arrow_ops, op_of

SPEC = ColumnSpec(op_column="op")
V = [0.5, 1.0, -2.0]


def dicts(rows: list[dict[str, Any]], spec: ColumnSpec = SPEC) -> Prepared:
    return prepare_dicts(rows, spec, RowRules(), DimensionState())


def arrow(table: pa.Table, spec: ColumnSpec = SPEC) -> Prepared:
    return prepare_arrow(table, spec, RowRules(), DimensionState())


def shape(prepared: Prepared) -> list[tuple[str, list[Any]]]:
    return [(b.op, list(b.ids)) for b in prepared.batches]


# -- the spellings --------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["upsert", "INSERT", "Update", "update_postimage", "UPDATE_POSTIMAGE"])
def test_upsert_spellings_in_any_case(text: str) -> None:
    assert op_of(text) == "upsert"


@pytest.mark.parametrize("text", ["delete", "DELETE", "Delete", b"delete"])
def test_delete_in_any_case(text: str | bytes) -> None:
    assert op_of(text) == "delete"


def test_no_op_is_an_upsert_and_anything_else_names_none() -> None:
    assert op_of(None) == "upsert"
    for value in ("merge", "update_preimage", "", " delete", 1, True):
        assert op_of(value) is None, value
    assert set(SPELLINGS) == {"upsert", "insert", "update", "update_postimage", "delete"}


def test_arrow_ops_reads_each_distinct_value_once_and_names_the_bad_ones() -> None:
    column = pa.array(["delete", None, "Insert", "merge", "DELETE", "merge"])
    codes, refused = arrow_ops(column, "op")
    assert codes.tolist() == [1, 0, 0, 0, 1, 0]
    assert sorted(refused) == [3, 5] and "op 'merge' (column 'op')" in refused[3]
    for typed in (column.cast(pa.large_string()), column.dictionary_encode(), pa.chunked_array([column])):
        assert arrow_ops(typed, "op")[0].tolist() == codes.tolist()
    assert arrow_ops(pa.nulls(3), "op")[0].tolist() == [0, 0, 0]


@pytest.mark.parametrize("values", [pa.array([1, 2]), pa.array([True, False]), pa.array([b"d", b"u"])])
def test_an_op_column_of_another_type_is_a_config_error_naming_it(values: pa.Array) -> None:
    table = pa.table({"id": ["a", "b"], "values": [V, V], "op": values})
    with pytest.raises(ConfigError, match=r"option op_column: column 'op' has type .*; expected strings"):
        arrow(table)
    empty = table.slice(0, 0)  # what Spark's driver checks: the schema alone, before any row
    with pytest.raises(ConfigError, match="option op_column"):
        arrow(empty)


def test_a_missing_op_column_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"option op_column: no column 'op'"):
        arrow(pa.table({"id": ["a"], "values": [V]}))


# -- what a delete row needs ----------------------------------------------------------------------


def test_a_delete_row_needs_an_id_and_nothing_else() -> None:
    prepared = dicts(
        [
            {"id": "a", "op": "delete", "values": None},
            {"id": "b", "op": "delete", "values": "not a vector", "metadata": "{not json"},
            {"id": "c", "op": "delete", "values": [float("nan")] * 3, "sparse_values": {"indices": [-1]}},
            {"id": "d", "op": "delete", "values": [1.0]},  # another length: not read
            {"id": "e", "values": V, "op": "upsert"},
        ]
    )
    assert not prepared.failures
    assert shape(prepared) == [("upsert", ["e"]), ("delete", ["a", "b", "c", "d"])]
    delete = prepared.batches[1]
    assert delete.vectors is None and delete.metadata is None and delete.sparse is None


def test_a_delete_row_without_an_id_fails_alone_as_a_delete() -> None:
    prepared = dicts([{"op": "delete"}, {"id": "", "op": "delete"}, {"id": "a", "op": "delete"}])
    reasons = {f.error: (f.ids, f.op) for f in prepared.failures}
    assert reasons == {"missing id": ((None,), "delete"), "empty id": (("",), "delete")}
    assert shape(prepared) == [("delete", ["a"])]


def test_an_unknown_op_fails_its_row_naming_the_value() -> None:
    prepared = dicts([{"id": "a", "values": V, "op": "merge"}, {"id": "b", "values": V, "op": "upsert"}])
    (failure,) = prepared.failures
    assert failure.ids == ("a",) and failure.error_type == "Invalid"
    assert "op 'merge' (column 'op') is not one of upsert, insert, update, update_postimage, delete" in (
        failure.error
    )
    table = pa.table({"id": ["a", "b"], "values": [V, V], "op": ["upsert", "truncate"]})
    (failure,) = arrow(table).failures
    assert failure.ids == ("b",) and "op 'truncate'" in failure.error


def test_an_upsert_still_needs_its_vector() -> None:
    prepared = dicts([{"id": "a", "op": "insert"}, {"id": "b", "values": V}])
    assert [(f.ids, f.error, f.op) for f in prepared.failures] == [(("a",), "null vector", "upsert")]


def test_the_op_column_is_no_metadata_and_the_dimension_comes_from_upserts_alone() -> None:
    dim = DimensionState()
    rows = [{"id": f"d{i}", "op": "delete", "values": [1.0] * 7} for i in range(5)]
    rows += [{"id": "u", "op": "upsert", "values": V, "title": "t"}]
    prepared = prepare_dicts(rows, SPEC, RowRules(), dim)
    assert dim.value == 3 and not prepared.failures
    (upsert,) = [b for b in prepared.batches if b.op == "upsert"]
    assert upsert.metadata == [{"title": "t"}]


def test_without_op_column_an_op_key_is_metadata() -> None:
    prepared = dicts([{"id": "a", "values": V, "op": "delete"}], ColumnSpec())
    assert shape(prepared) == [("upsert", ["a"])] and prepared.batches[0].metadata == [{"op": "delete"}]


def test_deletes_alone_need_no_vector_column() -> None:
    table = pa.table({"id": ["a", "b", "c"], "op": ["delete", "delete", "upsert"]})
    prepared = arrow(table)
    assert shape(prepared) == [("delete", ["a", "b"])]
    assert [(f.ids, f.error) for f in prepared.failures] == [(("c",), "null vector")]
    with pytest.raises(ConfigError, match="option vector_column"):  # without op_column, as before
        arrow(pa.table({"id": ["a"]}), ColumnSpec())


# -- order per id ---------------------------------------------------------------------------------


def test_an_ids_rows_go_out_in_input_order_whatever_their_ops() -> None:
    rows = [
        {"id": "a", "values": V, "op": "upsert"},
        {"id": "b", "op": "delete"},
        {"id": "a", "op": "delete"},
        {"id": "c", "values": V},
        {"id": "a", "values": V, "op": "insert"},
        {"id": "b", "op": "delete"},
    ]
    prepared = dicts(rows)
    assert shape(prepared) == [
        ("upsert", ["a", "c"]),
        ("delete", ["b"]),
        ("delete", ["a", "b"]),
        ("upsert", ["a"]),
    ]
    positions = [b.positions.tolist() for b in prepared.batches]
    assert positions == [[0, 3], [1], [2, 5], [4]]


def test_the_same_id_in_two_namespaces_is_two_rows() -> None:
    spec = ColumnSpec(op_column="op", namespace_column="ns")
    rows = [{"id": "a", "values": V, "ns": "x"}, {"id": "a", "op": "delete", "ns": "y"}]
    prepared = dicts(rows, spec)
    assert [(b.op, b.namespace, list(b.ids)) for b in prepared.batches] == [
        ("upsert", "x", ["a"]),
        ("delete", "y", ["a"]),
    ]


# -- Columns: Client.delete's carry their ops, the Beam sink's a DeleteMark as a delete's metadata ------


def test_columns_carry_ops_of_their_own_or_a_delete_mark() -> None:
    cols = delete_rows(["a", 7])  # Client.delete's rows: their op is theirs, no metadata to read it from
    prepared = prepare_columns(cols, RowRules(), DimensionState())
    assert shape(prepared) == [("delete", ["a", "7"])]
    assert cols.metadata is None and cols.ops is not None and cols.ops.tolist() == [1, 1]
    own = dataclasses.replace(cols, metadata=[{"op": "upsert"}, {"op": "upsert"}])  # the ops they carry win
    assert shape(prepare_columns(own, RowRules(), DimensionState())) == [("delete", ["a", "7"])]

    flat = np.asarray(V * 2, dtype=np.float32)
    mixed = Columns(
        n=2,
        ids=["u", "d"],
        flat=flat,
        offsets=np.array([0, 3, 6]),
        null_vector=np.zeros(2, dtype=bool),
        sparse=None,
        metadata=[{"op": "delete", "title": "t"}, DeleteMark()],
        namespaces=None,
    )
    prepared = prepare_columns(mixed, RowRules(), DimensionState())
    assert shape(prepared) == [("upsert", ["u"]), ("delete", ["d"])]
    assert prepared.batches[0].metadata == [{"op": "delete", "title": "t"}]  # a row's own metadata is data


def test_dead_letters_of_columns_say_the_op() -> None:
    cols = delete_rows(["a", "b"])
    failure = BatchFailure(ids=("b",), positions=(1,), error="nope", op="delete")
    (letter,) = dead_letters(cols, WriteReport(failed=1, failures=[failure]), ColumnSpec())
    assert letter["id"] == "b" and letter["op"] == "delete" and "metadata" not in letter


def test_an_op_inside_a_rows_metadata_is_data() -> None:
    spec = ColumnSpec(op_column="op")
    rows = [
        {"id": "a", "values": V, "metadata": {"op": "delete", "title": "t"}},
        {"id": "b", "values": V, "metadata": {"op": "surgery"}},
        {"id": "c", "op": "delete", "metadata": {"op": "upsert"}},
    ]
    prepared = dicts(rows, spec)
    assert shape(prepared) == [("upsert", ["a", "b"]), ("delete", ["c"])] and not prepared.failures
    assert prepared.batches[0].metadata == [{"op": "delete", "title": "t"}, {"op": "surgery"}]
