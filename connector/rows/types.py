"""The shapes rows take on their way to a request, and the rules a database sets for them."""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import re
import unicodedata
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import orjson

from .. import speedups
from ..ids import CANONICAL_UUID, as_uuid, point_id
from ..report import BatchFailure
from .ops import UPSERT, Op

__all__ = [
    "BAD_JSON",
    "ID_FOLDS",
    "ID_NAMESPACE",
    "ColumnSpec",
    "Columns",
    "DenseColumn",
    "DimensionState",
    "InstantText",
    "MultiColumn",
    "MultiVectors",
    "Prepared",
    "RowBatch",
    "RowRules",
    "agreed_length",
    "as_mapping",
    "beam_instant",
    "derive_id",
    "flatten",
    "id_sizes",
    "offsets_of",
    "plain_datetime",
    "plain_datetime64",
    "ranges",
    "text_ids",
    "with_input_columns",
]

# Fixed namespace for ids derived with ``id_from``: the same values give the same id on every
# run, machine and retry, so a retried task upserts instead of duplicating.
ID_NAMESPACE = uuid.UUID("6f1c2a8e-3b7d-5c4e-9a0f-2d8b7e6c5a41")
MAX_SPARSE_INDEX = 2**32 - 1


# text a database may read as an integer: whitespace, a sign, leading zeros, digits of any script
_AN_INTEGER = re.compile(r"\s*[+-]?\d[\d_]*\s*")
# among ids joined by NULs (a NUL on either end; patterns that start with one are found fast): an integer
# spelt otherwise than ``str(int)`` would, or 32 hex digits (a UUID spelt without hyphens)
_ANOTHER_SPELLING = re.compile(
    r"\x00(?:(?:\s+[+-]?\d|\+\d|-?0[\d_]|-0(?=\x00)|\d+_\d)[\d_]*\s*|-?\d+\s+|[0-9a-fA-F]{32})(?=\x00)"
)


def _another_spelling(joined: str) -> bool:
    """Some id of ``joined`` is spelt otherwise than its integer key (``RowRules._key``): one pattern,
    tried once an id. A false alarm (32 hex digits) costs the walk over each id, never a wrong key."""
    return not joined.isascii() or _ANOTHER_SPELLING.search(joined) is not None  # another script's digits


# ``RowRules.id_fold``: the spellings a database's id type reads as one id, each a key no finer than the
# database's (two keys that are one row there must be one here; the reverse only makes rows wait)
ID_FOLDS = {
    "uuid": "any spelling of a UUID: upper case, braces, urn:uuid:, hyphens anywhere or none (uuid)",
    "case": "any letter case (citext)",
    "spaces": "trailing spaces (char(n))",
    "numeric": "one number: 7, 7.0, 07, 7e0, rounded to id_scale places where the type has them (numeric)",
    "any": "all of these and integer text: a type not learnt yet",
    "one": "every id of a write one key: a type these cannot model, whose rows then go one after another",
}
ONE_KEY = "\x00"  # every id's key under "one" (no id is it: a NUL id is refused)
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_NUMBER = re.compile(
    r"\s*[+-]?(?:(?:(?:\d[\d_]*)?\.?\d[\d_]*|\d[\d_]*\.)(?:e[+-]?\d[\d_]*)?|inf(?:inity)?|nan)\s*",
    re.IGNORECASE,
)
# ids joined by NULs, every one of them a canonical UUID / integer: their keys are themselves
_HEX_NUL_HYPHEN = re.compile(r"[0-9a-f\x00-]*")
_ALL_UUIDS = re.compile(r"(?:\x00[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})*\x00")
_INTEGER = r"(?:-?[1-9][0-9]{0,39}|0)"  # as ``_number_key`` writes one (up to 40 digits)
_ALL_INTEGERS = re.compile(rf"(?:\x00{_INTEGER})*\x00")
_AN_INTEGER_KEY = re.compile(_INTEGER)
# among ASCII ids in lower case joined by NULs, those "any" may key otherwise than their text: what
# ``_NUMBER`` reads starts so, and a UUID in any spelling is 32 characters or more (a cheap superset)
_ANY_CANDIDATE = re.compile(r"\x00((?:[0-9\s+\-.]|inf|nan|[^\x00]{32})[^\x00]*)(?=\x00)")
MAX_NUMERIC_DIGITS = 131_072  # PostgreSQL's numeric: digits before the decimal point
# numbers as exact as PostgreSQL's numeric (up to 131,072 digits), never rounded by a context's 28
_EXACT = decimal.Context(
    prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, rounding=decimal.ROUND_HALF_UP
)


