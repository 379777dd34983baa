"""The one place rows are checked: ids, vectors, sparse vectors, metadata, and the batches they make."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, compress, repeat
from operator import is_
from typing import Any, Protocol

import numpy as np
import orjson

from ..options import all_utf8
from ..report import BatchFailure
from .ops import CODES, DELETE, UPSERT
from .text import not_utf8_reason
from .types import (
    MAX_SPARSE_INDEX,
    Columns,
    DenseColumn,
    DimensionState,
    MultiColumn,
    MultiVectors,
    Prepared,
    RowBatch,
    RowRules,
    beam_instant,
    offsets_of,
    plain_datetime,
    plain_datetime64,
    ranges,
)

__all__ = ["NameFaults", "assemble", "iso_duration", "metadata_json", "metadata_json_len", "metadata_size"]


class NameFaults(str):
    """A reader's reason for a row it could read but under some vector names (``names``): every such
    name's reason, joined by "; " in the columns' order. The checks add theirs about everything else
    of the row (its other names, its metadata), so the row fails once with every reason."""

    names: frozenset[str]

    def __new__(cls, reason: str, names: Iterable[str] = ()) -> NameFaults:
        self = super().__new__(cls, reason)
        self.names = frozenset(names)
        return self

    @classmethod
    def joined(cls, faults: Sequence[tuple[str, str]]) -> NameFaults:
        """The reason of a row's (name, reason) faults, in the order given."""
        return cls("; ".join(reason for _, reason in faults), (name for name, _ in faults))


