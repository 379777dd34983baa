"""PostgreSQL: a sparse vector's explicit zeros are left out, as pgvector's own text input leaves them out, instead of
failing the row. Against a real embedded server."""

from __future__ import annotations

from typing import Any

from vectordb.connector import connect

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401


def _sql(server: PgServer, statement: str) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        return conn.execute(statement).fetchall()


def test_explicit_zeros_of_a_sparse_vector_are_left_out_as_pgvector_leaves_them_out(
    pg_server: PgServer, pg_table: str
) -> None:
    rows = [
        {"id": "with-zero", "values": [1, 0, 0, 0], "sparse": {"indices": [1, 3], "values": [0.0, 2.0]}},
        {"id": "negative-zero", "values": [1, 0, 0, 0], "sparse": {"indices": [0, 5], "values": [3.0, -0.0]}},
        # below float32's smallest subnormal: 0 once a float32, as the connector stores every value
        {"id": "underflow", "values": [1, 0, 0, 0], "sparse": {"indices": [2, 4], "values": [1e-50, 1.0]}},
        {"id": "all-zero", "values": [1, 0, 0, 0], "sparse": {"indices": [1], "values": [0.0]}},
    ]
    with connect(
        pg_server.uri(pg_table), create=True, sparse_column="sparse", sparse_dimension=10, on_error="report"
    ) as client:
        report = client.write(rows)
    assert report.ok and report.written == 4, report
    stored = dict(_sql(pg_server, f'SELECT id, sparse_embedding::text FROM "{pg_table}"'))
    # what pgvector's text input makes of the same vectors (it counts from 1)
    same = dict(
        _sql(
            pg_server,
            "SELECT 'with-zero', '{2:0,4:2}/10'::sparsevec::text UNION ALL "
            "SELECT 'negative-zero', '{1:3,6:-0}/10'::sparsevec::text UNION ALL "
            "SELECT 'all-zero', '{2:0}/10'::sparsevec::text",
        )
    )
    assert same == {"with-zero": "{4:2}/10", "negative-zero": "{1:3}/10", "all-zero": "{}/10"}
    assert stored == {**same, "underflow": "{5:1}/10"}