def _folded_ids(ids: list[str], fold: str, scale: int | None) -> list[Any]:
    """``_folded`` of each id, ``ids`` itself when every key is its id (the usual case: told by one pass
    in C over the ids joined by NULs, as ``RowRules.row_keys``)."""
    if fold == "one":
        return [ONE_KEY] * len(ids)
    joined = "\x00" + "\x00".join(ids) + "\x00"
    if fold == "case":
        folded = case_key(joined)  # letter by letter: the same as each id's own
        return ids if folded == joined else folded.split("\x00")[1:-1]
    if fold == "spaces":
        return ids if " \x00" not in joined else [i.rstrip(" ") for i in ids]
    # numeric(p, s) with s < 0 rounds integers too (to hundreds for -2)
    plain = {"uuid": _ALL_UUIDS, "numeric": _ALL_INTEGERS if (scale or 0) >= 0 else None}.get(fold)
    if plain is not None and plain.fullmatch(joined) is not None:
        return ids
    if fold == "any" and joined.isascii() and joined.casefold() == joined and " \x00" not in joined:
        found = (m.group(1) for m in _ANY_CANDIDATE.finditer(joined))
        if all(_AN_INTEGER_KEY.fullmatch(i) or _folded(i, fold, None) == i for i in found):
            return ids
    return [_folded(i, fold, scale) for i in ids]


def _folded(text: str, fold: str, scale: int | None) -> str:
    """The key of an id's ``text`` under ``fold`` (``ID_FOLDS``)."""
    if fold == "case":
        return case_key(text)
    if fold == "spaces":
        return text.rstrip(" ")
    if fold == "uuid":
        return _uuid_key(text) or text
    if fold == "numeric":
        return _number_key(text, scale) or text
    if fold == "one":
        return ONE_KEY
    # "any": the union of the others. A UUID of decimal digits alone is also a number, keyed as one, so
    # that every spelling of either is one key
    text = text.rstrip(" ")
    as_uuid = _uuid_key(text)
    if as_uuid is not None:
        digits = as_uuid.replace("-", "")
        return (_number_key(digits, None) or as_uuid) if digits.isdigit() else as_uuid
    return _number_key(text, None) or case_key(text)


def case_key(text: str) -> str:
    """A key no finer than PostgreSQL's ``lower()`` (citext compares so) under the usual locales: case folded
    and, beyond ASCII, without accents and other combining marks, since a UTF-8 locale lower-cases ``İ`` to
    ``i`` where ``casefold`` gives ``i̇``. Merging more than the database only makes rows wait for each other.
    A Turkish collation's ``lower('I')``, dotless ``ı``, is not followed: ``ID`` and ``ıd`` keep two keys."""
    folded = text.casefold()
    if folded.isascii():
        return folded
    return "".join(c for c in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(c))


def _uuid_key(text: str) -> str | None:
    """A UUID in any spelling ``uuid.UUID`` or PostgreSQL reads (any case, braces, ``urn:uuid:``, hyphens
    anywhere or none), canonical; else ``None``."""
    if CANONICAL_UUID.fullmatch(text) is not None:  # the usual spelling
        return text
    if len(text) < 32:
        return None
    body = text[4:] if text[:4].lower() == "urn:" else text
    body = body[5:] if body[:5].lower() == "uuid:" else body
    digits = body.lstrip("{").rstrip("}").replace("-", "")
    if len(digits) != 32 or not _HEX_DIGITS.issuperset(digits):
        return None
    h = digits.lower()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _number_key(text: str, scale: int | None) -> str | None:
    """A number's one text (an integer as ``str(int)`` would write it, as ``integer_text`` keys it),
    rounded half away from zero to ``scale`` places as PostgreSQL's numeric(p, s) does; ``None`` for
    text that is not a number."""
    if _NUMBER.fullmatch(text) is None:
        return None
    try:
        number = decimal.Decimal(text)
        if number.is_finite() and number.adjusted() >= MAX_NUMERIC_DIGITS:
            return None  # no numeric holds it (PostgreSQL refuses the row); rounding "1e999999999" is costly
        if scale is not None and number.is_finite():
            number = _EXACT.quantize(number, decimal.Decimal(1).scaleb(-scale))
    except decimal.InvalidOperation:  # "1__0"
        return None
    if number.is_nan():
        return "NaN"
    if number.is_infinite():
        return "-Infinity" if number < 0 else "Infinity"
    if not number:
        return "0"  # -0, 0.00
    number = _EXACT.normalize(number)
    _, digits, exponent = number.as_tuple()
    if isinstance(exponent, int) and exponent >= 0 and exponent + len(digits) <= 40:
        return str(int(number))
    return str(number)


