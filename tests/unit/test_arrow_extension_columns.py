"""The Arrow reader reads a column of an extension type as its storage: ids, vectors (lists, or JSON text
under ``arrow.json``), sparse vectors, namespaces and ops wrapped in an extension are each read as the
same column unwrapped is (each was a ``ConfigError`` naming the extension type, or for JSON vectors its
storage, ``string``, as no list); ``bool8`` is read as the booleans it holds, so no id is made of it."""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa
import pytest

from vectordb.connector.errors import ConfigError
from vectordb.connector.rows.arrow import arrow_ids, prepare_arrow
from vectordb.connector.rows.types import ColumnSpec, DimensionState, Prepared, RowRules

RULES = RowRules(max_id_length=512, allow_sparse_only=True)
SPARSE = pa.struct([("indices", pa.list_(pa.uint32())), ("values", pa.list_(pa.float32()))])
COLUMNS: dict[str, pa.Array] = {
    "id": pa.array([uuid.UUID(int=7).bytes, uuid.UUID(int=8).bytes], pa.binary(16)),
    "values": pa.array([[1.0, 0.5], [0.5, 1.0]], pa.list_(pa.float32())),
    "text": pa.array(["[1, 0.5]", "[0.5, 1]"]),
    "sparse": pa.array([{"indices": [1], "values": [0.5]}, {"indices": [2], "values": [1.0]}], SPARSE),
    "ns": pa.array(["n1", "n2"]),
    "op": pa.array(["upsert", "delete"]),
    "multi": pa.array([[[1.0, 0.5]], [[0.5, 1.0], [1.0, 1.0]]], pa.list_(pa.list_(pa.float32()))),
}
SPECS = {
    "id": ColumnSpec(),
    "values": ColumnSpec(),
    "text": ColumnSpec(vector_column="text"),
    "sparse": ColumnSpec(sparse_column="sparse"),
    "ns": ColumnSpec(namespace_column="ns"),
    "op": ColumnSpec(op_column="op"),
    "multi": ColumnSpec(multi_vector_columns=(("m", "multi"),)),
}


def _wrapped(array: pa.Array) -> pa.Array:
    if array.type == pa.binary(16):
        return pa.ExtensionArray.from_storage(pa.uuid(), array)
    if array.type == pa.string() and array[0].as_py().startswith("["):
        return pa.ExtensionArray.from_storage(pa.json_(), array)
    return pa.ExtensionArray.from_storage(pa.opaque(array.type, "thing", "vendor"), array)


def _batch(column: str, wrap: bool) -> pa.RecordBatch:
    names = {"id", "values", column} if column != "multi" else {"id", "multi"}
    if column == "text":
        names.discard("values")
    cols = {name: COLUMNS[name] for name in COLUMNS if name in names}
    if wrap:
        cols[column] = _wrapped(cols[column])
    return pa.record_batch(cols)


def _dimension(spec: ColumnSpec) -> DimensionState:
    return DimensionState(named={name: None for name, _ in spec.multi_vector_columns})


def _outcome(prepared: Prepared) -> list[Any]:
    out: list[Any] = [sorted((tuple(map(str, f.ids)), f.error) for f in prepared.failures)]
    for batch in prepared.batches:
        out.append((batch.op, batch.ids, batch.namespace, repr(batch.vectors), repr(batch.sparse)))
        out.append((repr(batch.multi_vectors), batch.metadata))
    return out


@pytest.mark.parametrize("column", list(SPECS))
def test_a_column_wrapped_in_an_extension_type_reads_as_its_storage(column: str) -> None:
    spec = SPECS[column]
    plain = _outcome(prepare_arrow(_batch(column, False), spec, RULES, _dimension(spec)))
    wrapped_batch = _batch(column, True)
    assert isinstance(wrapped_batch.column(column).type, pa.BaseExtensionType)
    wrapped = _outcome(prepare_arrow(wrapped_batch, spec, RULES, _dimension(spec)))
    assert wrapped == plain
    assert plain[0] == [] and len(plain) > 1  # every row was read, none refused
    assert arrow_ids(wrapped_batch, spec) == arrow_ids(_batch(column, False), spec)


def test_a_table_of_chunks_reads_uuid_ids_as_text() -> None:
    ids = pa.chunked_array([_wrapped(COLUMNS["id"][:1]), _wrapped(COLUMNS["id"][1:])])
    table = pa.table({"id": ids, "values": COLUMNS["values"]})
    prepared = prepare_arrow(table, ColumnSpec(), RULES, DimensionState())
    assert [i for b in prepared.batches for i in b.ids] == [str(uuid.UUID(int=7)), str(uuid.UUID(int=8))]


def test_bool8_ids_are_refused_as_booleans_not_read_as_integers() -> None:
    bools = pa.ExtensionArray.from_storage(pa.bool8(), pa.array([0, 1], pa.int8()))
    batch = pa.record_batch({"id": bools, "values": COLUMNS["values"]})
    with pytest.raises(ConfigError, match=r"^option id_column: column 'id' has type bool"):
        prepare_arrow(batch, ColumnSpec(), RowRules(numeric_ids=True), DimensionState())
