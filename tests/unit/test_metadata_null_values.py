"""A null metadata value is a key left out, whatever form the metadata came in: a column's null, a None in
a row's ``metadata`` dict, a null field of an Arrow struct column or a null in JSON metadata text. Only
the column's null was left out before; the others were stored as JSON null (PostgreSQL's ``metadata ?
'n'`` true for them), so what a database held depended on the input's form. Nested nulls stay (a list's
or an object's inside): they are values, which a database may refuse by its own rules."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from tests.integration.pg_server import pg_server_fixture, pg_table_fixture  # noqa: F401
from vectordb.connector import connect
from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow, prepare_dicts

if TYPE_CHECKING:
    from tests.integration.pg_server import PgServer

RULES = RowRules(max_id_length=512, max_metadata_bytes=40_960)
V = [1.0, 0.0, 0.0, 0.0]


def forms() -> dict[str, Any]:
    struct = pa.struct([("k", pa.int64()), ("n", pa.int64())])
    return {
        "dict-column": [{"id": "dict-column", "values": V, "k": 1, "n": None}],
        "dict-metadata": [{"id": "dict-metadata", "values": V, "metadata": {"k": 1, "n": None}}],
        "dict-json": [{"id": "dict-json", "values": V, "metadata": json.dumps({"k": 1, "n": None})}],
        "arrow-column": pa.table(
            {"id": ["arrow-column"], "values": [V], "k": [1], "n": pa.array([None], pa.int64())}
        ),
        "arrow-struct": pa.table(
            {"id": ["arrow-struct"], "values": [V], "metadata": pa.array([{"k": 1, "n": None}], struct)}
        ),
        "arrow-json": pa.table(
            {"id": ["arrow-json"], "values": [V], "metadata": [json.dumps({"k": 1, "n": None})]}
        ),
    }


def prepared_metadata(given: Any) -> list[Any]:
    if isinstance(given, pa.Table):
        prepared = prepare_arrow(given, ColumnSpec(), RULES, DimensionState(4))
    else:
        prepared = prepare_dicts(given, ColumnSpec(), RULES, DimensionState(4))
    assert not prepared.failures
    return [md for batch in prepared.batches for md in batch.metadata]


@pytest.mark.parametrize("form", list(forms()))
def test_a_null_metadata_value_is_left_out_in_every_form(form: str) -> None:
    assert prepared_metadata(forms()[form]) == [{"k": 1}]


def test_nested_nulls_are_values_and_the_callers_rows_are_left_as_they_were() -> None:
    given = {"k": None, "tags": ["a", None], "obj": {"x": None}}
    rows = [{"id": "a", "values": V, "metadata": given}]
    assert prepared_metadata(rows) == [{"tags": ["a", None], "obj": {"x": None}}]
    assert given == {"k": None, "tags": ["a", None], "obj": {"x": None}}  # dead letters read it again


def test_postgres_stores_no_null_key_whatever_the_form(pg_server: PgServer, pg_table: str) -> None:
    with connect(pg_server.uri(pg_table), create=True) as client:
        for given in forms().values():
            report = client.upsert(given)
            assert report.ok and report.written == 1, report
    with pg_server.connect() as conn:
        stored = dict(conn.execute(f"SELECT id::text, metadata ? 'n' FROM \"{pg_table}\"").fetchall())
    assert stored == dict.fromkeys(forms(), False)