@dataclass(frozen=True, slots=True)
class RowRules:
    """What a backend can store; rows outside these rules fail before sending."""

    max_id_length: int = 512  # characters
    max_id_bytes: int | None = None  # UTF-8 bytes, where the database counts those (Pinecone)
    max_metadata_bytes: int | None = None  # JSON bytes per row, whole floats as ints (``metadata_size``)
    allow_sparse_only: bool = True  # a row may have a sparse vector and no dense one
    numeric_ids: bool = False  # ids may stay integers (Milvus INT64 keys)
    integer_text: bool = False  # the database may read text as an integer: "07" is 7 (bigint, INT64 keys)
    # what makes two rows one row in the database (``row_keys``): a repeated one goes in input order
    namespaced: bool = True  # one id in two namespaces is two rows (else one: Chroma, Milvus, ...)
    # ids are stored as UUIDs (Qdrant, Weaviate): each is keyed as the UUID it is stored under, ``ids.as_uuid``
    # (with numeric_ids ``ids.point_id``, Qdrant's: an unsigned 64-bit integer stays itself), so "doc-1"
    # and its UUIDv5 are one key, as are a UUID's spellings
    uuid_ids: bool = False
    # what else a database's id type reads as one id (``ID_FOLDS``; PostgreSQL's, learnt from the id column);
    # "" none: the two flags above decide
    id_fold: str = ""
    id_scale: int | None = None  # "numeric": the places a number is rounded to (numeric(10, 2)), if any
    namespace_case: bool = False  # namespaces in any letter case are one (PostgreSQL's citext namespace)

    def scope(self, namespace: object) -> object:
        """Where a row's id is a key: its namespace (no namespace and ``""`` are both the default
        one), or the whole target when the database keeps one row per id across namespaces."""
        if not self.namespaced:
            return None
        if type(namespace) is str:
            return case_key(namespace) if self.namespace_case else namespace
        return "" if namespace is None else repr(namespace)

    def row_keys(self, ids: list[Any]) -> list[Any]:
        """Each id as a key no finer than the database's: an integer and its text are one (PostgreSQL
        and Milvus cast one to the other, Weaviate maps both to one UUID), where ids may be integers so
        are every text spelling of one (``"07"``, ``" 7"``, ``"+7"`` are 7 to PostgreSQL's bigint), and
        so are a UUID's spellings where ids are stored as UUIDs. Two keys that are one row there are one
        here; two here that are two there only wait for each other. ``ids`` itself when they are text
        that needs no mapping (the usual case); a key depends on its id alone, never on the other ids."""
        types = set(map(type, ids))
        if self.id_fold:
            if types == {str}:
                return _folded_ids(ids, self.id_fold, self.id_scale)
            return [self._key(i) for i in ids]
        if self.uuid_ids:
            return self._stored_ids(ids, types)
        if types == {str} and self.integer_text:
            if not _another_spelling("\x00" + "\x00".join(ids) + "\x00"):
                return ids
        elif types == {str}:
            return ids
        if types == {int}:  # keyed as text, whatever the batch holds: the same in every batch of a write
            return list(map(str, ids))
        return [self._key(i) for i in ids]

    def _stored_ids(self, ids: list[Any], types: set[type]) -> list[Any]:
        """Each id as the UUID (or, with ``numeric_ids``, the unsigned integer) the database stores it
        under: natively where the speedups are built (a UUIDv5 is about a microsecond in Python)."""
        if types == {str} and _all_canonical_uuids(ids):
            return ids  # canonical UUIDs already: their own keys
        if int in types and not self.numeric_ids:  # an integer is stored as its text's UUIDv5
            ids = list(map(str, ids)) if types == {int} else [str(i) if type(i) is int else i for i in ids]
        native = _native_point_ids()
        if native is not None and type(ids) is list:
            return native(ids, self._key)  # hands any id but an exact int or str to _key
        return [self._key(i) for i in ids]

    def _key(self, value: Any) -> Any:
        if self.id_fold:
            if type(value) is str or (isinstance(value, int) and type(value) is not bool):
                return _folded(str(value), self.id_fold, self.id_scale)
            return value
        if self.uuid_ids:
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                try:
                    return point_id(value) if self.numeric_ids else as_uuid(value)
                except UnicodeEncodeError:  # a lone surrogate: refused by the checks
                    return value
            return value  # refused by the checks (None, a bool, a float, ...)
        if type(value) is str:
            if self.integer_text and _AN_INTEGER.fullmatch(value):
                try:
                    return str(int(value))
                except ValueError:  # "1__0": no integer to Python, nor to a database
                    return value
            return value
        if isinstance(value, int) and type(value) is not bool:
            return str(value)
        return value  # refused by the checks (None, a float, ...), or hashed as it is


def _all_canonical_uuids(ids: list[str]) -> bool:
    """Every id is a UUID's canonical text (``8-4-4-4-12``, lower-case hex): told by counts on the ids joined
    by NULs, in C, four times faster than a pattern: each id ends where a 36-character one would (NULs
    there and nowhere else), holds its hyphens where a UUID does (and no other) and nothing but hex."""
    n = len(ids)
    joined = "\x00".join(ids)
    return not ids or (
        len(joined) == 37 * n - 1
        and joined.count("\x00") == joined[36::37].count("\x00") == n - 1
        and joined.count("-") == 4 * n
        and all(joined[at::37].count("-") == n for at in (8, 13, 18, 23))
        and _HEX_NUL_HYPHEN.fullmatch(joined) is not None
    )


