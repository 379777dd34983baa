"""Dead letters: the rows a write could not store, as the caller gave them, each with the reason.

``dead_letters(data, failures, spec)`` is the one place a write's failures become rows again: for
``Client.dead_letters``, Spark's dead-letter files and Beam's ``failed`` output alike. A failure names
its rows by position in the write's input (``BatchFailure.positions``), and ``data`` is read again as
the write read it (``rows.input_chunks``), so each letter holds its own row whatever the id is:
repeated, missing, or held in another form than the report spells it (a UUID's 16 bytes).

A letter is the reason (``id``, ``error``, ``error_type``, ``retryable``, ``attempts``) followed by
every column of the row as it came. The letter's ``id`` is the row's own id where the id column is named
``id`` and the letter has its row: its value and type (an int stays an int, a null stays null), so a
fixed letter written again writes the same row (Qdrant's point 5, not a point for the text "5").
Otherwise it is the id as the report names it, text or null. Any other column named like a field of
the reason is kept with a ``row_`` prefix (``row_error``), so nothing of the row is lost; so is a column
already named so (``row_error`` becomes ``row_row_error``), so every name of the letter says which column
of the row it holds.

``rows_from_letters(letters, id_column)`` undoes that: the reason dropped (the ``id`` kept where it is the
row's own), each prefixed name given back its own, so a fixed letter written again writes the row it came
from, not the reason as metadata. ``row_columns`` is its rule, shared by Spark's letter files
(``vectordb.spark.rows_from_letters``), whose ``error`` holds ``error_type`` too.

Arrow input (a ``Table`` or ``RecordBatch``, or a pandas DataFrame, which a write reads as Arrow)
gives a ``pyarrow.Table`` whose row columns keep their types; any other input gives a list of dicts (a
DataFrame whose cells Arrow cannot type, which a write reads as its rows as dicts, among them, each row's
cells as they are, a missing one as ``None``):
a mapping as it was (the Beam sink hands its elements, as read, in this form), an Arrow row as
``to_pylist`` reads it, a ``Columns`` row (written without the rows they came from) in the client's
dict form (``id``, ``values``, ``sparse_values``, ``metadata``, ``namespace``, and ``op``
for a delete: the op Columns carry in their metadata; named vectors as ``vectors``, name -> list, and
multi-vectors as ``multi_vectors``, name -> list of lists). Arrow and dict rows keep every column, their
named vectors and multi-vectors among them.

Which op failed is the row's own: its op column (option ``op_column``) is among its columns, whole,
and a ``Columns`` row says ``op``; the report's ``BatchFailure.op`` says it too.

Bytes stay bytes, the row's own: a binary column's, and Arrow text that is not UTF-8 (a Latin-1 byte) in
letters as dicts, so a letter written again fails as its row did instead of storing text made up for it.
JSON text has no bytes: ``json_letter`` (Beam's ``dead_letter_path`` files) writes each as
``{"base64": "..."}`` and says so in the letter (``"bytes_as": "base64"``, after the reason; a row column
of that name gets the ``row_`` prefix), and ``rows_from_letters`` gives the bytes back. ``json_line`` is
a letter as one line of such a file: text UTF-8 cannot carry (a lone surrogate, ``"\\ud800"``), in a
value or a key, as JSON's escape, which ``json.loads`` reads back as it was.

A failure a database reply named by id alone (no positions) is matched to the first row of the input
with that id that no other letter holds, in input order. Rows a failure only counts (``unnamed``)
have no letter.
"""

from __future__ import annotations

import base64
import datetime
import json
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import orjson

from .errors import ConfigError
from .options import all_utf8
from .report import BatchFailure, WriteReport
from .rows import Columns, ColumnSpec, input_chunks, is_arrow, reported_ids
from .rows.chunks import is_pandas, pandas_table
from .rows.ops import DELETE, OPS, DeleteMark
from .rows.text import readable_pylist

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "BYTES_FIELD",
    "LETTER_FILES",
    "REASON_FIELDS",
    "dead_letters",
    "json_letter",
    "json_line",
    "letter_files_of_a_run",
    "letter_with_row",
    "row_columns",
    "rows_from_letters",
]

REASON_FIELDS = ("id", "error", "error_type", "retryable", "attempts")
LETTER_FILES = "dead-letters"  # the names of letter files (JSON Lines) in option dead_letter_path begin so
BYTES_FIELD = "bytes_as"  # in a letter made JSON text (json_letter): how its bytes are kept
_BASE64 = "base64"
_DICT = "dict"
_LETTER_FIELDS = (*REASON_FIELDS, BYTES_FIELD)