def assemble(
    cols: Columns,
    rules: RowRules,
    dim: DimensionState,
    namespace: str | None,
    refused: Mapping[int, str] | None = None,
    positions: np.ndarray | None = None,
    ops: np.ndarray | None = None,
) -> Prepared:
    """The sendable batches of ``cols`` and a failure, with its reason, for every other row
    (``refused``: rows a reader already refused, and why; ``positions``: the rows' offsets in the
    write's input, default ``0 .. n-1``; ``ops``: each row's op code, ``rows.ops``, default every row
    an upsert). A delete row is checked for its id and namespace only: what it would store is not read."""
    n = cols.n
    if positions is None:
        positions = np.arange(n, dtype=np.int64)
    reasons: dict[int, str] = dict(refused or {})
    read_refused = set(reasons)  # a reader's reason stands alone: what it could not read is not checked,
    # but for a row it could read but under some names: the checks' reasons about the rest are added
    read_names = {row: reason.names for row, reason in reasons.items() if type(reason) is NameFaults}
    for read in read_names:
        reasons[read] = str(reasons[read])  # reports and letters hold plain text
    lengths = np.diff(cols.offsets)
    deletes = np.zeros(n, dtype=bool) if ops is None else ops == CODES[DELETE]
    upserts = ~deletes

    def refuse(rows: Iterable[int], reason: str, name: str | None = None) -> None:
        """Every check's reason for a row, joined: a row wrong under several names (or in its vectors and
        its metadata) says so at once, not one fix at a time (``name``: the vector name the reason is
        about; none about a name its reader refused, whose vector it could not read)."""
        for i in rows:
            row = int(i)
            had = reasons.get(row)
            if had is None:
                reasons[row] = reason
            elif had != reason and (
                row not in read_refused or ((names := read_names.get(row)) is not None and name not in names)
            ):
                reasons[row] = f"{had}; {reason}"

    # each row's key as the database knows it (``RowRules.row_keys``): a repeated key goes in generations
    keys = rules.row_keys(cols.ids)
    if cols.namespaces is not None and rules.namespaced:  # one id in two namespaces: two rows
        keys = [(rules.scope(ns), i) for ns, i in zip(cols.namespaces, keys, strict=True)]
    generations = None
    if not _ids_all_fine(cols.ids, keys, rules):  # the per-row walk only when something is wrong
        generations = _check_ids(cols.ids, keys, rules, refuse, reasons)

    # dense vectors
    has_sparse = None if cols.sparse is None else np.array([s is not None for s in cols.sparse], dtype=bool)
    absent = cols.null_vector | (lengths == 0)
    missing = absent & upserts
    if dim.named:  # every vector is named: the rows have no unnamed one to check
        _check_named(cols, dim, upserts, refuse)
        absent = np.ones(n, dtype=bool)
        missing = np.zeros(n, dtype=bool)
    if has_sparse is not None and rules.allow_sparse_only:
        missing_ok = missing & has_sparse
    else:
        missing_ok = np.zeros(n, dtype=bool)
    refuse(np.flatnonzero(missing & ~missing_ok), "null vector")
    present = ~absent & upserts
    if dim.value is None and present.any():
        dim.learn(lengths[present])
    dense_ok = present.copy()
    if dim.value is not None:
        wrong = present & (lengths != dim.value)
        for row in np.flatnonzero(wrong):
            refuse([int(row)], f"vector has {int(lengths[row])} dimensions; expected {dim.value}")
        dense_ok &= ~wrong
    finite = _finite_rows(cols.flat, cols.offsets, dense_ok)
    for row in np.flatnonzero(dense_ok & ~finite):  # the few bad rows: where, in each
        start = int(cols.offsets[row])
        values = cols.flat[start : start + int(lengths[row])]
        at = int(np.flatnonzero(~np.isfinite(values))[0])
        refuse([int(row)], _in_column(cols.vector_column, f"vector has NaN or infinity at index {at}"))

    # sparse vectors
    sparse_rows: list[tuple[np.ndarray, np.ndarray] | None] | None = None
    if cols.sparse is not None:
        sparse_rows = []
        for i, value in enumerate(cols.sparse):
            if deletes[i]:
                sparse_rows.append(None)
                continue
            parsed, problem = _check_sparse(value)
            if problem:
                refuse([i], _in_column(cols.sparse_column, problem))
            sparse_rows.append(parsed)

    # metadata: walked only when a row has some, or has None (two passes in C when every row has none);
    # a row orjson cannot write as it is (numpy and pandas values, datetimes, dataclasses: ``_FAST``), or
    # that holds a value of no JSON type of Python's own (an Enum, which orjson writes and no option
    # stops), has its values made plain (``_plain``)
    metadata = cols.metadata
    if metadata is not None and (any(metadata) or None in metadata):
        deleted = deletes.tolist()  # Python bools: no numpy scalar a row
        normalised: list[dict[str, Any] | None] | None = None  # a new list once a row's values change
        every_builtin = _batch_builtin_only(metadata)  # the usual batch: no row looked at twice
        for i, md in enumerate(metadata):
            if deleted[i]:
                continue
            if md is None:
                refuse([i], "metadata is not a JSON object")
                continue
            if not md:
                continue
            try:  # JSON's own types, the usual row: nothing to normalise, and the bytes the size is of
                encoded: bytes | None = orjson.dumps(md, option=_FAST)
            except TypeError:
                encoded = None
            if encoded is None or not (every_builtin or _builtin_only(list(md.values()))):
                plain = _plain_metadata(md)
                if isinstance(plain, str):
                    refuse([i], plain)
                    continue
                md, encoded = plain
                if md is not metadata[i]:
                    normalised = list(metadata) if normalised is None else normalised
                    normalised[i] = md
            if b"null" in encoded:  # orjson writes None, NaN and infinity as null: the rare row looked at
                if any(value is None for value in md.values()):
                    # a null value is a key left out, whatever form the metadata came in (a column's
                    # null is never read): every database stores the same, and none refuses it
                    md = {key: value for key, value in md.items() if value is not None}
                    encoded = metadata_json(md)
                    normalised = list(metadata) if normalised is None else normalised
                    normalised[i] = md
                if (where := _not_finite(md)) is not None:
                    refuse(
                        [i], f"metadata {where} is NaN or infinity, which JSON cannot hold (it would be null)"
                    )
                    continue
            # the JSON's length first: ``metadata_size`` is never more (a whole float's integer text is
            # shorter), so only a row over the limit is measured again
            size, limit = len(encoded), rules.max_metadata_bytes
            if limit is not None and size > limit and (size := metadata_size(md)) > limit:
                refuse([i], f"metadata is {size} bytes as JSON; the limit is {limit}")
        if normalised is not None:  # the caller's list is left as it was (dead letters read it again)
            cols = dataclasses.replace(cols, metadata=normalised)

    # namespaces: one test when every row has the write's (no walk over the rows)
    ns_values: list[Any] = [namespace] * n if cols.namespaces is None else cols.namespaces
    if cols.namespaces is None:
        if namespace is not None and not isinstance(namespace, str):
            refuse(range(n), f"namespace {namespace!r} is not a string")
        elif namespace is not None and not all_utf8([namespace]):
            refuse(range(n), NAMESPACE_SURROGATE)
    else:
        not_text: list[int] = []
        for i, ns in enumerate(ns_values):
            if ns is not None and not isinstance(ns, str):
                refuse([i], f"namespace {ns!r} is not a string")
                not_text.append(i)
            elif ns is not None and not all_utf8([ns]):
                refuse([i], NAMESPACE_SURROGATE)
        if not_text:  # a refused list or dict would make grouping by namespace raise TypeError for all
            ns_values = list(ns_values)
            for i in not_text:
                ns_values[i] = None

    return _group(
        cols,
        reasons,
        (upserts if dim.named else dense_ok) & _unrefused(n, reasons),
        sparse_rows,
        ns_values,
        dim,
        positions,
        generations,
        deletes,
        one_namespace=cols.namespaces is None,
    )


class _Refuse(Protocol):
    """``assemble``'s ``refuse``: a check's reason for rows (``name``: the vector name it is about)."""

    def __call__(self, rows: Iterable[int], reason: str, name: str | None = None, /) -> None: ...


def _in_column(column: str | None, reason: str) -> str:
    """``reason`` naming the input column it is about, when known."""
    return reason if column is None else f"column {column!r}: {reason}"


def _unrefused(n: int, reasons: Mapping[int, str]) -> np.ndarray:
    """Per row: not in ``reasons``."""
    out = np.ones(n, dtype=bool)
    if reasons:
        out[np.fromiter(reasons, dtype=np.int64, count=len(reasons))] = False
    return out