@functools.cache
def _native_point_ids() -> Callable[[list[Any], Callable[[Any], Any]], list[Any]] | None:
    """The native ``point_ids`` (``ids.point_id`` of each id), looked up on first use."""
    return speedups.native("point_ids")


def with_input_columns(
    metadata_columns: Sequence[str] | None, input_columns: Sequence[tuple[str, str]]
) -> tuple[str, ...] | None:
    """``metadata_columns`` with the backend's input columns (``(option, column)`` pairs) they leave out:
    the one rule the client's readers and the Beam sink's share, so a document column the option does not
    list is read everywhere (left out, every document was dropped). ``None`` stays ``None``: every column."""
    if metadata_columns is None:
        return None
    listed = tuple(metadata_columns)
    return listed + tuple(c for _, c in input_columns if c not in listed)


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """Which input columns hold what; built from the options."""

    id_column: str = "id"
    id_from: tuple[str, ...] = ()
    vector_column: str = "values"
    sparse_column: str | None = None
    metadata_columns: tuple[str, ...] | None = None  # None: every column not used above
    namespace_column: str | None = None
    op_column: str | None = None  # each row's op (rows.ops): upsert or delete; None: every row upserts
    # several vectors a row (options vector_columns, multi_vector_columns): (name, column) pairs; with
    # either, vector_column is not read
    vector_columns: tuple[tuple[str, str], ...] = ()
    multi_vector_columns: tuple[tuple[str, str], ...] = ()
    # (option, column) pairs the backend reads from a row's metadata (Backend.input_columns: Chroma's
    # document_column): required in the input like the columns above, and read as metadata always
    # (``metadata_read``); kept apart from metadata_columns, the user's option, so errors name the right one
    input_columns: tuple[tuple[str, str], ...] = ()

    @property
    def metadata_read(self) -> tuple[str, ...] | None:
        """The columns read as metadata: option ``metadata_columns`` (``None``: every column not used)
        with the backend's input columns it does not list (``with_input_columns``)."""
        return with_input_columns(self.metadata_columns, self.input_columns)

    @property
    def named(self) -> bool:
        """Rows carry named vectors (dense or multi) instead of the one unnamed vector."""
        return bool(self.vector_columns or self.multi_vector_columns)

    def used(self) -> set[str]:
        cols = set() if self.id_from else {self.id_column}  # id_from columns stay metadata
        if self.named:
            cols.update(column for _, column in self.vector_columns + self.multi_vector_columns)
        else:
            cols.add(self.vector_column)
        cols.update(c for c in (self.sparse_column, self.namespace_column, self.op_column) if c)
        return cols


@dataclass(frozen=True, slots=True)
class MultiVectors:
    """One name's multi-vectors for the rows of a batch: row ``i`` holds the ``(k_i, dim)`` float32 block
    ``values[offsets[i]:offsets[i + 1]]`` (``k_i >= 1``, every vector ``dim`` long, finite).

    Rows follow each other in ``values``, so rows ``a:b`` are the one contiguous block
    ``values[offsets[a]:offsets[b]]``: encode from it (``row``, ``block``), never through Python lists.
    ``values`` is a view of the input's buffer where it can be (Arrow float32 input whose rows all
    passed), else one gathered copy; ``offsets[0]`` need not be 0 (a slice keeps the buffer)."""

    values: np.ndarray  # (m, dim) float32, C-contiguous: every vector of the rows, in row order
    offsets: np.ndarray  # int64, n + 1, indices into values' first axis (vectors, not floats)

    @property
    def dim(self) -> int:
        return int(self.values.shape[1])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def counts(self) -> np.ndarray:
        """Vectors per row (int64, n)."""
        return np.diff(self.offsets)

    def row(self, i: int) -> np.ndarray:
        """Row ``i``'s vectors, a ``(k_i, dim)`` view."""
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    def block(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop``'s vectors, one ``(k, dim)`` view (for a request's packed floats)."""
        return self.values[self.offsets[start] : self.offsets[stop]]

    def slice(self, start: int, stop: int) -> MultiVectors:
        """Rows ``start:stop``, sharing ``values``."""
        return MultiVectors(self.values, self.offsets[start : stop + 1])

    def take(self, rows: Sequence[int] | np.ndarray) -> MultiVectors:
        """The rows at ``rows``, in that order: one gathered copy."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, counts = self.offsets[rows], self.offsets[rows + 1] - self.offsets[rows]
        return MultiVectors(self.values[ranges(starts, counts)], offsets_of(counts))