def letter_files_of_a_run() -> str:
    """The start of one run's (a Beam pipeline's, a plain client's write's) letter file names in
    ``dead_letter_path``: ``dead-letters-<UTC time>-<random>``, so names sort by run and no run overwrites or
    joins another's files."""
    return f"{LETTER_FILES}-{datetime.datetime.now(datetime.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


class _Letter(NamedTuple):
    failure: BatchFailure
    id: str | None
    position: int | None  # None: no row of the input


def dead_letters(
    data: Any,
    failures: WriteReport | Iterable[BatchFailure],
    spec: ColumnSpec | None = None,
    namespace: str | None = None,
) -> pa.Table | list[dict[str, Any]]:
    """The failed rows of a write of ``data``, one letter per failed row, in the order of ``failures``.

    Args:
        data: the write's input, read again as the write read it (a spent iterator has no rows left:
            its letters hold the reason alone).
        failures: the write's report, or its failures.
        spec: the write's column options (which column is the id); default: ``id``.
        namespace: the write's namespace, for ``Columns`` rows that name none.

    Returns:
        A ``pyarrow.Table`` for Arrow or pandas input, else a list of dicts (see the module docstring); a
        pandas frame Arrow cannot type (2-d numpy arrays as multi-vectors) gives dicts, its rows as the
        write read them.
    """
    spec = spec or ColumnSpec()
    if isinstance(failures, WriteReport):
        failures = failures.failures
    letters = [
        _Letter(failure, row_id, position)
        for failure in failures
        for row_id, position in zip(failure.ids, _positions(failure), strict=True)
    ]
    if any(letter.position is None for letter in letters):
        letters = _placed_by_id(data, letters, spec)
    id_column = None if spec.id_from else spec.id_column
    table = _as_table(data)
    if table is not None:
        return _arrow_letters(table, letters, id_column)
    return _dict_letters(data, letters, id_column, namespace)


def _positions(failure: BatchFailure) -> tuple[int | None, ...]:
    if len(failure.positions) == len(failure.ids):
        return failure.positions
    return (None,) * len(failure.ids)


def _placed_by_id(data: Any, letters: list[_Letter], spec: ColumnSpec) -> list[_Letter]:
    """Letters named by id alone, given the first row with that id no other letter holds."""
    held = {letter.position for letter in letters if letter.position is not None}
    wanted = {letter.id for letter in letters if letter.position is None}
    free: dict[str | None, deque[int]] = {}
    for chunk in input_chunks(data):
        for position, row_id in zip(chunk.positions.tolist(), reported_ids(chunk.rows, spec), strict=True):
            if row_id in wanted and position not in held:
                free.setdefault(row_id, deque()).append(position)
    placed = []
    for letter in letters:
        if letter.position is None:
            rows = free.get(letter.id)
            letter = letter._replace(position=rows.popleft() if rows else None)
        placed.append(letter)
    return placed


def _own_name(name: str, id_column: str | None) -> str:
    """A row column's name in the letter: ``id`` for the id column named ``id`` (the letter's ``id``)."""
    if name == "id" and id_column == "id":
        return name
    return f"row_{name}" if name in _LETTER_FIELDS or _prefixed(name) else name


def _prefixed(name: str) -> bool:
    """``row_error``, ``row_row_error``: a name ``_own_name`` gives a column named like the reason."""
    while name.startswith("row_"):
        name = name[4:]
        if name in _LETTER_FIELDS:
            return True
    return False


def _reason(letter: _Letter) -> dict[str, Any]:
    failure = letter.failure
    return {
        "id": letter.id,
        "error": failure.error,
        "error_type": failure.error_type,
        "retryable": failure.retryable,
        "attempts": failure.attempts,
    }


# -- letters back into rows -----------------------------------------------------------------------