def _check_named(cols: Columns, dim: DimensionState, upserts: np.ndarray, refuse: _Refuse) -> None:
    """Every name's vectors of every upsert row: present, of the name's dimension (learnt per name by the
    dimension rule), finite; a multi-vector also non-empty, with no null vector and vectors of one length.
    A row failing under any name fails whole, each failing name in its reason (and its column, where known;
    a NaN by its index, in a multi-vector also its vector's)."""
    shapes: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # name -> (row's length, shape ok so far)
    for name, dense in cols.named.items():
        lengths = np.diff(dense.offsets)
        null = (dense.nulls | (lengths == 0)) & upserts
        refuse(np.flatnonzero(null), f"vector {name!r} is null", name)
        shapes[name] = (lengths, upserts & ~null)
    for name, multi in cols.multi.items():
        shapes[name] = _multi_shapes(name, multi, upserts, refuse)
    for name in dim.named:
        if name not in shapes:  # rows that came without it (Columns made elsewhere)
            refuse(np.flatnonzero(upserts), f"no vector {name!r} in the row", name)
    dim.learn_named({name: lengths[ok] for name, (lengths, ok) in shapes.items()})
    for name, (lengths, ok) in shapes.items():
        expected = dim.named.get(name)
        is_multi = name in cols.multi
        if expected is not None:
            wrong = ok & (lengths != expected)
            for row in np.flatnonzero(wrong):
                got = int(lengths[row])
                refuse(
                    [int(row)],
                    f"multi-vector {name!r} holds {got}-dimensional vectors; expected {expected}"
                    if is_multi
                    else f"vector {name!r} has {got} dimensions; expected {expected}",
                    name,
                )
            ok = ok & ~wrong
        column = cols.named_columns.get(name)
        named = f"{name!r}" if column is None else f"{name!r} (column {column!r})"
        if is_multi:
            multi = cols.multi[name]
            finite = _finite_multi(multi, len(ok))
            for row in np.flatnonzero(ok & ~finite):  # the few bad rows: which vector, and where in it
                j, at = _first_not_finite(multi, int(row))
                refuse(
                    [int(row)], f"multi-vector {named}: vector {j} has NaN or infinity at index {at}", name
                )
        else:
            dense = cols.named[name]
            finite = _finite_rows(dense.flat, dense.offsets, ok)
            for row in np.flatnonzero(ok & ~finite):
                values = dense.flat[int(dense.offsets[row]) : int(dense.offsets[row + 1])]
                at = int(np.flatnonzero(~np.isfinite(values))[0])
                refuse([int(row)], f"vector {named} has NaN or infinity at index {at}", name)


def _first_not_finite(multi: MultiColumn, row: int) -> tuple[int, int]:
    """(index of the vector in the row, index in that vector) of a row's first NaN or infinity."""
    first = int(multi.outer[row])
    for j in range(first, int(multi.outer[row + 1])):
        start = int(multi.starts[j])
        bad = np.flatnonzero(~np.isfinite(multi.flat[start : start + int(multi.lengths[j])]))
        if bad.size:
            return j - first, int(bad[0])
    return 0, 0  # not reached: _finite_multi found one in the row


def _multi_shapes(
    name: str, multi: MultiColumn, upserts: np.ndarray, refuse: _Refuse
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's vector length and whether its shape is sound (present, non-empty, no null or empty
    vector, one length); rows with an unsound shape are refused here. An empty vector (``[[]]``) fails its
    row as a dense ``[]`` does: kept, its length 0 could become the name's dimension."""
    n = len(multi.nulls)
    counts = np.diff(multi.outer)
    null = multi.nulls & upserts
    refuse(np.flatnonzero(null), f"multi-vector {name!r} is null", name)
    empty = (counts == 0) & upserts & ~null
    refuse(np.flatnonzero(empty), f"multi-vector {name!r} is empty", name)
    ok = upserts & ~null & ~empty
    row_length = np.zeros(n, dtype=np.int64)
    spans = np.flatnonzero(counts > 0)  # every non-empty row, null or not: each its own segment below
    if spans.size:
        at = multi.outer[spans]
        shortest = np.minimum.reduceat(multi.lengths, at)
        longest = np.maximum.reduceat(multi.lengths, at)
        holes = np.logical_or.reduceat(multi.inner_nulls, at)
        hollow = np.logical_or.reduceat((multi.lengths == 0) & ~multi.inner_nulls, at)
        row_length[spans] = shortest
        for flags, reason in ((holes, "a null vector"), (hollow, "an empty vector")):
            for k in np.flatnonzero(flags):
                row = int(spans[k])
                if ok[row]:
                    refuse([row], f"multi-vector {name!r} holds {reason}", name)
                    ok[row] = False
        for k in np.flatnonzero(shortest != longest):
            row = int(spans[k])
            if ok[row]:
                refuse(
                    [row],
                    f"multi-vector {name!r} holds vectors of different lengths "
                    f"({int(shortest[k])} to {int(longest[k])})",
                    name,
                )
                ok[row] = False
    return row_length, ok


def _finite_multi(multi: MultiColumn, n: int) -> np.ndarray:
    """Per row: every float of its vectors finite."""
    flat = multi.flat
    if _all_finite(flat):  # the usual case
        return np.ones(n, dtype=bool)
    bad = np.flatnonzero(~np.isfinite(flat))
    vector = np.searchsorted(multi.starts, bad, side="right") - 1
    inside = (vector >= 0) & (
        bad < multi.starts[np.maximum(vector, 0)] + multi.lengths[np.maximum(vector, 0)]
    )
    rows = np.searchsorted(multi.outer, vector[inside], side="right") - 1
    out = np.ones(n, dtype=bool)
    out[rows[(rows >= 0) & (rows < n)]] = False
    return out


