"""A write with option ``op_column`` stopped by a fatal embedding error reports each dropped row's op: the
embedding stage's pieces read but never handed on fail as one ``Stopped`` failure per op, so a delete row
among them says ``op="delete"``, as the engine's dropped batches do. They all said "upsert" before."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tests.embedding.fixtures import write_until_key_revoked
from tests.servers.fixtures import ServerHandle
from vectordb.beam.elements import ElementReader
from vectordb.connector.rows.dicts import columns_of


def given_rows() -> list[dict[str, Any]]:
    """Every fifth row a delete (an id alone), the others upserts with a text to embed."""
    return [
        {"id": f"r{i}", "op": "delete", "text": None}
        if i % 5 == 0
        else {"id": f"r{i}", "op": "upsert", "text": f"hello {i}"}
        for i in range(5000)
    ]


def as_given(rows: list[dict[str, Any]], form: str) -> Any:
    """The rows as dicts, an Arrow table, or ``Columns`` (what the Beam sink hands the client: a delete's
    op in its metadata, a ``DeleteMark``; an upsert's text in its metadata)."""
    if form == "arrow":
        return pa.Table.from_pylist(rows)
    if form == "columns":
        reader = ElementReader(op_key="op")
        return columns_of([reader.read({k: v for k, v in row.items() if v is not None}) for row in rows])
    return rows


@pytest.mark.parametrize("form", ["dicts", "arrow", "columns"])
def test_a_stopped_writes_dropped_delete_rows_say_delete(pinecone: ServerHandle, form: str) -> None:
    rows = given_rows()
    deletes = {row["id"] for row in rows if row["op"] == "delete"}
    data = as_given(rows, form)
    client, report = write_until_key_revoked(pinecone.uri, data, op_column="op")
    ops = {i: f.op for f in report.failures for i in f.ids}
    assert len(ops) == report.failed  # each row in one failure
    wrong = {i: op for i, op in ops.items() if op != ("delete" if i in deletes else "upsert")}
    assert not wrong, f"{len(wrong)} rows with the wrong op, e.g. {sorted(wrong.items())[:3]}"
    stopped = {i for f in report.failures if f.error_type == "Stopped" and f.op == "delete" for i in f.ids}
    assert stopped and stopped <= deletes
    letters = client.dead_letters(data, report)
    if form == "arrow":
        letters = letters.to_pylist()
    assert len(letters) == report.failed
    letter_deletes = {x["id"] for x in letters if x.get("op") == "delete"}  # Columns: upserts have no op
    assert letter_deletes == set(ops) & deletes
    assert all(x["error_type"] == "Stopped" for x in letters if x["id"] in stopped)