def row_columns(names: Iterable[str], id_column: str | None = "id") -> list[tuple[int, str]]:
    """Which columns of letters named ``names`` hold the row, as ``(position, the row's name)``.

    The reason goes (``id`` too, unless the write's id column is ``id``: then it is the row's own id);
    a prefixed name gets its own back (``row_error`` -> ``error``).

    Raises:
        ConfigError: two columns would take one name: letters of a write whose id column was not ``id``
            (they hold ``row_id``), given ``id_column="id"``.
    """
    kept: dict[str, tuple[int, str]] = {}
    for position, name in enumerate(names):
        if name in _LETTER_FIELDS and not (name == "id" and id_column == "id"):
            continue
        own = name[4:] if _prefixed(name) else name
        if own in kept:  # one would overwrite the other
            raise ConfigError(
                f"dead letters: columns {kept[own][1]!r} and {name!r} both hold the row's {own!r}: these "
                f"letters are not of a write whose id column is {id_column!r} (option id_column)"
            )
        kept[own] = (position, name)
    return [(position, own) for own, (position, _) in kept.items()]


def rows_from_letters(letters: Any, id_column: str | None = "id") -> Any:
    """The rows dead letters came from, to write again once fixed: a letter written as it is would store
    its reason (``error``, ``attempts``...) as metadata, and a row's ``error`` as ``row_error``.

    Args:
        letters: one letter (a dict: a Beam ``failed`` element, or a line of Beam's ``dead_letter_path``
            files read with ``json.loads``: its bytes, kept as ``json_letter`` says, come back as bytes), a
            list of them (``Client.dead_letters`` of dict rows), or a ``pyarrow.Table``/``RecordBatch`` or pandas DataFrame of them (of Arrow or
            pandas rows). Spark's letter files: ``vectordb.spark.rows_from_letters``.
        id_column: option ``id_column`` of the write that made the letters; ``None`` where it made ids
            from ``id_from`` (the letter's ``id`` is then the report's text, not the row's).

    Returns:
        The rows in the letters' form: a dict, a list of dicts, a ``Table``/``RecordBatch`` or a DataFrame.
        A letter whose row was not found gives its id alone, or nothing.

    Raises:
        ConfigError: the letters do not fit ``id_column`` (see ``row_columns``), naming the letter.
    """
    if isinstance(letters, Mapping):
        return _dict_row(letters, id_column)
    if is_arrow(letters):
        taken = row_columns(letters.schema.names, id_column)
        return letters.select([p for p, _ in taken]).rename_columns([own for _, own in taken])
    if is_pandas(letters):
        taken = row_columns([str(name) for name in letters.columns], id_column)
        return letters.iloc[:, [p for p, _ in taken]].set_axis([own for _, own in taken], axis=1)
    rows = []
    for i, letter in enumerate(letters):
        try:
            rows.append(_dict_row(letter, id_column))
        except ConfigError as exc:
            raise ConfigError(f"letter {i}: {exc}") from None
    return rows


def _dict_row(letter: Mapping[str, Any], id_column: str | None) -> dict[str, Any]:
    names = list(letter)
    row = {own: letter[names[p]] for p, own in row_columns(names, id_column)}
    kept = letter.get(BYTES_FIELD)
    if kept is None:
        return row
    if kept != _BASE64:
        raise ConfigError(
            f"{BYTES_FIELD} is {kept!r}: the letter's bytes are kept in a form this version does not know"
        )
    return {name: _untagged(value) for name, value in row.items()}


# -- letters as JSON text --------------------------------------------------------------------------


def json_letter(letter: Mapping[str, Any]) -> dict[str, Any]:
    """``letter`` ready for JSON text, which has no bytes: each bytes value, at any depth (a binary id's 16
    bytes, Arrow text that is not UTF-8), as ``{"base64": "..."}``, and the letter saying so after its
    reason (``"bytes_as": "base64"``), so ``rows_from_letters`` gives the row its bytes back (a row's own
    mapping of the one key ``base64`` or ``dict`` is then kept as ``{"dict": mapping}``). Written with
    ``default=str`` they were their Python literal (``"b'caf\\xe9'"``): text, stored as such once written
    again. ``letter`` itself where it holds no bytes."""
    found: list[bool] = []
    values = {name: _tagged(value, found) for name, value in letter.items()}
    if not found:
        return dict(letter)
    reason = {name: values.pop(name) for name in REASON_FIELDS if name in values}
    return {**reason, BYTES_FIELD: _BASE64, **values}