def _ids_all_fine(ids: list[Any], keys: list[Any], rules: RowRules) -> bool:
    """True when every id is a non-empty string (or int) within the length limit and every key (the id,
    or (namespace, id)) is unique: the usual case."""
    if not ids:
        return True
    try:
        if len(set(keys)) != len(keys):
            return False
    except TypeError:  # an unhashable id: the walk refuses it
        return False
    types = set(map(type, ids))  # one pass in C, not a Python test per id
    if types == {str}:
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))  # one pass for both bounds
        longest = int(lengths.max())
        if rules.max_id_bytes is not None and 4 * longest > rules.max_id_bytes:
            return False  # one may be over the limit in bytes: the walk measures each
        return int(lengths.min()) > 0 and longest <= rules.max_id_length and all_utf8(ids)
    return types == {int}


NAMESPACE_SURROGATE = (
    "namespace holds a lone surrogate (text decoded with surrogateescape?), which UTF-8 cannot carry"
)


def _check_ids(
    ids: list[Any],
    keys: list[Any],
    rules: RowRules,
    refuse: Callable[[Iterable[int], str], None],
    reasons: dict[int, str],
) -> np.ndarray | None:
    """The per-row walk: missing, empty, too long and wrongly typed ids (a bool among them) are refused.

    Returns each row's generation, or ``None`` when every key is unique: the number of earlier
    rows with the same key (the id, or (namespace, id)). A repeated id is not refused: rows go
    to the database in generations, each after the one before, so the last occurrence wins.
    """
    seen: dict[Any, int] = {}
    generations = np.zeros(len(ids), dtype=np.int64)
    for i, key in enumerate(ids):
        if key is None:
            refuse([i], "missing id")
        elif isinstance(key, str):
            if not key:
                refuse([i], "empty id")
            elif len(key) > rules.max_id_length:
                refuse([i], f"id is {len(key)} characters long; the limit is {rules.max_id_length}")
            elif not all_utf8([key]):
                refuse(
                    [i],
                    "id holds a lone surrogate (text decoded with surrogateescape?), which UTF-8 cannot carry",
                )
            elif rules.max_id_bytes is not None and len(key.encode()) > rules.max_id_bytes:
                refuse(
                    [i],
                    f"id is {len(key.encode())} bytes long in UTF-8; the limit is {rules.max_id_bytes} bytes",
                )
        elif isinstance(key, bool):  # an int to Python: True would be the row of 1 (or, as text, of "True")
            refuse([i], f"id {key!r} is a boolean; ids are text or integers")
        elif not isinstance(key, int):
            refuse([i], f"id {key!r} is neither a string nor an integer")
        if i not in reasons:
            generations[i] = seen.get(keys[i], 0)
            seen[keys[i]] = int(generations[i]) + 1
    return generations if generations.any() else None


def metadata_json(metadata: dict[str, Any]) -> bytes:
    """A row's metadata as JSON, as the encoders write it: decimals as their text (a decimal's exact
    digits), durations as ISO 8601 (``iso_duration``); any other value JSON has no form for is a
    ``TypeError``, never its ``str()``."""
    return orjson.dumps(metadata, default=_json_text, option=orjson.OPT_SERIALIZE_NUMPY)


def _json_text(value: Any) -> str:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.timedelta):
        return iso_duration(value)
    raise TypeError(f"{type(value).__name__} has no JSON form")


