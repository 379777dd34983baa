"""``changes(namespace_column=)`` into PostgreSQL (``create=true``: one row per (namespace, id)).

An update that moves an id to another namespace must delete the row of the namespace it left: without
``namespace_column`` that row stayed in the table for good.
"""

from __future__ import annotations

from typing import Any

from tests.integration.pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401
from vectordb.spark import changes

SCHEMA = "id string, tenant string, values array<float>, _change_type string, _commit_version long"


def _feed(spark: Any, rows: list[tuple[str, str, float, str, int]]) -> Any:
    return spark.createDataFrame([(i, t, [x, 1.0, 0.5], c, n) for i, t, x, c, n in rows], SCHEMA)


def test_a_moved_id_leaves_no_row_in_the_namespace_it_left(
    spark: Any, pg_server: PgServer, pg_table: str
) -> None:
    def write(df: Any) -> None:
        (
            df.write.format("vectordb")
            .option("uri", pg_server.uri(pg_table))
            .option("create", "true")
            .option("dimension", "3")
            .option("op_column", "_change_type")
            .option("namespace_column", "tenant")
            .mode("append")
            .save()
        )

    write(_feed(spark, [("x", "t1", 1.0, "insert", 0), ("y", "t1", 2.0, "insert", 0)]))
    moves = [
        ("x", "t1", 1.0, "update_preimage", 1),  # UPDATE ... SET tenant = 't2' WHERE id = 'x'
        ("x", "t2", 1.0, "update_postimage", 1),
        ("y", "t1", 2.0, "update_preimage", 1),  # an update within its namespace
        ("y", "t1", 3.0, "update_postimage", 1),
    ]
    write(changes(_feed(spark, moves), namespace_column="tenant"))
    with pg_server.connect() as conn:
        rows = conn.execute(
            f'SELECT namespace, id, embedding::real[] FROM "{pg_table}" ORDER BY 1, 2'
        ).fetchall()
    assert [(ns, i, list(v)) for ns, i, v in rows] == [
        ("t1", "y", [3.0, 1.0, 0.5]),
        ("t2", "x", [1.0, 1.0, 0.5]),
    ]