def json_line(letter: Mapping[str, Any]) -> str:
    """``letter`` as one line of JSON text, as ``dead_letter_path`` files hold it: ``json_letter``'s form,
    written by orjson (a numpy array as a list, NaN and infinity as ``null``, any other value JSON has no
    form for as its ``str``). What orjson refuses is written as the stdlib's ``json`` writes it, which
    ``json.loads`` and ``vectordb-beam`` read back as it was: text holding a lone surrogate as its escape
    (``"\\ud800"``), a key's as a value's, and an int beyond 64 bits as its digits; a key that is not
    text (a metadata dict's ``1``) as its ``str``, as a letter's own keys are (``letter_with_row``)."""
    jsonable = json_letter(letter)
    try:
        return _orjson_text(jsonable)
    except TypeError:  # a lone surrogate, an int beyond 64 bits, a key that is not text
        return _orjson_text(_escaped(jsonable))


def _orjson_text(value: Any) -> str:
    return orjson.dumps(value, default=str, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def _escaped(value: Any) -> Any:
    """``value`` with its texts and ints as ``orjson.Fragment``s of the stdlib's ``json`` text, and a
    mapping with a key orjson cannot write (it writes keys itself) as a ``Fragment`` of its whole text."""
    if isinstance(value, Mapping):
        mapping = {key: _escaped(item) for key, item in value.items()}
        if all(type(key) is str for key in mapping) and all_utf8(list(mapping)):
            return mapping
        items = (f"{json.dumps(str(key))}:{_orjson_text(item)}" for key, item in mapping.items())
        return orjson.Fragment("{" + ",".join(items) + "}")
    if isinstance(value, list | tuple):
        return [_escaped(item) for item in value]
    if isinstance(value, str | int) and not isinstance(value, bool):
        return orjson.Fragment(json.dumps(value))
    return value


def _tagged(value: Any, found: list[bool]) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        found.append(True)
        return {_BASE64: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        mapping = {key: _tagged(item, found) for key, item in value.items()}
        # a row's own one-key mapping that reads as a tag is wrapped, so it is not taken for one
        return {_DICT: mapping} if len(mapping) == 1 and next(iter(mapping)) in (_BASE64, _DICT) else mapping
    if isinstance(value, list | tuple):
        return [_tagged(item, found) for item in value]
    return value


def _untagged(value: Any) -> Any:
    """``_tagged`` undone: in a letter marked ``bytes_as: base64`` a one-key ``{"base64": text}`` is bytes,
    and a one-key ``{"dict": mapping}`` the row's own mapping."""
    if isinstance(value, Mapping):
        if len(value) == 1 and isinstance(value.get(_BASE64), str):
            return base64.b64decode(value[_BASE64])
        inner = value.get(_DICT) if len(value) == 1 else None
        mapping = inner if isinstance(inner, Mapping) else value
        return {key: _untagged(item) for key, item in mapping.items()}
    if isinstance(value, list):
        return [_untagged(item) for item in value]
    return value


# -- Arrow ---------------------------------------------------------------------------------------


def _as_table(data: Any) -> pa.Table | None:
    """``data`` as one Table where the write read it as Arrow (a pandas frame Arrow cannot type is read as
    dicts, ``pandas_table``); ``None`` otherwise."""
    if is_pandas(data):
        return pandas_table(data)  # as the write read it
    if not is_arrow(data):
        return None
    import pyarrow as pa

    return pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data


def _arrow_letters(table: pa.Table, letters: list[_Letter], id_column: str | None) -> pa.Table:
    import pyarrow as pa

    n = table.num_rows
    at = [p if p is not None and 0 <= p < n else None for p in (letter.position for letter in letters)]
    rows = table.take(pa.array(at, type=pa.int64()))  # a null index (no row) gives a null row
    failures = [letter.failure for letter in letters]
    columns: dict[str, Any] = {
        "id": _arrow_ids(rows, letters, at, id_column),
        "error": pa.array([f.error for f in failures], type=pa.string()),
        "error_type": pa.array([f.error_type for f in failures], type=pa.string()),
        "retryable": pa.array([f.retryable for f in failures], type=pa.bool_()),
        "attempts": pa.array([f.attempts for f in failures], type=pa.int32()),
    }
    for name in table.schema.names:
        target = _own_name(name, id_column)
        if target != "id":
            columns[target] = rows.column(name)
    return pa.table(columns)


def _arrow_ids(rows: pa.Table, letters: list[_Letter], at: list[int | None], id_column: str | None) -> Any:
    """The letters' ``id`` column: the rows' own id column, of its type, where it is named ``id`` (its type
    whatever the letters, so one Spark task's letter file keeps one schema); a letter with no row has the
    report's id in that type where it converts, else null. Otherwise the report's ids, as text."""
    import pyarrow as pa

    texts = pa.array([letter.id for letter in letters], type=pa.string())
    if id_column != "id" or "id" not in rows.schema.names:
        return texts
    own = rows.column("id")
    if all(p is not None for p in at):
        return own
    values = own.to_pylist()
    for i, p in enumerate(at):
        if p is None and texts[i].is_valid:
            try:
                values[i] = texts[i : i + 1].cast(own.type)[0].as_py()
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                values[i] = None
    return pa.array(values, type=own.type)


# -- dicts and Columns -----------------------------------------------------------------------------


def _dict_letters(
    data: Any, letters: list[_Letter], id_column: str | None, namespace: str | None
) -> list[dict[str, Any]]:
    wanted = {letter.position for letter in letters if letter.position is not None}
    found: dict[int, tuple[dict[str, Any], str | None]] = {}  # position -> (row, its id column)
    for chunk in input_chunks(data):
        start = int(chunk.positions[0]) if len(chunk.positions) else 0
        here = [p for p in range(start, start + len(chunk.positions)) if p in wanted]
        if here:
            rows = _records(chunk.rows, [p - start for p in here], namespace)
            own_id = "id" if isinstance(chunk.rows, Columns) else id_column
            found.update((p, (row, own_id)) for p, row in zip(here, rows, strict=True))
    out = []
    for letter in letters:
        row, own_id = found.get(letter.position, ({}, None)) if letter.position is not None else ({}, None)
        out.append(letter_with_row(_reason(letter), row, own_id))
    return out


def letter_with_row(reason: dict[str, Any], row: Mapping[Any, Any], id_column: str | None) -> dict[str, Any]:
    """A dict row's letter: ``reason`` (``id``, ``error``, ...) then the row's columns, named as the
    module docstring says (keys as text: a mapping's keys need not be)."""
    letter = dict(reason)
    for name, value in row.items():
        # the row's id, of its type, replaces the report's text: fed back, the letter writes the same row
        letter[_own_name(str(name), id_column)] = value
    return letter


def _records(rows: Any, indices: list[int], namespace: str | None) -> list[dict[str, Any]]:
    if isinstance(rows, list):
        return [dict(rows[i]) for i in indices]
    if isinstance(rows, Columns):
        return [_columns_record(rows, i, namespace) for i in indices]
    import pyarrow as pa

    return readable_pylist(rows.take(pa.array(indices, type=pa.int64())))  # text not UTF-8 as its bytes


def _columns_record(cols: Columns, i: int, namespace: str | None) -> dict[str, Any]:
    """Row ``i`` in the client's dict form (``id``, ``values``, ``sparse_values``, ``metadata``,
    ``namespace``; ``op`` where the rows carry ops, or this one is marked a delete)."""
    record: dict[str, Any] = {"id": cols.ids[i]}
    if not cols.null_vector[i]:
        record["values"] = cols.flat[cols.offsets[i] : cols.offsets[i + 1]].tolist()
    vectors = {
        name: column.flat[column.offsets[i] : column.offsets[i + 1]].tolist()
        for name, column in cols.named.items()
        if not column.nulls[i]
    }
    if vectors:
        record["vectors"] = vectors
    multi = {
        name: [
            None if column.inner_nulls[j] else column.flat[start : start + column.lengths[j]].tolist()
            for j, start in zip(
                range(column.outer[i], column.outer[i + 1]),
                column.starts[column.outer[i] : column.outer[i + 1]].tolist(),
                strict=True,
            )
        ]
        for name, column in cols.multi.items()
        if not column.nulls[i]
    }
    if multi:
        record["multi_vectors"] = multi
    sparse = None if cols.sparse is None else cols.sparse[i]
    if sparse is not None:
        indices, values = (sparse["indices"], sparse["values"]) if isinstance(sparse, Mapping) else sparse
        record["sparse_values"] = {
            "indices": np.asarray(indices).tolist(),
            "values": np.asarray(values).tolist(),
        }
    metadata = cols.metadata[i] if cols.metadata is not None else None
    if cols.ops is not None:
        record["op"] = OPS[int(cols.ops[i])]
    elif type(metadata) is DeleteMark:
        record["op"], metadata = DELETE, None
    if metadata:
        record["metadata"] = metadata
    row_namespace = cols.namespaces[i] if cols.namespaces is not None else namespace
    if row_namespace is not None:
        record["namespace"] = row_namespace
    return record