def iso_duration(value: dt.timedelta) -> str:
    """A duration as ISO 8601 text, days and time (``P1DT2H3M4.5S``, ``PT0S``, ``-PT1S``): what a
    duration in metadata is written as, never Python's ``str()`` (``1 day, 2:03:04.500000``)."""
    sign = "-" if value < dt.timedelta(0) else ""
    value = abs(value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{seconds}.{value.microseconds:06d}".rstrip("0").rstrip(".")
    time = "".join(f"{amount}{unit}" for amount, unit in ((hours, "H"), (minutes, "M")) if amount) + (
        f"{text}S" if seconds or value.microseconds else ""
    )
    days = f"{value.days}D" if value.days else ""
    if not days and not time:
        time = "0S"
    return f"{sign}P{days}{'T' + time if time else ''}"


def metadata_json_len(metadata: dict[str, Any] | None) -> int:
    """Bytes of a row's metadata as JSON (0 when empty): the limit check here, and backends' size estimates."""
    return len(metadata_json(metadata)) if metadata else 0


def metadata_size(metadata: dict[str, Any]) -> int:
    """Bytes of a row's metadata as a size limit counts them (``RowRules.max_metadata_bytes``): its JSON
    with each whole float within ±2**53 written as the integer it is, at any depth. The limit is
    Pinecone's, whose numbers are float64 (over gRPC a ``Struct`` holds 1 and 1.0 as the same bytes): a
    column of years as floats must not make a row 2 bytes a value bigger than the same row of ints."""
    return len(metadata_json(_whole_numbers(metadata)))


def _whole_numbers(value: Any) -> Any:
    """``value`` with its whole floats within ±2**53 (exact as integers) as ints, in dicts, lists, tuples."""
    if isinstance(value, float | np.floating):  # numpy's too, for a row not made plain
        number = float(value)
        return int(number) if number.is_integer() and abs(number) <= _EXACT else number
    if isinstance(value, dict):
        return {key: _whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_whole_numbers(item) for item in value]
    return value


_EXACT = 2.0**53  # float64 holds every integer up to here; orjson writes a float below 1e16 with ".0"


class _Unstorable(Exception):
    """A metadata value no database here can hold as given; ``where``: its path, built on the way out."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason, self.where = reason, ""

    def inside(self, step: str) -> _Unstorable:
        self.where = step + self.where
        return self


class _NotUtf8(_Unstorable):
    """Bytes that are not UTF-8 text; ``column``: the metadata key they are under, set on the way out."""

    column: Any = None


def _plain_metadata(metadata: dict[str, Any]) -> tuple[dict[str, Any], bytes] | str:
    """A row's metadata with its numpy and pandas values made plain (``_plain``), and its JSON; or why the
    row is refused, naming the key. Only for a row orjson cannot write as it is."""
    try:
        plain = _plain_dict(metadata, repr)
    except _NotUtf8 as exc:  # as Arrow's reader refuses a text column's: the column named, not the path
        return f"{not_utf8_reason(exc.column)}{_NOT_UTF8_BYTES}"
    except _Unstorable as exc:
        return f"metadata {exc.where} {exc.reason}"
    try:
        return plain, metadata_json(plain)
    except TypeError as exc:  # which key: each alone, once the whole has failed
        key = next((k for k, v in plain.items() if not _json_ok({k: v})), None)
        return f"metadata {key!r} cannot be written as JSON: {exc}"


def _json_ok(fields: dict[Any, Any]) -> bool:
    try:
        metadata_json(fields)
    except TypeError:
        return False
    return True


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})
_JSON_BUILTIN = _JSON_SCALARS | {dict, list, tuple}
# orjson hands datetimes and dataclasses back (a TypeError without ``default``): rows holding them are
# made plain (a zoned datetime in UTC, a dataclass as the dict of its fields), the others written as they are
_FAST = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_MAX_DEPTH = 256  # deeper than orjson writes (it refuses a 255th level): a row that deep is walked


def _batch_builtin_only(metadata: list[dict[str, Any] | None]) -> bool:
    """True when every row's values are of JSON's own Python types (``_builtin_only``): a few passes in C
    over the whole batch, so a batch of plain rows is not looked at row by row."""
    try:
        values = list(chain.from_iterable(map(dict.values, filter(None, metadata))))
    except TypeError:  # a row's metadata is no dict: rows are looked at one by one
        return False
    return _builtin_only(values)


def _builtin_only(values: list[Any]) -> bool:
    """True when every value, at any depth, is exactly a ``str``, ``int``, ``float``, ``bool``, ``None``,
    ``dict``, ``list`` or ``tuple``: a row orjson writes that holds only these needs no ``_plain``; one it
    writes that holds another (an Enum, a UUID, a subclass of ``str`` or ``dict``) is made plain too. A few
    passes in C a depth, no Python call a value."""
    for _ in range(_MAX_DEPTH):
        types = list(map(type, values))
        kinds = set(types)
        if kinds <= _JSON_SCALARS:
            return True
        if not kinds <= _JSON_BUILTIN:
            return False
        inner: list[Any] = []
        for container in kinds - _JSON_SCALARS:
            picked = compress(values, map(is_, types, repeat(container)))
            inner.extend(chain.from_iterable(map(dict.values, picked) if container is dict else picked))
        values = inner
    return False


_BINARY = (bytes, bytearray, memoryview)
_NAT = "is NaT (not a time), which JSON cannot hold (it would be null)"
# after a text column's reason for bytes that are not UTF-8: they may be a binary column's, which a letter
# cannot tell from a text column's with a Latin-1 byte
_NOT_UTF8_BYTES = (
    "; if the column holds bytes, no database here stores them as metadata: convert it (base64, hex) or "
    "leave it out (option metadata_columns)"
)
_BINARY_REASON = (
    "is binary; no database here stores bytes as metadata: "
    "convert the column (base64, hex) or leave it out (option metadata_columns)"
)


def _plain(value: Any) -> Any:
    """``value`` with its numpy and pandas values, at any depth, as what the Arrow reader gives for a
    column of them, so every database's encoder gets one value however the row came: a numpy scalar as
    its Python value (a float32 as the float64 it is exactly), an array as a list, a datetime64 or
    ``pandas.Timestamp`` as a ``datetime`` (a ``date`` for days or coarser; ISO 8601 text below a
    microsecond, which a ``datetime`` cannot hold), a zoned one in UTC (``_datetime``), an Enum as its value
    and a dataclass as the dict of its fields (as orjson writes them), each made plain in turn, a duration (``timedelta``, timedelta64,
    ``pandas.Timedelta``) as its ISO 8601 text (``iso_duration``: no database has a duration type, and
    their encoders would each write their own text). Any other value stays as it is: each database refuses what it cannot store. ``value``
    itself when nothing in it changes: no copy."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return value
    if isinstance(value, _BINARY):  # at any depth (a struct's or a list's bytes), as a column of them
        raise _bytes_refused(value)
    if kind is dict:
        return _plain_dict(value, lambda key: f"[{key!r}]")
    if kind is list or kind is tuple:
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_plain(item))
            except _Unstorable as exc:
                raise exc.inside(f"[{index}]") from None
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, np.generic):
        if isinstance(value, np.datetime64):
            return _datetime64(value)
        if isinstance(value, np.timedelta64):
            return iso_duration(_timedelta64(value))
        return value.item()
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biufcUS":  # Python scalars (float32 as its float64), rows as lists
            return value.tolist()
        return _plain(list(value))  # objects, datetime64, timedelta64
    if isinstance(value, dt.datetime):
        return _datetime(value)
    if isinstance(value, enum.Enum):  # as orjson writes one: its value
        return _plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain_dict(_dataclass_fields(value), lambda key: f"[{key!r}]")
    if isinstance(value, dt.timedelta):  # a duration column's, or a pandas.Timedelta: ISO 8601 text
        if getattr(value, "nanoseconds", 0):
            raise _Unstorable(f"is {value}, finer than the microseconds a duration is written in")
        return iso_duration(dt.timedelta(value.days, value.seconds, value.microseconds))
    if isinstance(value, dict):  # of another class (OrderedDict): a dict
        return _plain_dict(dict(value), lambda key: f"[{key!r}]")
    instant = beam_instant(value)  # a Beam Timestamp: no JSON writer takes one
    return value if instant is None else instant


