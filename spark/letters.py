"""Spark's dead-letter files back into the rows they came from, to write again once fixed.

A letter file holds ``id``, ``error`` ("Type: reason"), ``retryable``, ``attempts``, then the row's
columns, those named like a field of the reason with a ``row_`` prefix (``spark/task.py``). Written as
it is, a letter stores its reason as metadata and a row's ``error`` as ``row_error``; the rule that
undoes it is the core's (``vectordb.connector.dead_letters.row_columns``), so Spark's letters and
Python's turn back alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vectordb.connector.dead_letters import row_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["rows_from_letters"]


def rows_from_letters(letters: DataFrame, id_column: str | None = "id") -> DataFrame:
    """The rows of ``letters`` (``spark.read.parquet(dead_letter_path)``), as the write that made them read them.

    Args:
        letters: the dead letters, as read from the files.
        id_column: option ``id_column`` of that write; ``None`` where it made ids from ``id_from``.

    Raises:
        ConfigError: the letters do not fit ``id_column`` (two columns would take one name).
    """
    taken = row_columns(letters.columns, id_column)
    # by position: a name with a dot or a backtick would need quoting in select
    placeholders = [f"_{i}" for i in range(len(letters.columns))]
    kept = letters.toDF(*placeholders).select(*(placeholders[p] for p, _ in taken))
    return kept.toDF(*(own for _, own in taken))