@dataclass(slots=True)
class RowBatch:
    """Rows ready to encode: parallel arrays, all of length ``len(ids)``.

    ``positions`` are the rows' offsets in the input of the write (``Client.write``'s ``data``,
    counted across its chunks); slices and selections keep them, so every failure can name the
    input rows it is about. Default: ``0 .. n-1`` (the batch is the whole input).

    ``op`` is what every row of the batch is for (a batch holds one op): ``"upsert"``, or
    ``"delete"``, whose rows are ids alone (no vectors, sparse vectors or metadata).

    With options ``vector_columns``/``multi_vector_columns`` the rows' vectors are named, and every
    upsert row has every name (a row lacking one was refused): ``named_vectors`` maps each dense name
    to an ``(n, dim)`` float32 matrix (a view of the input's buffer where it can be), and
    ``multi_vectors`` each multi-vector name to ``MultiVectors``; ``vectors`` is then ``None``. Without
    those options both are empty. Delete batches carry none."""

    ids: list[Any]  # str, or int where the backend keeps numeric ids
    vectors: np.ndarray | None  # (n, dim) float32, C-contiguous
    sparse: list[tuple[np.ndarray, np.ndarray] | None] | None = None  # (uint32 indices, float32 values)
    metadata: list[dict[str, Any]] | None = None
    namespace: str | None = None
    positions: np.ndarray = None  # type: ignore[assignment]  # int64, n; set in __post_init__ if not given
    op: Op = UPSERT
    named_vectors: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (n, dim) float32
    multi_vectors: dict[str, MultiVectors] = field(default_factory=dict)
    own_namespaces: bool = False  # ``Columns.own_namespaces`` of the rows' input

    def __post_init__(self) -> None:
        if self.positions is None:
            self.positions = np.arange(len(self.ids), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dimension(self) -> int | None:
        return None if self.vectors is None else int(self.vectors.shape[1])

    def slice(self, start: int, stop: int) -> RowBatch:
        """Rows ``start:stop``; vectors stay a view of the same buffer."""
        return RowBatch(
            ids=self.ids[start:stop],
            vectors=None if self.vectors is None else self.vectors[start:stop],
            sparse=None if self.sparse is None else self.sparse[start:stop],
            metadata=None if self.metadata is None else self.metadata[start:stop],
            namespace=self.namespace,
            positions=self.positions[start:stop],
            op=self.op,
            named_vectors={name: m[start:stop] for name, m in self.named_vectors.items()},
            multi_vectors={name: m.slice(start, stop) for name, m in self.multi_vectors.items()},
            own_namespaces=self.own_namespaces,
        )

    def str_ids(self) -> tuple[str, ...]:
        return tuple(text_ids(self.ids))

    def failure(
        self,
        rows: Sequence[int],
        error: str,
        *,
        error_type: str = "Rejected",
        retryable: bool = False,
        attempts: int = 0,
    ) -> BatchFailure:
        """One failure for the rows at ``rows`` (indices into this batch), naming them by id and by
        input position."""
        return BatchFailure(
            ids=tuple(str(self.ids[i]) for i in rows),
            positions=tuple(int(self.positions[i]) for i in rows),
            error=error,
            error_type=error_type,
            retryable=retryable,
            attempts=attempts,
            op=self.op,
        )

    def take(self, rows: Sequence[int]) -> RowBatch:
        """The rows at ``rows``, in that order (vectors copied)."""
        return RowBatch(
            ids=[self.ids[i] for i in rows],
            vectors=None if self.vectors is None else self.vectors[list(rows)],
            sparse=None if self.sparse is None else [self.sparse[i] for i in rows],
            metadata=None if self.metadata is None else [self.metadata[i] for i in rows],
            namespace=self.namespace,
            positions=self.positions[list(rows)],
            op=self.op,
            named_vectors={name: m[list(rows)] for name, m in self.named_vectors.items()},
            multi_vectors={name: m.take(rows) for name, m in self.multi_vectors.items()},
            own_namespaces=self.own_namespaces,
        )

    def without(self, reasons: Mapping[int, str]) -> tuple[RowBatch | None, list[BatchFailure]]:
        """The rows not in ``reasons`` (``None``: none), and one failure per reason for the others:
        what a backend's ``refuse`` returns."""
        if not reasons:
            return self, []
        by_reason: dict[str, list[int]] = {}
        for i, reason in sorted(reasons.items()):
            by_reason.setdefault(reason, []).append(i)
        failures = [self.failure(rows, reason, error_type="Invalid") for reason, rows in by_reason.items()]
        keep = [i for i in range(len(self.ids)) if i not in reasons]
        return (self.take(keep) if keep else None), failures


@dataclass(slots=True)
class Prepared:
    """The sendable rows of one input chunk (one ``RowBatch`` per namespace) and the refused ones."""

    batches: list[RowBatch] = field(default_factory=list)
    failures: list[BatchFailure] = field(default_factory=list)

    @property
    def refused(self) -> int:
        return sum(len(f.ids) for f in self.failures)


@dataclass(slots=True)
class Columns:
    """Column-major rows: what Arrow and dict input become, and what the Beam sink hands the client
    directly (its batches are already one float32 buffer), so it skips a round trip through Arrow."""

    n: int
    ids: list[Any]  # str or int (int ids become strings unless the database takes numbers)
    flat: np.ndarray  # every row's dense values, concatenated, float32
    offsets: np.ndarray  # int64, n + 1: row i is flat[offsets[i]:offsets[i + 1]]
    null_vector: np.ndarray  # bool, n
    sparse: list[Any] | None  # per row: None or a mapping {"indices", "values"}
    metadata: list[dict[str, Any] | None] | None  # None for a row: not a JSON object (refused)
    namespaces: list[Any] | None
    named: dict[str, DenseColumn] = field(default_factory=dict)  # options vector_columns: name -> column
    multi: dict[str, MultiColumn] = field(default_factory=dict)  # options multi_vector_columns
    # each row's op code (``ops.CODES``) when the rows say it themselves (``Client.delete``'s); ``None``:
    # read from the metadata's op key, if any
    ops: np.ndarray | None = None
    # the input's dense vector and sparse vector columns, as failure reasons name them (``None``: unknown)
    vector_column: str | None = None
    sparse_column: str | None = None
    named_columns: dict[str, str] = field(default_factory=dict)  # vector name -> its input column
    # rows that may name their own namespace (dict rows, Beam elements): one that names none fails alone
    # where a namespace is needed, never the write, which its neighbours may well give
    own_namespaces: bool = False


class DenseColumn(NamedTuple):
    """One name's dense vectors, as read: row ``i`` is ``flat[offsets[i]:offsets[i + 1]]``."""

    flat: np.ndarray  # float32
    offsets: np.ndarray  # int64, n + 1
    nulls: np.ndarray  # bool, n


class MultiColumn(NamedTuple):
    """One name's multi-vectors, as read: row ``i`` holds inner vectors ``outer[i]:outer[i + 1]``, and
    inner vector ``j`` is ``flat[starts[j]:starts[j] + lengths[j]]``. Unchecked: inner vectors may
    differ in length or be null; the checks refuse those rows."""

    flat: np.ndarray  # float32, 1-d: the input's values buffer where it is float32
    starts: np.ndarray  # int64, m: where each inner vector starts in flat
    lengths: np.ndarray  # int64, m (0 for a null inner vector)
    inner_nulls: np.ndarray  # bool, m
    outer: np.ndarray  # int64, n + 1: each row's inner vectors
    nulls: np.ndarray  # bool, n


class DimensionState:
    """The dimension of this write: option ``dimension``, else the target's, else the rows' agreed one.

    Never one row's: the agreed length is the most common among the first input chunk's vectors
    (the smaller on a tie). ``resolve``, set by the client, checks it against the target and
    returns the dimension the write must have (the target's, where one exists).

    With named vectors (options ``vector_columns``, ``multi_vector_columns``) the same rule holds per
    name: ``named`` holds every name of the write (``None``: not known yet; a multi-vector's is the
    length of its vectors), from option ``vector_dimensions`` or the target; ``learn_named`` agrees on
    the unknown ones from one chunk and hands them all to ``resolve_named`` at once (the client's
    check of the target), which returns the dimensions the write must have.
    """

    __slots__ = ("named", "resolve", "resolve_named", "value")

    def __init__(
        self,
        value: int | None = None,
        resolve: Callable[[int], int] | None = None,
        named: Mapping[str, int | None] | None = None,
        resolve_named: Callable[[dict[str, int | None]], Mapping[str, int]] | None = None,
    ) -> None:
        self.value = value
        self.resolve = resolve
        self.named: dict[str, int | None] = dict(named or {})
        self.resolve_named = resolve_named

    def learn(self, lengths: np.ndarray) -> None:
        """Agree on a dimension from the lengths of one chunk's present vectors, once (a length of 0
        gives none: no collection has vectors of no floats)."""
        if self.value is not None or not _usable(lengths).size:
            return
        agreed = agreed_length(lengths)
        self.value = self.resolve(agreed) if self.resolve is not None else agreed

    def learn_named(self, lengths: Mapping[str, np.ndarray]) -> None:
        """Agree on each unknown name's dimension from the lengths of one chunk's vectors under it (a
        multi-vector's: the length of its vectors, for rows whose vectors agree), then resolve them together.
        A length of 0 gives none: a name learnt as 0 would make a target without it (Qdrant) or fail it."""
        learnt = {
            name: agreed_length(lengths[name])
            for name, value in self.named.items()
            if value is None and name in lengths and _usable(lengths[name]).size
        }
        if not learnt:
            return
        self.named.update(learnt)
        if self.resolve_named is not None:
            self.named.update(self.resolve_named(dict(self.named)))


def agreed_length(lengths: np.ndarray) -> int:
    """The most common of ``lengths`` of at least 1 (the smaller on a tie): the dimension rule. Lengths
    of 0 do not count, so empty vectors never tie with or outvote real ones; at least one must be ≥ 1."""
    values, counts = np.unique(_usable(lengths), return_counts=True)
    if not values.size:
        raise ValueError("no vector of at least one float to agree a dimension on")
    return int(values[int(np.argmax(counts))])


def _usable(lengths: np.ndarray) -> np.ndarray:
    """The lengths a dimension may be learnt from: 1 or more."""
    return lengths[lengths >= 1]


def derive_id(values: Sequence[Any]) -> str:
    """A UUIDv5 of the row's ``id_from`` values: deterministic, so a retried task upserts the same id.

    A timestamp with a time zone is taken in UTC: the instant, not how a session shows it (Spark hands
    a ``timestamp`` over in its session's time zone, so a load run under another would duplicate every
    row). A time or duration is written in one form whatever its type and unit (``_id_value``): an
    Arrow ``timestamp[ns]`` column reads back as ``pandas.Timestamp``, whose text differs from the
    ``datetime`` a ``timestamp[us]`` or Spark's gives, and the same rows would get two ids. Text orjson
    cannot write (a lone surrogate: it writes UTF-8 only) is written by ``json``, escaped: still one id
    for the same values, where orjson would have failed the whole write."""
    values = [v if type(v) in _ID_AS_IT_IS else _id_value(v) for v in values]
    try:
        text = orjson.dumps(values, default=str).decode()
    except TypeError:
        import json

        text = json.dumps(values, default=str, separators=(",", ":"))
    return str(uuid.uuid5(ID_NAMESPACE, text))


# values whose text is already the one their id is derived from (the usual ones: one set lookup)
_ID_AS_IT_IS = frozenset({str, int, float, bool, type(None), dt.date})
_FINER_THAN_MICROSECONDS = frozenset({"ns", "ps", "fs", "as"})


def _id_value(value: Any) -> Any:
    """``value`` as the form its id is derived from, so one instant or duration gives one id whatever its
    type and unit: a ``datetime`` or ``timedelta``, as Spark's rows and Arrow's columns to the
    microsecond give them (ids derived from those stay as they were), a zoned time in UTC; below a
    microsecond, which they cannot hold, ISO 8601 text for a time and numpy's text of the nanoseconds
    for a duration; NaT as null, as in an Arrow column; another numpy scalar as its Python value. Any
    other value as it is."""
    if isinstance(value, dt.datetime):
        if type(value) is dt.datetime:
            return value.astimezone(dt.UTC) if value.tzinfo is not None else value
        if value != value:  # pandas.NaT
            return None
        return plain_datetime(value)
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            return None
        plain = plain_datetime64(value)
        return str(value) if plain is None else plain
    if isinstance(value, dt.timedelta):  # a pandas.Timedelta as a timedelta (text: str's, orjson has none)
        if type(value) is dt.timedelta:
            return value
        if getattr(value, "nanoseconds", 0):  # as a numpy timedelta64 of them writes itself
            return f"{getattr(value, 'value', value)} nanoseconds"
        return dt.timedelta(value.days, value.seconds, value.microseconds)
    if isinstance(value, np.timedelta64):
        if np.isnat(value):
            return None
        if np.datetime_data(value.dtype)[0] not in ("Y", "M"):  # months and years have no fixed length
            micro = value.astype("timedelta64[us]")
            plain = micro.item()
            if micro.astype(value.dtype) == value and isinstance(plain, dt.timedelta):
                return plain
        return str(value)
    if isinstance(value, np.generic):
        # a numpy number, bool or text as the Python value an Arrow column or a dict row gives (orjson's
        # default=str wrote np.int64(5) as "5": another id for the same row); a long double stays itself
        plain = value.item()
        return plain if type(plain) is not type(value) else value
    instant = beam_instant(value)
    return value if instant is None else instant


def beam_instant(value: Any) -> dt.datetime | None:
    """A Beam ``Timestamp`` (a ``beam.Row`` field of Beam's timestamp type) as its instant, a UTC
    ``datetime``; ``None`` for any other value, or one beyond a ``datetime``'s years (Beam's
    MIN/MAX_TIMESTAMP). Told by its module, so Beam is never imported here."""
    if type(value).__module__ != "apache_beam.utils.timestamp" or not hasattr(value, "to_utc_datetime"):
        return None
    try:
        instant: dt.datetime = value.to_utc_datetime(has_tz=True)
    except (OverflowError, ValueError):
        return None
    return instant


class InstantText(str):
    """ISO 8601 text of an instant finer than a microsecond, which a ``datetime`` cannot hold: text to
    every reader (it pickles and JSON-encodes as a plain string), marked so a backend whose dates need a
    zone (Weaviate's RFC 3339 ``date``, where zone-less is UTC) can tell it from a user's string, which is
    stored as given. A zoned instant's text ends in its offset (``+00:00``)."""

    __slots__ = ()


def plain_datetime(value: dt.datetime) -> dt.datetime | str:
    """A ``datetime`` (a ``pandas.Timestamp`` as one), a zoned one in UTC, as the Arrow reader gives a zoned
    timestamp column, so a row's text is the same whichever the input and the zone it came in; ISO 8601
    text (``InstantText``, in UTC when zoned) below a microsecond, which a ``datetime`` cannot hold. Not
    for NaT."""
    zoned = value.tzinfo is not None and value.utcoffset() is not None
    if type(value) is dt.datetime:
        return value.astimezone(dt.UTC) if zoned and value.utcoffset() else value  # UTC already: as it is
    if zoned:  # pandas.Timestamp
        value = value.astimezone(dt.UTC)
    if getattr(value, "nanosecond", 0):
        return InstantText(value.isoformat())
    return dt.datetime(*value.timetuple()[:6], value.microsecond, value.tzinfo, fold=value.fold)


def plain_datetime64(value: np.datetime64) -> dt.date | str | None:
    """A ``date`` for days, weeks, months or years (as a date32 column gives); a ``datetime`` to the
    microsecond (as a timestamp column gives); ISO 8601 text finer (``InstantText``, no zone); ``None``
    beyond the years 1 to 9999 a ``datetime`` holds. Not for NaT."""
    unit = np.datetime_data(value.dtype)[0]
    if unit in ("Y", "M", "W", "D"):
        out = value.astype("datetime64[D]").item()
    else:
        micro = value.astype("datetime64[us]")
        if micro.astype(value.dtype) != value:  # below a microsecond, or overflowed on the way
            if unit in _FINER_THAN_MICROSECONDS:
                return InstantText(np.datetime_as_string(value))
            return None
        out = micro.item()
    return out if isinstance(out, dt.date) else None  # numpy gives an int beyond what a datetime holds


BAD_JSON: dict[str, Any] = {}


def as_mapping(value: Any, is_map: bool) -> dict[str, Any] | None:
    if value is None:
        return None
    if is_map:
        return dict(value)
    if isinstance(value, str | bytes):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return BAD_JSON
        return parsed if isinstance(parsed, dict) else BAD_JSON
    return value if isinstance(value, dict) else BAD_JSON


def text_ids(ids: list[Any]) -> list[str]:
    """``ids`` as text: the list itself when every id is a ``str`` already (the usual case, told by one
    pass in C rather than a ``str()`` call an id), else a new list of each id's ``str``. Not to be changed
    by the caller: it may be the batch's own list."""
    if set(map(type, ids)) <= {str}:
        return ids
    return [str(i) for i in ids]


def id_sizes(ids: list[Any], *, utf8: bool = False) -> np.ndarray:
    """Each id's length as text, int64; ``utf8``: in UTF-8 bytes (the characters, when all are ASCII)."""
    text = text_ids(ids)
    if utf8 and not "".join(text).isascii():
        return np.fromiter((len(i.encode()) for i in text), dtype=np.int64, count=len(text))
    return np.fromiter(map(len, text), dtype=np.int64, count=len(text))


def offsets_of(lengths: np.ndarray) -> np.ndarray:
    """Where each row starts in a flat buffer of rows of ``lengths``: row ``i`` is
    ``flat[offsets[i]:offsets[i + 1]]`` (int64, one more than the rows)."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices ``starts[k] .. starts[k] + counts[k] - 1`` for every ``k``, concatenated (int64)."""
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    steps = np.ones(total, dtype=np.int64)
    firsts = offsets_of(counts)[:-1]
    nonempty = counts > 0
    steps[firsts[nonempty]] = starts[nonempty] - np.concatenate(([0], (starts + counts - 1)[nonempty][:-1]))
    return np.cumsum(steps)


def flatten(vectors: Sequence[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows' float32 vectors (``None``: the row has none) as one buffer with a single copy of each, its
    offsets, and which rows have no vector."""
    n = len(vectors)
    present = [vector for vector in vectors if vector is not None]
    nulls = np.fromiter((vector is None for vector in vectors), dtype=bool, count=n)
    lengths = np.fromiter(
        (0 if vector is None else vector.size for vector in vectors), dtype=np.int64, count=n
    )
    flat = np.concatenate(present) if present else np.zeros(0, dtype=np.float32)
    return flat, offsets_of(lengths), nulls
