"""A write's input in chunks, each with its rows' positions: the one reading of every accepted input kind.

``Client.write`` reads its ``data`` with ``input_chunks``, and ``dead_letters`` reads the same ``data``
again the same way, so a position in a ``BatchFailure`` is the same row for both: the row's offset in
the input, counted across every chunk (a Table's rows in order; an iterable's items in order, an Arrow
batch among them counting all its rows).

Chunks are Arrow record batches and ``Columns`` as they are (an iterable may hold either among its
items), and dicts (``VectorRecord``s as dicts) in lists of ``DICT_CHUNK_ROWS``; a pandas DataFrame is
read as Arrow, or, where Arrow cannot type its cells (2-d numpy arrays as multi-vectors), as dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError
from ..records import VectorRecord
from .arrow import arrow_batches, arrow_ids, is_arrow
from .dicts import DictReader
from .types import Columns, ColumnSpec

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "DICT_CHUNK_ROWS",
    "Chunk",
    "count_rows",
    "input_chunks",
    "is_pandas",
    "pandas_table",
    "reported_ids",
]

DICT_CHUNK_ROWS = 4096


@dataclass(frozen=True, slots=True)
class Chunk:
    """Rows of the input as read (a pyarrow ``RecordBatch``, a list of mappings, or ``Columns``) and
    their offsets in the write's input."""

    rows: Any
    positions: np.ndarray  # int64, one per row


def input_chunks(data: Any) -> Iterator[Chunk]:
    """``data`` in chunks, each with its rows' positions; ``ConfigError`` for input it cannot read."""
    start = 0
    for rows in _chunks(data):
        n = count_rows(rows)
        yield Chunk(rows, np.arange(start, start + n, dtype=np.int64))
        start += n


def count_rows(rows: Any) -> int:
    """Rows in a chunk's ``rows``."""
    return rows.n if isinstance(rows, Columns) else len(rows) if isinstance(rows, list) else rows.num_rows


def reported_ids(rows: Any, spec: ColumnSpec) -> list[str | None]:
    """Each row's id in a chunk's ``rows`` as reports name it (text, ``None`` where there is none),
    read by the readers that read it for the write (``Columns`` as they are: the column options do
    not apply to them)."""
    if isinstance(rows, Columns):
        return [None if i is None else str(i) for i in rows.ids]
    if isinstance(rows, list):
        reader = DictReader.from_spec(spec)
        ids = (reader.read_id(row) for row in rows)
        return [None if i is None else str(i) for i in ids]
    return arrow_ids(rows, spec)


def is_pandas(obj: Any) -> bool:
    return type(obj).__module__.startswith("pandas") and type(obj).__name__ == "DataFrame"


def pandas_table(frame: Any) -> pa.Table | None:
    """How a write reads a pandas DataFrame: as Arrow, or ``None`` where Arrow cannot type its cells (2-d
    numpy arrays as multi-vectors, a column of mixed kinds): then as its rows as dicts (``input_chunks``).
    The one decision, so that dead letters read the frame as the write did."""
    import pyarrow as pa

    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except pa.ArrowException:
        return None


def _chunks(data: Any) -> Iterator[Any]:
    """Arrow record batches and ``Columns`` as they are; dicts and records in lists of ``DICT_CHUNK_ROWS``."""
    if isinstance(data, Columns):
        yield data
        return
    if is_arrow(data):
        yield from arrow_batches(data)
        return
    if isinstance(data, Mapping | VectorRecord):
        raise ConfigError("upsert() takes an iterable of rows, not a single row: wrap it in a list")
    if is_pandas(data):
        table = pandas_table(data)
        if table is None:
            # read as dicts, as the same rows given as records are, so a cell no reader takes fails its
            # row, naming its column, instead of the whole write
            yield from _chunked(_pandas_records(data))
            return
        yield from arrow_batches(table)
        return
    if not isinstance(data, Iterable):
        raise ConfigError(
            f"upsert() cannot read {type(data).__name__}: give a pyarrow Table/RecordBatch or dicts"
        )
    yield from _chunked(data)


def _pandas_records(frame: Any) -> Iterator[dict[str, Any]]:
    """A DataFrame's rows as dicts, a missing value (NaN, NaT, None) as ``None``, as Arrow reads it."""
    import pandas as pd

    names = [str(name) for name in frame.columns]
    for values in frame.itertuples(index=False, name=None):
        yield {
            name: None if _is_missing(pd, value) else value for name, value in zip(names, values, strict=True)
        }


def _is_missing(pd: Any, value: Any) -> bool:
    """A cell pandas counts as missing; an array cell never is (its elements are the readers' to judge)."""
    if value is None:
        return True
    if isinstance(value, np.ndarray | list | tuple | dict):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _chunked(data: Iterable[Any]) -> Iterator[Any]:
    """An iterable's items: Arrow batches and ``Columns`` as they are, dicts and records in lists."""
    rows: list[Mapping[str, Any]] = []
    for item in data:
        if is_arrow(item) or isinstance(item, Columns):
            if rows:
                yield rows
                rows = []
            if isinstance(item, Columns):
                yield item
            else:
                yield from arrow_batches(item)
            continue
        if isinstance(item, VectorRecord):
            item = item.to_dict()
        elif not isinstance(item, Mapping):
            raise ConfigError(
                f"upsert() rows must be dicts, VectorRecords or Arrow batches, not {type(item).__name__}"
            )
        rows.append(item)
        if len(rows) >= DICT_CHUNK_ROWS:
            yield rows
            rows = []
    if rows:
        yield rows