def _datetime(value: dt.datetime) -> dt.datetime | str:
    """``plain_datetime``: a ``datetime`` in UTC when zoned, ISO 8601 text below a microsecond; NaT refused."""
    if value != value:  # NaT
        raise _Unstorable(_NAT)
    return plain_datetime(value)


def _dataclass_fields(value: Any) -> dict[str, Any]:
    """A dataclass's fields as orjson writes them: its attributes (``__dict__``, else the fields of a
    slotted one), but those whose names start with an underscore."""
    names = vars(value) if hasattr(value, "__dict__") else {f.name: None for f in dataclasses.fields(value)}
    return {name: getattr(value, name) for name in names if not name.startswith("_")}


def _bytes_refused(value: bytes | bytearray | memoryview) -> _Unstorable:
    """Why a value in bytes is stored nowhere; the one decision, whatever the row came as (an Arrow binary
    column, a dict, a dead letter). Letters keep text that is not UTF-8 as its bytes, as they keep a binary
    column's, and cannot tell the two apart: so bytes that are not UTF-8 fail as a text column of them does
    (``text.not_utf8_reason``), and a row written again from its letter fails as it did; bytes that are UTF-8
    fail as binary, with the way out."""
    try:
        bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return _NotUtf8("is text that is not valid UTF-8")
    return _Unstorable(_BINARY_REASON)


def _plain_dict(value: dict[Any, Any], step: Callable[[Any], str]) -> dict[Any, Any]:
    """``_plain`` of each value (``step``: a key as its failure's path names it); ``value`` if none changes."""
    changed: dict[Any, Any] | None = None
    for key, item in value.items():
        try:
            plain = _plain(item)
        except _NotUtf8 as exc:
            exc.column = key  # the outermost key last: the metadata column
            raise exc.inside(step(key)) from None
        except _Unstorable as exc:
            raise exc.inside(step(key)) from None
        if plain is not item:
            changed = dict(value) if changed is None else changed
            changed[key] = plain
    return value if changed is None else changed


def _datetime64(value: np.datetime64) -> dt.date | str:
    """``plain_datetime64``: a ``date``, a ``datetime`` or ISO 8601 text; NaT and years a ``datetime``
    cannot hold refused."""
    if np.isnat(value):
        raise _Unstorable(_NAT)
    out = plain_datetime64(value)
    if out is None:
        raise _Unstorable(f"is {value}, outside the years 1 to 9999 a datetime holds")
    return out


def _timedelta64(value: np.timedelta64) -> dt.timedelta:
    """A ``timedelta``, as a duration column gives, when one holds the value exactly."""
    if np.isnat(value):
        raise _Unstorable(_NAT)
    if np.datetime_data(value.dtype)[0] in ("Y", "M"):
        raise _Unstorable(f"is {value}: months and years have no fixed length")
    micro = value.astype("timedelta64[us]")
    out = micro.item()
    if micro.astype(value.dtype) != value or not isinstance(out, dt.timedelta):
        raise _Unstorable(
            f"is {value}, which a duration in microseconds (up to 999,999,999 days) cannot hold"
        )
    return out


def _not_finite(value: Any, where: str = "") -> str | None:
    """Where in ``value`` (``'a'``, ``'a'[2]``) a float is NaN or infinite, which JSON writers turn into
    ``null`` (a stored value silently changed); ``None`` if nowhere."""
    if isinstance(value, float | np.floating):
        return None if math.isfinite(value) else where or "value"
    if isinstance(value, dict):
        for key, item in value.items():
            found = _not_finite(item, f"{where}[{key!r}]" if where else repr(key))
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _not_finite(item, f"{where}[{index}]")
            if found is not None:
                return found
    elif isinstance(value, np.ndarray) and value.dtype.kind in "fc" and not np.isfinite(value).all():
        return f"{where}[{int(np.flatnonzero(~np.isfinite(value.ravel()))[0])}]"
    return None


