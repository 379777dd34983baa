"""Arrow text that is not valid UTF-8: found column by column, refused row by row.

Arrow's string types promise UTF-8, but nothing checks what a producer puts in them: Spark's JSON and
CSV readers hand over a Latin-1 byte as it is, and ``to_pylist`` then raises ``UnicodeDecodeError`` for
the whole batch. ``checked_text`` validates a column once (in C, about 40 µs for 10,000 titles) and only
when that fails reads its values as bytes to find the rows at fault, at any depth (a struct's field, a
list's item, a map's key or value). Those rows' text is made readable (the bad bytes as ``\\xe9``), so a
report can name their ids, and each is refused naming its column. ``readable_pylist`` (dead letters as
dicts) keeps such text as the row's own bytes instead: a letter holds the row as it came, and text made up
there would be stored as it is once the letter is written again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["checked_text", "is_text", "not_utf8_reason", "readable_pylist", "without_views"]


def not_utf8_reason(column: str) -> str:
    return f"column {column!r}: text is not valid UTF-8"


def checked_text(column: pa.Array | pa.ChunkedArray, name: str) -> tuple[pa.Array, dict[int, str]]:
    """``column`` as one array whose text is valid UTF-8, and the rows whose text was not (with why);
    ``column`` itself where all of it is (the usual case: one validation, no copy)."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    try:
        column.validate(full=True)
        return column, {}
    except pa.ArrowInvalid:
        pass
    typ = column.type
    storage = column.storage if isinstance(column, pa.ExtensionArray) else column
    if pa.types.is_dictionary(storage.type):  # its text lives in the dictionary: read each row's own
        storage = storage.cast(storage.type.value_type)
    as_bytes = _as_binary(storage.type)
    if as_bytes == storage.type:  # invalid for another reason than text: the readers say so
        return column, {}
    refused: dict[int, str] = {}
    values = []
    for i, value in enumerate(storage.cast(as_bytes).to_pylist()):
        bad: list[bool] = []
        values.append(_decoded(value, storage.type, bad))
        if bad:
            refused[i] = not_utf8_reason(name)
    if not refused:
        return column, {}
    readable = pa.array(values, type=storage.type)
    if isinstance(column, pa.ExtensionArray):
        return pa.ExtensionArray.from_storage(typ, readable), refused
    return readable, refused


def readable_pylist(rows: pa.RecordBatch | pa.Table) -> list[dict[str, Any]]:
    """``rows.to_pylist()``, where text that is not UTF-8 is the row's own bytes: a ``str`` cannot hold it,
    and one such cell made ``to_pylist`` raise for every row (the dead letters of it). Bytes, not escaped
    text: a letter written again then fails as its row did, instead of storing text made up here."""
    try:
        values: list[dict[str, Any]] = rows.to_pylist()
        return values
    except UnicodeDecodeError:
        names = rows.schema.names
        columns = [_pylist(rows.column(i)) for i in range(len(names))]
        return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _pylist(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """``column.to_pylist()``, text that is not UTF-8 as its bytes (at any depth)."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    try:
        values: list[Any] = column.to_pylist()
        return values
    except UnicodeDecodeError:
        pass
    storage = column.storage if isinstance(column, pa.ExtensionArray) else column
    if pa.types.is_dictionary(storage.type):
        storage = storage.cast(storage.type.value_type)
    return [
        _decoded(value, storage.type, [], keep_bytes=True)
        for value in storage.cast(_as_binary(storage.type)).to_pylist()
    ]


def is_text(typ: pa.DataType) -> bool:
    """Whether ``typ`` is one of Arrow's string types (``string``, ``large_string``, ``string_view``)."""
    import pyarrow.types as pt

    return bool(pt.is_string(typ) or pt.is_large_string(typ) or pt.is_string_view(typ))


def without_views(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with each ``string_view`` or ``binary_view`` at any depth the large type of the same values:
    Arrow has no ``take`` for views, and the embedding stage takes rows (a view column failed the whole
    write with ``ArrowNotImplementedError``)."""
    import pyarrow as pa

    types = [_viewless(field.type) for field in batch.schema]
    if all(typ == field.type for typ, field in zip(types, batch.schema, strict=True)):
        return batch
    columns = [column.cast(typ) for column, typ in zip(batch.columns, types, strict=True)]
    return pa.RecordBatch.from_arrays(
        columns,
        schema=pa.schema(
            [field.with_type(typ) for field, typ in zip(batch.schema, types, strict=True)],
            batch.schema.metadata,
        ),
    )


def _viewless(typ: pa.DataType) -> pa.DataType:
    """``typ`` with each view type at any depth its large type."""
    import pyarrow as pa
    import pyarrow.types as pt

    def leaf(typ: pa.DataType) -> pa.DataType:
        if pt.is_string_view(typ):
            return pa.large_string()
        return pa.large_binary() if pt.is_binary_view(typ) else typ

    return _each_leaf(typ, leaf)


def _as_binary(typ: pa.DataType) -> pa.DataType:
    """``typ`` with each text type at any depth the binary type of the same layout (a cast that copies
    nothing and checks nothing)."""
    import pyarrow as pa
    import pyarrow.types as pt

    def leaf(typ: pa.DataType) -> pa.DataType:
        if pt.is_string(typ):
            return pa.binary()
        if pt.is_large_string(typ):
            return pa.large_binary()
        return pa.binary_view() if pt.is_string_view(typ) else typ

    return _each_leaf(typ, leaf)


def _each_leaf(typ: pa.DataType, leaf: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``typ`` with ``leaf`` applied to each type inside its structs, maps and lists, at any depth."""
    import pyarrow as pa
    import pyarrow.types as pt

    if pt.is_struct(typ):
        return pa.struct([field.with_type(_each_leaf(field.type, leaf)) for field in typ])
    if pt.is_map(typ):
        return pa.map_(
            typ.key_field.with_type(_each_leaf(typ.key_type, leaf)),
            typ.item_field.with_type(_each_leaf(typ.item_type, leaf)),
        )
    if pt.is_list(typ) or pt.is_large_list(typ) or pt.is_fixed_size_list(typ):
        field = typ.value_field.with_type(_each_leaf(typ.value_type, leaf))
        if pt.is_fixed_size_list(typ):
            return pa.list_(field, typ.list_size)
        return pa.large_list(field) if pt.is_large_list(typ) else pa.list_(field)
    return leaf(typ)


def _decoded(value: Any, typ: pa.DataType, bad: list[bool], keep_bytes: bool = False) -> Any:
    """``value`` (read as ``_as_binary(typ)``) with its text decoded; appends to ``bad`` for each text
    that is not UTF-8, decoded with its bad bytes escaped (``keep_bytes``: left as its bytes)."""
    import pyarrow.types as pt

    if value is None:
        return None
    if is_text(typ):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(True)
            return value if keep_bytes else value.decode("utf-8", "backslashreplace")
    if pt.is_struct(typ):
        return {field.name: _decoded(value[field.name], field.type, bad, keep_bytes) for field in typ}
    if pt.is_map(typ):
        return [
            (_decoded(k, typ.key_type, bad, keep_bytes), _decoded(v, typ.item_type, bad, keep_bytes))
            for k, v in value
        ]
    if pt.is_list(typ) or pt.is_large_list(typ) or pt.is_fixed_size_list(typ):
        return [_decoded(item, typ.value_type, bad, keep_bytes) for item in value]
    return value
