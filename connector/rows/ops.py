"""What to do with each row: upsert it, or delete its id. The op column's values, read and checked.

Option ``op_column`` names the column (a dict key, an Arrow column; for ``Columns``, the Beam sink's
rows, a key of each row's metadata, ``op`` unless the option names another) whose value says what a
row is for. The spellings, in any case:

- ``upsert``, ``insert``, ``update``, ``update_postimage``: upsert the row (what every row is without
  the option; a row whose op is null, or that has no op key, is one too);
- ``delete``: delete the row's id, in the row's namespace. A delete row needs an id and nothing else:
  its vector, sparse vector and metadata are not read, so a null or malformed vector is no fault.

Any other value fails its row (``Invalid``), with a reason naming the value; an op column that holds
no strings is a ``ConfigError`` before any row is sent. Ops are kept per row as ``np.int8`` codes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CODES",
    "DEFAULT_OP_KEY",
    "DELETE",
    "OPS",
    "SPELLINGS",
    "UPSERT",
    "DeleteMark",
    "Op",
    "arrow_ops",
    "bad_op",
    "codes_of",
    "op_of",
]

Op = Literal["upsert", "delete"]
UPSERT: Op = "upsert"
DELETE: Op = "delete"
OPS: tuple[Op, Op] = (UPSERT, DELETE)  # by code: 0 upsert, 1 delete
CODES = {UPSERT: 0, DELETE: 1}
DEFAULT_OP_KEY = "op"  # where the Beam sink's elements and ``Columns`` rows say their op, by default


class DeleteMark(dict[str, Any]):
    """The metadata of a row read as a delete: how rows carry their op from a reader to
    ``prepare_columns`` (metadata is what every step between them keeps, the embedding stage's and a
    Beam coder's too). A type of its own, so that a row's own metadata never reads as an op (an ``op`` key
    there is data); empty, as a delete's metadata is never read; a class, so a pickled one is one still."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return True  # something to carry: a batch that keeps only rows with metadata keeps its marks


SPELLINGS: Mapping[str, Op] = {
    "upsert": UPSERT,
    "insert": UPSERT,
    "update": UPSERT,
    "update_postimage": UPSERT,  # a Delta change feed's new image of an updated row
    "delete": DELETE,
}
_INVALID = -1


def op_of(value: Any) -> Op | None:
    """The op a value names (``None`` and a missing value: upsert); ``None`` if it names none."""
    if value is None:
        return UPSERT
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    return SPELLINGS.get(value.lower())


def bad_op(value: Any, where: str) -> str:
    """The reason a row with this op value fails (``where``: the column or key it came from)."""
    return f"op {value!r} (column {where!r}) is not one of {', '.join(SPELLINGS)} (in any case)"


def arrow_ops(column: pa.Array | pa.ChunkedArray, name: str) -> tuple[np.ndarray, dict[int, str]]:
    """Per row of an Arrow string column: its op code, and the rows whose value names no op (with why).

    The column's distinct values are read once, not row by row. ``ConfigError`` for a column that holds
    no strings."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.types as pt

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    typ = column.type
    if pt.is_dictionary(typ):
        column, typ = column.cast(typ.value_type), typ.value_type
    if pt.is_string_view(typ) or pt.is_large_string(typ) or pt.is_null(typ):
        column, typ = column.cast(pa.string()), pa.string()
    if not pt.is_string(typ):
        raise ConfigError(
            f"option op_column: column {name!r} has type {typ}; expected strings ({', '.join(SPELLINGS)})"
        )
    n = len(column)
    if n == 0 or column.null_count == n:
        return np.zeros(n, dtype=np.int8), {}
    encoded = pc.dictionary_encode(column)
    values = encoded.dictionary.to_pylist()
    table = np.array([_code(v) for v in values], dtype=np.int8)
    indices = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
    codes = table[indices] if len(table) else np.zeros(n, dtype=np.int8)
    if column.null_count:
        codes[column.is_null().to_numpy(zero_copy_only=False)] = CODES[UPSERT]
    refused = {int(i): bad_op(values[indices[i]], name) for i in np.flatnonzero(codes == _INVALID)}
    codes[codes == _INVALID] = CODES[UPSERT]  # refused anyway; the code must index OPS
    return codes, refused


def codes_of(values: Sequence[Any], name: str) -> tuple[np.ndarray, dict[int, str]]:
    """Per value: its op code, and the rows whose value names no op (with why)."""
    codes = np.zeros(len(values), dtype=np.int8)
    refused: dict[int, str] = {}
    for i, value in enumerate(values):
        op = op_of(value)
        if op is None:
            refused[i] = bad_op(value, name)
        elif op is DELETE:
            codes[i] = 1
    return codes, refused


def _code(value: str | None) -> int:
    op = op_of(value)
    return _INVALID if op is None else CODES[op]