def _all_finite(flat: np.ndarray) -> bool:
    """True when every value is certainly finite: the sum of the squares is (one pass, no temporary; the
    dot product is the cheapest reduction numpy has, a third of ``sum``'s CPU). A NaN or infinity makes
    it NaN or infinite; so can finite values beyond about 1.8e19 (their squares overflow float32), hence
    False only means "look row by row"."""
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.dot(flat, flat)))


def _finite_rows(flat: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per row: all values finite (rows not in ``rows`` count as finite)."""
    if _all_finite(flat):  # the usual case
        return np.ones(len(rows), dtype=bool)
    n = len(rows)
    if n and flat.size and flat.size % n == 0 and (np.diff(offsets) == flat.size // n).all():
        # one pass, no n×dim temporary: a row with NaN or inf has a non-finite sum; a non-finite sum
        # can also be an overflow of large finite values, so those few rows are checked exactly
        matrix = flat.reshape(n, -1)
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.isfinite(matrix.sum(axis=1))
        for row in np.flatnonzero(~out):
            out[row] = bool(np.isfinite(matrix[row]).all())
        return out | ~rows
    bad = ~np.isfinite(flat)
    if not bad.any():
        return np.ones(len(rows), dtype=bool)
    row_of = np.searchsorted(offsets, np.flatnonzero(bad), side="right") - 1
    out = np.ones(len(rows), dtype=bool)
    out[row_of] = False
    return out | ~rows


def _check_sparse(value: Any) -> tuple[tuple[np.ndarray, np.ndarray] | None, str | None]:
    """A row's sparse vector as (uint32 indices ascending, float32 values), or why it is refused. Indices
    given out of order are sorted with their values: Qdrant, Pinecone and pgvector take any order, and
    the encoders that need ascending order (Milvus) get it; only a repeated index is ambiguous."""
    if value is None:
        return None, None
    if isinstance(value, Mapping):
        indices, values = value.get("indices"), value.get("values")
    elif isinstance(value, tuple) and len(value) == 2:  # as a reader gives it: (indices, values)
        indices, values = value
    else:
        indices, values = None, None
    if indices is None or values is None:
        return None, "sparse vector needs both indices and values"
    try:
        given = np.asarray(indices).reshape(-1)
        if given.dtype.kind == "f" and given.size and not np.array_equal(given, np.trunc(given)):
            return None, "sparse indices must be integers and values numbers"
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        val = np.asarray(values, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        return None, "sparse indices must be integers and values numbers"
    if idx.size != val.size:
        return None, f"sparse vector has {idx.size} indices but {val.size} values"
    if not np.isfinite(val).all():  # in the order given: the index names the value as the row has it
        at = int(np.flatnonzero(~np.isfinite(val))[0])
        what = (
            "a null value" if isinstance(values, list | tuple) and values[at] is None else "NaN or infinity"
        )
        return None, f"sparse vector has {what} at position {at} (sparse index {int(idx[at])})"
    if idx.size and idx.min() < 0:
        return None, "sparse index is negative"
    if idx.size and idx.max() > MAX_SPARSE_INDEX:
        return None, "sparse index is 2^32 or more"
    if idx.size > 1 and not (np.diff(idx) > 0).all():  # out of order, or an index twice
        order = np.argsort(idx, kind="stable")
        idx, val = idx[order], val[order]
        if (np.diff(idx) == 0).any():
            return None, "sparse indices are duplicated"
    return (idx.astype(np.uint32), val), None


def _group(
    cols: Columns,
    reasons: dict[int, str],
    dense_ok: np.ndarray,
    sparse_rows: list[tuple[np.ndarray, np.ndarray] | None] | None,
    ns_values: list[Any],
    dim: DimensionState,
    positions: np.ndarray,
    generations: np.ndarray | None = None,
    deletes: np.ndarray | None = None,
    *,
    one_namespace: bool = False,
) -> Prepared:
    """Failures for refused rows (one per reason and op); one RowBatch per namespace, op (and generation
    of a repeated id) for the rest (``one_namespace``: every row has ``ns_values[0]``)."""
    out = Prepared()
    if deletes is None:
        deletes = np.zeros(cols.n, dtype=bool)
    by_reason: dict[tuple[str, bool], list[int]] = {}
    for i, reason in sorted(reasons.items()):
        by_reason.setdefault((reason, bool(deletes[i])), []).append(i)
    for (reason, delete), failed in by_reason.items():
        ids = tuple(None if cols.ids[i] is None else str(cols.ids[i]) for i in failed)
        at = tuple(int(positions[i]) for i in failed)
        out.failures.append(
            BatchFailure(
                ids=ids, positions=at, error=reason, error_type="Invalid", op=DELETE if delete else UPSERT
            )
        )

    keep = _unrefused(cols.n, reasons)
    if not keep.any():
        return out
    matrix = _matrix(cols, dense_ok, dim.value)
    # one batch per (generation, namespace, op, has a dense vector): a batch's rows are all deletes, or
    # all dense upserts, or all sparse-only ones, and hold an id once; generations go out in order, so a
    # repeated id's last row wins, whether it upserts or deletes
    groups: dict[tuple[int, Any, bool, bool], Sequence[int]] = {}
    if generations is None and (one_namespace or len(set(ns_values)) == 1):  # no walk over the rows
        for delete, dense in ((False, True), (False, False), (True, False)):
            chosen = keep & (deletes == delete) & (dense_ok == dense)
            if chosen.all():  # every row (all deletes, say): no list of row numbers to build
                groups[(0, ns_values[0], delete, dense)] = range(cols.n)
                break
            picked = np.flatnonzero(chosen).tolist()
            if picked:
                groups[(0, ns_values[0], delete, dense)] = picked
    else:
        walked: dict[tuple[int, Any, bool, bool], list[int]] = {}
        for row in np.flatnonzero(keep):
            generation = 0 if generations is None else int(generations[row])
            key = (generation, ns_values[row], bool(deletes[row]), bool(dense_ok[row]))
            walked.setdefault(key, []).append(int(row))
        groups.update(walked)
    for (_, ns, delete, dense), rows in sorted(groups.items(), key=lambda group: group[0][0]):
        every = len(rows) == cols.n
        positions_kept = positions if every else positions[rows]
        kept_ids = cols.ids if every else [cols.ids[i] for i in rows]
        if delete:  # an id is all a delete needs
            out.batches.append(
                RowBatch(
                    ids=kept_ids,
                    vectors=None,
                    namespace=ns,
                    positions=positions_kept,
                    op=DELETE,
                    own_namespaces=cols.own_namespaces,
                )
            )
            continue
        vectors = None
        if dense and matrix is not None:
            vectors = matrix if every else matrix[np.asarray(rows)]
        out.batches.append(
            RowBatch(
                ids=kept_ids,
                vectors=None if dim.named else vectors,
                sparse=None
                if sparse_rows is None
                else (sparse_rows if every else [sparse_rows[i] for i in rows]),
                metadata=_kept_metadata(cols.metadata, rows, every),
                namespace=ns,
                positions=positions_kept,
                named_vectors={
                    name: _named_matrix(column, rows, every, dim.named[name])
                    for name, column in cols.named.items()
                },
                multi_vectors={
                    name: _multi_vectors(column, rows, every, dim.named[name])
                    for name, column in cols.multi.items()
                },
                own_namespaces=cols.own_namespaces,
            )
        )
    return out


def _named_matrix(column: DenseColumn, rows: Sequence[int], every: bool, dim: int | None) -> np.ndarray:
    """The kept rows' vectors under one name, ``(k, dim)`` float32: a view of the input's buffer when
    every row was kept, else one gathered copy."""
    assert dim is not None  # the rows kept all had one, so the name's dimension is known
    n = len(column.nulls)
    if every and column.flat.size == n * dim:
        return np.ascontiguousarray(column.flat.reshape(n, dim))
    starts = column.offsets[np.asarray(rows, dtype=np.int64)]
    return column.flat[ranges(starts, np.full(len(rows), dim, dtype=np.int64))].reshape(len(rows), dim)


def _multi_vectors(column: MultiColumn, rows: Sequence[int], every: bool, dim: int | None) -> MultiVectors:
    """The kept rows' multi-vectors under one name: the input's values buffer itself when every row was
    kept and its vectors lie back to back (Arrow float32 input), else one gathered copy."""
    assert dim is not None
    m = len(column.starts)
    if (
        every
        and column.flat.size == m * dim
        and np.array_equal(column.starts, np.arange(0, m * dim, dim, dtype=np.int64))
    ):
        return MultiVectors(column.flat.reshape(m, dim), column.outer)
    kept = np.asarray(rows, dtype=np.int64)
    counts = column.outer[kept + 1] - column.outer[kept]
    vectors = ranges(column.outer[kept], counts)
    floats = ranges(column.starts[vectors], np.full(len(vectors), dim, dtype=np.int64))
    return MultiVectors(column.flat[floats].reshape(len(vectors), dim), offsets_of(counts))


def _kept_metadata(
    metadata: list[dict[str, Any] | None] | None, rows: Sequence[int], every: bool
) -> list[dict[str, Any]] | None:
    """Metadata of kept rows (rows whose metadata was unreadable were refused, so none is None here);
    a row's own dict as it is, a new one only for a row that has none (a dict per row is what the GC
    counts)."""
    if metadata is None:
        return None
    if every:
        return [{} if m is None else m for m in metadata]
    return [{} if (m := metadata[i]) is None else m for i in rows]


def _matrix(cols: Columns, dense_ok: np.ndarray, dim: int | None) -> np.ndarray | None:
    """An (n, dim) float32 matrix over all n rows: a view when all rows are valid, else a gathered copy."""
    if dim is None or not dense_ok.any():
        return None
    if dense_ok.all() and cols.flat.size == cols.n * dim:
        return np.ascontiguousarray(cols.flat.reshape(cols.n, dim))
    matrix = np.zeros((cols.n, dim), dtype=np.float32)
    for i in np.flatnonzero(dense_ok):
        start = cols.offsets[i]
        matrix[i] = cols.flat[start : start + dim]
    return matrix
