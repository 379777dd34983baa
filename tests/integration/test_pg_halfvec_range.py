"""Values a halfvec column cannot hold (beyond ±65504): refused before any request, naming the vector and
its column, instead of a whole COPY failing with PostgreSQL's 22003 and an isolation walk naming nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from vectordb.connector import connect

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401

RANGE = "outside halfvec's range (±65504)"


def stored(server: PgServer, table: str, columns: str) -> dict[str, list[list[float]]]:
    with server.connect() as conn:
        rows = conn.execute(f'SELECT id, {columns} FROM "{table}"').fetchall()
    return {row[0]: [list(v) for v in row[1:]] for row in rows}


def reasons(report: Any) -> dict[str, tuple[str, str, int]]:
    return {
        row_id: (f.error, f.error_type, f.attempts) for f in report.failures for row_id in f.ids if row_id
    }


def test_named_halfvec_values_out_of_range_fail_alone_unsent(pg_server: PgServer, pg_table: str) -> None:
    """Each vector beyond halfvec's range is named in its row's reason; the good rows go in one request."""
    rows = [
        {"id": "ok", "t": [1.0, 2.0], "b": [1.0, 2.0]},
        {"id": "big", "t": [1.0, 2.0], "b": [1e6, 2.0]},
        {"id": "big2", "t": [7e4, 1.0], "b": [1.0, -65520.0]},
        {"id": "edge", "t": [65504.0, -65519.0], "b": [-65504.0, 1.0]},  # rounds to ±65504: stored
    ]
    with connect(
        pg_server.uri(pg_table),
        on_error="report",
        create=True,
        vector_columns={"title": "t", "body": "b"},
        vector_dimensions={"title": 2, "body": 2},
        vector_type="halfvec",
    ) as client:
        report = client.write(rows)
    assert report.written == 2 and report.failed == 2 and report.requests == 1
    assert reasons(report) == {
        "big": (f"vector 'body' (column 'b') has 1e+06 at index 0, {RANGE}", "Invalid", 0),
        "big2": (
            f"vector 'title' (column 't') has 70000.0 at index 0, {RANGE}; "
            f"vector 'body' (column 'b') has -65520.0 at index 1, {RANGE}",
            "Invalid",
            0,
        ),
    }
    got = stored(pg_server, pg_table, "title::vector::real[], body::vector::real[]")
    assert got == {"ok": [[1.0, 2.0], [1.0, 2.0]], "edge": [[65504.0, -65504.0], [-65504.0, 1.0]]}


def test_halfvec_vector_column_value_out_of_range_fails_alone_unsent(
    pg_server: PgServer, pg_table: str
) -> None:
    """The single vector column (Arrow input): the row fails naming the input column and the index."""
    matrix = np.ones((3, 4), dtype=np.float32)
    matrix[1, 3] = -3e38
    table = pa.table(
        {"id": ["a", "b", "c"], "emb": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), 4)}
    )
    with connect(
        pg_server.uri(pg_table), on_error="report", create=True, vector_column="emb", vector_type="halfvec"
    ) as client:
        report = client.write(table)
    assert report.written == 2 and report.requests == 1
    assert reasons(report) == {"b": (f"column 'emb': vector has -3e+38 at index 3, {RANGE}", "Invalid", 0)}
    assert sorted(stored(pg_server, pg_table, "embedding::vector::real[]")) == ["a", "c"]


def test_a_vector_column_takes_values_beyond_halfvec_range(pg_server: PgServer, pg_table: str) -> None:
    """Only halfvec columns are checked: a vector column stores 1e6 as it is."""
    with connect(pg_server.uri(pg_table), on_error="report", create=True) as client:
        report = client.write([{"id": "a", "values": [1e6, -7e4]}])
    assert report.written == 1 and not report.failures
    assert stored(pg_server, pg_table, "embedding::real[]") == {"a": [[1e6, -7e4]]}


def test_a_row_out_of_range_with_metadata_the_table_cannot_hold_names_both(
    pg_server: PgServer, pg_table: str
) -> None:
    """A table of the user's own with no jsonb column: the row's two reasons in one."""
    with pg_server.connect() as conn:
        conn.execute(f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, embedding halfvec(2))')
    with connect(pg_server.uri(pg_table), on_error="report") as client:
        report = client.write(
            [{"id": "a", "values": [1e5, 1.0], "tag": "x"}, {"id": "b", "values": [1.0, 2.0]}]
        )
    assert report.written == 1 and report.requests == 1
    assert reasons(report) == {
        "a": (
            f"column 'values': vector has 100000.0 at index 0, {RANGE}; the row has metadata but table "
            f"{pg_table} has no jsonb column: add metadata jsonb",
            "Invalid",
            0,
        )
    }
