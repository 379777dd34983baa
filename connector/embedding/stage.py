"""The embedding stage of a write: rows with text and no vector get the model's vector on their way in.

``EmbeddingStage.fill(chunks)`` sits between the input and the batcher (``Client._prepare``). It
cuts the input into pieces of ``PIECE_ROWS`` rows, sends the texts of the rows that need a vector
(text in ``text_column``, no vector in ``vector_column``) through an ``EmbeddingClient`` stream, and
yields each piece again, in order, with the model's vectors in its vector column. The stream reads
ahead of the write by its window, so pieces are embedded while earlier ones are being upserted,
and no further, so memory stays bounded.

Arrow batches and dicts give the text in ``text_column``; ``Columns`` (what the Beam sink hands
the client) have it in each row's metadata under that key, where the sink's reader put it (an
``ml.rag`` Chunk's content under ``content_key``).

A row whose text could not be embedded (refused by the server, retries spent, a text that is not
a string or is empty, which is never sent) leaves its piece: it is never upserted without a vector. It comes out as a ``Prepared``
holding its ``BatchFailure``, with the embedding's reason and the row's position in the write's input,
which the client counts like any row it refuses; the rows kept keep their positions too. Rows that
already have a vector pass through untouched.

A vector column of text (each row's vector a JSON list of numbers: a CSV's, or Spark's string column)
is read here by the Arrow rows' own reader (``rows.arrow``), strictly, and handed on as lists of floats,
which the model's vectors can join: a row whose text is not one fails alone, with that reader's reason
(``column 'values': vector text is not a JSON list of numbers: ...``), and is not embedded; a null,
empty or blank text is no vector, so the row's text is embedded.

An upsert row with neither text nor a vector (dense or sparse) fails here, with a reason naming the
text column (``no text in column 'text' and no vector``): the rows' checks would call it a null vector,
which points at the wrong column. A delete row (option ``op_column``) needs neither and passes, as does
a sparse-only row (the database's rules decide it), and a row whose op names none (its reader refuses
it, by name). A line Spark's reader could not parse (a text in its ``_corrupt_record`` column) fails
first, unembedded, with the rows' reader's reason (``column '_corrupt_record': text is not valid UTF-8;
Spark could not parse the line``): Spark reads the field at fault as null, which is no missing text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import errors
from ..errors import (
    ConfigError,
    ConnectorError,
    DimensionMismatch,
    ServerError,
    TransportError,
    Unavailable,
)
from ..options import without_password
from ..report import STOPPED, BatchFailure, WriteReport
from ..rows import Chunk, Columns, ColumnSpec, Prepared, offsets_of, reported_ids
from ..rows.arrow import (  # the rows' readers: reasons word for word
    CORRUPT_RECORD,
    corrupt_records,
    vector_column_floats,
)
from ..rows.chunks import count_rows
from ..rows.dicts import DictReader
from ..rows.floats import json_vector
from ..rows.ops import CODES, DELETE, UPSERT, DeleteMark, arrow_ops, op_of
from ..rows.text import checked_text, is_text, without_views
from .client import PROBE_TEXT, WINDOW_PER_SLOT, EmbeddingClient
from .options import EmbedOptions
from .result import EmbeddedChunk, InputFailure
from .wire import not_utf8

if TYPE_CHECKING:
    import pyarrow as pa

    from ..options import BackendOptions

__all__ = [
    "PIECE_ROWS",
    "EmbeddingStage",
    "stage_for",
]

PIECE_ROWS = 1024  # rows per piece: the unit that waits for its texts' vectors


class EmbedCounts(NamedTuple):
    """What a stage has done so far: rows embedded, requests sent, of them retries, replies throttled."""

    embedded: int = 0
    requests: int = 0
    retries: int = 0
    throttled: int = 0


def stage_for(options: BackendOptions, spec: ColumnSpec, upsert_rows: int = 1) -> EmbeddingStage | None:
    """The stage a client with ``options`` runs (``upsert_rows``: its rows per upsert request), or
    ``None`` when it embeds nothing."""
    embed = options.embed_options()
    if embed is None:
        return None
    assert options.text_column is not None  # BackendOptions saw to it
    return EmbeddingStage(
        embed,
        spec,
        options.text_column,
        upsert_rows,
        dimension=options.dimension,
        model_answered=options.embed_model_answered,
    )


@dataclass(slots=True, eq=False)
class _Piece:
    """Up to ``PIECE_ROWS`` input rows, the positions of those to embed, and their texts."""

    rows: Any  # a pyarrow RecordBatch, a list of mappings, or Columns
    need: np.ndarray  # int64 positions in ``rows`` whose text goes to the model
    texts: list[str]
    invalid: dict[int, str] = field(default_factory=dict)  # position -> why its text cannot be sent
    # positions of upsert rows with no text and no vector (``no_text``): they fail here
    bare: list[int] = field(default_factory=list)
    # position -> why its vector's text is no vector (a JSON list of numbers): it fails here, unembedded
    refused: dict[int, str] = field(default_factory=dict)
    # the rows' offsets in the write's input (``Chunk.positions``); set by ``fill``
    at: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))


def _piece(rows: Any, texts: Iterable[tuple[int, Any]], text_column: str) -> _Piece:
    """The piece for ``rows`` from the texts of its rows without a vector (position, value): strings are
    embedded, other values and empty strings fail their row, ``None`` means the row has no text."""
    need: list[int] = []
    sent: list[str] = []
    invalid: dict[int, str] = {}
    bare: list[int] = []
    for i, text in texts:
        if text is None:
            bare.append(i)
            continue
        problem = not_utf8(text) if isinstance(text, str) and text else None
        if problem is not None:
            invalid[i] = f"column {text_column!r} holds a text that is {problem}"
        elif isinstance(text, str) and text:
            need.append(i)
            sent.append(text)
        elif isinstance(text, str):
            invalid[i] = _empty_text(text_column)
        else:
            invalid[i] = f"column {text_column!r} holds {type(text).__name__}, not a string"
    return _Piece(rows, np.asarray(need, dtype=np.int64), sent, invalid, bare)


def no_text(text_column: str) -> str:
    """The reason an upsert row with neither text nor a vector fails."""
    return f"no text in column {text_column!r} and no vector"


def _empty_text(text_column: str) -> str:
    # failed here, never sent: an OpenAI-compatible server refuses a request with one empty input whole,
    # and finding it by splitting the request spends the isolation budget the other rows' may need
    return f"column {text_column!r} holds an empty string, which embedding servers refuse"


class EmbeddingStage:
    """Fills the vector column of rows that have text and no vector, through one ``EmbeddingClient``
    (opened on the first write, reused by the next, closed by ``close``)."""

    def __init__(
        self,
        options: EmbedOptions,
        spec: ColumnSpec,
        text_column: str,
        upsert_rows: int = 1,
        *,
        dimension: int | None = None,
        model_answered: str | None = None,
    ) -> None:
        self.options, self.spec, self.text_column = options, spec, text_column
        # the write's (option dimension, or the model's learnt by a driver's probe)
        self.dimension = dimension
        # the model the probe's reply named (``probe``; a driver's, passed to its workers): every reply must
        # name it, or none
        self.model_answered = model_answered
        self._client: EmbeddingClient | None = None
        window_inputs = WINDOW_PER_SLOT * options.max_concurrency * options.batch_size
        # whole upsert requests per piece: upsert batches do not span pieces, so a piece of 1,024 rows
        # would send 1,000 and then 24 (twice the requests, which a slow database pays for)
        least = max(PIECE_ROWS, options.batch_size)
        self.piece_rows = -(-least // upsert_rows) * upsert_rows
        self.pieces_ahead = max(2, -(-window_inputs // self.piece_rows) + 1)

    def __repr__(self) -> str:
        return f"EmbeddingStage({without_password(self.options.endpoint)}, model={self.options.model!r}, text={self.text_column!r})"

    @property
    def client(self) -> EmbeddingClient:
        if self._client is None:
            self._client = EmbeddingClient(self.options)
        return self._client

    def counts(self) -> EmbedCounts:
        """The stage's counts over its life; zeros before its first write."""
        if self._client is None:
            return EmbedCounts()
        stats = self._client.stats
        return EmbedCounts(stats.embedded, stats.requests, stats.retries, stats.throttled)

    def account(self, report: WriteReport, before: EmbedCounts) -> None:
        """Give ``report`` this write's share of the counts: those since ``before`` (``counts()`` as the
        write began), for every path that embeds (the engine's writes and a bulk path's staging)."""
        now = self.counts()
        report.embedded = now.embedded - before.embedded
        report.embed_requests = now.requests - before.requests
        report.embed_retries = now.retries - before.retries
        report.embed_throttled = now.throttled - before.throttled

    def mismatch(self, exc: DimensionMismatch, dim: int | None, *, stated: bool = False) -> ConfigError:
        """The error for a target whose dimension is not the vectors' the write would embed: every
        embedded row would fail alike. It names the option that set that dimension: ``embed_dimensions``,
        option ``dimension`` where ``stated`` says the write's dimension was given, else the model."""
        model = self.options.model
        if self.options.dimensions is not None or stated:
            option = "embed_dimensions" if self.options.dimensions is not None else "dimension"
            return ConfigError(
                f"option {option}: the write embeds {dim}-dimensional vectors with {model!r}, and the target "
                f"holds others: {exc} (state the target's dimension; embed_dimensions asks a model that can "
                "for shorter vectors)"
            )
        return ConfigError(
            f"option embed_model: {model!r} answers {dim}-dimensional vectors, and the target "
            f"holds others: {exc} (embed_dimensions asks a model that can for shorter vectors)"
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def probe(self) -> int:
        """One request with one short text: the model's dimension, or the error that stops a job before
        it starts (``AuthError``, ``NotFound``, a ``ConfigError`` quoting a refusal), each naming the
        write's option at fault: the key's, or the model's (a 404 may also be a wrong ``embed_url``). The
        model its reply names is kept in ``model_answered``, for the workers' replies to name."""
        result = self.client.embed([PROBE_TEXT])  # an AuthError or a NotFound names its option already
        if result.failures:
            raise _probe_error(result.failures[0])
        self.model_answered = self.client.model_answered
        return int(result.vectors.shape[1])

    def check_schema(self, empty: pa.RecordBatch) -> pa.RecordBatch:
        """For a driver's column check on an empty batch of the input's schema: the text column's
        ``ConfigError`` if it is missing or not strings, else the batch as the stage hands it on
        (with a vector column of lists, where the input has none or one of text)."""
        rows: pa.RecordBatch = self._plan_arrow(empty).rows
        return rows

    def fill(self, chunks: Iterable[Chunk]) -> Iterator[Chunk | Prepared]:
        """The input's pieces, in order, each with its rows' vectors and positions; a ``Prepared`` of
        failures after a piece some of whose texts could not be embedded."""
        pieces: deque[_Piece] = deque()  # appended on the stream's feeder thread, taken here in order

        def texts() -> Iterator[list[str]]:
            for chunk in chunks:
                for start, rows in _pieces(chunk.rows, self.piece_rows):
                    piece = self._plan(rows)
                    piece.at = chunk.positions[start : start + count_rows(rows)]
                    pieces.append(piece)
                    yield piece.texts

        if self.dimension is not None:  # a first reply of another length is malformed, not the model's
            self.client.expect(self.dimension, "the write's dimension (option dimension)")
        if self.model_answered is not None:  # a first reply from a gateway's fallback is not the model's
            self.client.expect_model(self.model_answered, "the driver's probe")
        stream = self.client.stream(texts(), max_chunks_ahead=self.pieces_ahead)
        try:
            for embedded in stream:
                yield from self._finish(pieces.popleft(), embedded)
        except ConnectorError as exc:  # the stream stopped (a fatal error): the rows read are accounted
            if pieces:
                yield Prepared(failures=[f for piece in pieces for f in self._stopped(piece, exc)])
            raise
        finally:
            stream.close()  # type: ignore[attr-defined]  # a generator: stops the feeder at once

    def _stopped(self, piece: _Piece, exc: ConnectorError) -> list[BatchFailure]:
        """The rows of a piece read but never handed on, failed because the write stopped on ``exc``: one
        failure per op, so a delete row's says "delete", as the engine's dropped batches do."""
        n = count_rows(piece.rows)
        ids = self._ids_of(piece.rows, list(range(n)))
        deletes = self._deletes(piece.rows)
        failures = []
        for op, rows in ((UPSERT, np.flatnonzero(~deletes)), (DELETE, np.flatnonzero(deletes))):
            if len(rows):
                failures.append(
                    BatchFailure(
                        ids=tuple(ids[i] for i in rows.tolist()),
                        positions=tuple(piece.at[rows].tolist()),
                        error=f"not written: the write stopped on {type(exc).__name__}: {exc}",
                        error_type=STOPPED,
                        retryable=True,
                        op=op,
                    )
                )
        return failures

    def _deletes(self, rows: Any) -> np.ndarray:
        """Per row: a delete, as its reader reads it (a row whose op names none is no delete)."""
        n = count_rows(rows)
        if isinstance(rows, Columns):
            marked = [rows.metadata is not None and type(rows.metadata[i]) is DeleteMark for i in range(n)]
            coded = np.zeros(n, dtype=bool) if rows.ops is None else np.asarray(rows.ops) == CODES[DELETE]
            return np.asarray(marked, dtype=bool) | coded
        op_column = self.spec.op_column
        if op_column is None:
            return np.zeros(n, dtype=bool)
        if isinstance(rows, list):
            return np.asarray([op_of(row.get(op_column)) == DELETE for row in rows], dtype=bool)
        codes = self._arrow_codes(rows)
        return np.zeros(n, dtype=bool) if codes is None else codes == CODES[DELETE]

    # -- one piece ---------------------------------------------------------------------------------

    def _plan(self, rows: Any) -> _Piece:
        if isinstance(rows, Columns):
            return self._plan_columns(rows)
        if isinstance(rows, list):
            return self._plan_dicts(rows)
        return self._plan_arrow(rows)

    def _plan_dicts(self, rows: list[Mapping[str, Any]]) -> _Piece:
        text_column, vector_column = self.text_column, self.spec.vector_column
        deletes = self._deletes(rows)  # a delete needs no vector: its text is not embedded (nor changed)
        texts = (
            (i, row.get(text_column))
            for i, row in enumerate(rows)
            if not deletes[i] and _missing(row.get(vector_column))
        )
        piece = _piece(rows, texts, text_column)
        if piece.bare:  # deletes, sparse-only rows and bad ops are not bare: read as the rows' reader does
            op_key, sparse_key = self.spec.op_column, DictReader.from_spec(self.spec).sparse_key
            piece.bare = [
                i
                for i in piece.bare
                if rows[i].get(sparse_key) is None
                and (op_key is None or op_of(rows[i].get(op_key)) == UPSERT)
            ]
        return piece

    def _plan_columns(self, cols: Columns) -> _Piece:
        metadata, text_column = cols.metadata, self.text_column
        lengths = np.diff(cols.offsets)
        without_vector = np.flatnonzero(cols.null_vector | (lengths == 0)).tolist()
        texts = (
            (i, None if metadata is None else (metadata[i] or {}).get(text_column)) for i in without_vector
        )
        piece = _piece(cols, texts, text_column)
        if piece.bare:  # a delete carries its op in its metadata (a DeleteMark) or in the rows' ops
            sparse, ops = cols.sparse, cols.ops
            piece.bare = [
                i
                for i in piece.bare
                if (metadata is None or type(metadata[i]) is not DeleteMark)
                and (ops is None or ops[i] != CODES[DELETE])
                and (sparse is None or sparse[i] is None)
            ]
        return piece

    def _plan_arrow(self, batch: pa.RecordBatch) -> _Piece:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.types as pt

        names = batch.schema.names
        if self.text_column not in names:
            raise ConfigError(
                f"option text_column: no column {self.text_column!r} in the input (columns: {', '.join(names)})"
            )
        batch = without_views(batch)  # rows are taken from it, and Arrow takes no view
        text = batch.column(self.text_column)
        if not is_text(text.type):
            raise ConfigError(
                f"option text_column: column {self.text_column!r} has type {text.type}; expected strings"
            )
        n = batch.num_rows
        vectorless = np.ones(n, dtype=bool)
        refused: dict[int, str] = {}
        if self.spec.vector_column in names and _holds_text(batch.column(self.spec.vector_column).type):
            batch, refused = self._parse_vectors(batch)
        if CORRUPT_RECORD in names:  # a line Spark could not parse: the cause, whatever its text or vector
            refused |= corrupt_records(batch.column(CORRUPT_RECORD))
        if self.spec.vector_column in names:
            vectors = batch.column(self.spec.vector_column)
            if (
                pt.is_list(vectors.type)
                or pt.is_large_list(vectors.type)
                or pt.is_fixed_size_list(vectors.type)
            ):
                lengths = pc.fill_null(pc.list_value_length(vectors), 0)
                vectorless = pc.equal(lengths, 0).to_numpy(zero_copy_only=False)
            elif not pt.is_null(vectors.type):
                vectorless[:] = False  # refused later, by the column check
        else:  # text alone: a vector column for the model's vectors, whichever rows get one
            batch = batch.append_column(self.spec.vector_column, pa.nulls(n, type=pa.list_(pa.float32())))
        vectorless[list(refused)] = False  # a refused row (bad vector, corrupt line) fails: not embedded
        # a delete needs no vector: its text is not embedded (nor changed, its id may be derived from it)
        vectorless &= ~self._deletes(batch)
        has_text = text.is_valid().to_numpy(zero_copy_only=False)
        need = np.flatnonzero(has_text & vectorless).astype(np.int64)
        text, bad_bytes = checked_text(text, self.text_column)  # a Latin-1 byte: its row fails, unsent
        if bad_bytes:
            need = need[~np.isin(need, list(bad_bytes))]
        texts = text.take(pa.array(need)).to_pylist() if len(need) else []
        if "" not in texts and all(not_utf8(text) is None for text in texts):
            piece = _Piece(batch, need, texts)
        else:  # fails the empty, and any text UTF-8 cannot carry (Arrow's are UTF-8; checked all the same)
            piece = _piece(batch, zip(need.tolist(), texts, strict=True), self.text_column)
        piece.invalid.update((i, why) for i, why in bad_bytes.items() if vectorless[i])
        piece.refused = refused
        bare = vectorless & ~has_text
        if bare.any():
            piece.bare = np.flatnonzero(
                bare & self._arrow_upserts(batch) & ~self._arrow_sparse(batch)
            ).tolist()
        return piece

    def _parse_vectors(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, dict[int, str]]:
        """``batch`` with its vector column of JSON text as ``list<float>`` (the model's vectors go in as
        lists), read by the rows' own reader, and the rows whose text is not a vector, each with why. A
        delete row's text is not read, as its reader does not read it."""
        import pyarrow as pa

        name = self.spec.vector_column
        flat, offsets, nulls, refused = vector_column_floats(
            batch.column(name), name, batch.num_rows, self._deletes(batch)
        )
        vectors = pa.ListArray.from_arrays(
            pa.array(offsets.astype(np.int32)), pa.array(flat, type=pa.float32()), mask=pa.array(nulls)
        )
        return batch.set_column(batch.schema.get_field_index(name), name, vectors), refused

    def _arrow_upserts(self, batch: pa.RecordBatch) -> np.ndarray:
        """Per row: an upsert, as option ``op_column`` says (every row without it); a row whose op names
        none is not one (its reader refuses it, by name), nor any in a column the reader refuses."""
        codes = self._arrow_codes(batch)
        return np.ones(batch.num_rows, dtype=bool) if codes is None else codes == CODES[UPSERT]

    def _arrow_codes(self, batch: pa.RecordBatch) -> np.ndarray | None:
        """Per row: its op's code (``None`` without option ``op_column``); -1 for a row whose op names
        none, and for every row of an op column missing or refused (its reader refuses them, by name)."""
        op_column, n = self.spec.op_column, batch.num_rows
        if op_column is None:
            return None
        if op_column not in batch.schema.names:
            return np.full(n, -1, dtype=np.int8)
        try:
            codes, bad = arrow_ops(batch.column(op_column), op_column)
        except ConfigError:
            return np.full(n, -1, dtype=np.int8)
        codes[list(bad)] = -1
        return codes

    def _arrow_sparse(self, batch: pa.RecordBatch) -> np.ndarray:
        """Per row: a sparse vector is there (option ``sparse_column``)."""
        column = self.spec.sparse_column
        if column is None or column not in batch.schema.names:
            return np.zeros(batch.num_rows, dtype=bool)
        return np.asarray(batch.column(column).is_valid().to_numpy(zero_copy_only=False), dtype=bool)

    def _finish(self, piece: _Piece, embedded: EmbeddedChunk) -> Iterator[Chunk | Prepared]:
        reasons = {int(piece.need[f.index - embedded.offset]): _reason(f) for f in embedded.failures}
        reasons |= {
            i: ("InvalidInput", _not_embedded(message), False, 0) for i, message in piece.invalid.items()
        }
        reasons |= dict.fromkeys(piece.bare, ("Invalid", no_text(self.text_column), False, 0))
        reasons |= {i: ("Invalid", why, False, 0) for i, why in piece.refused.items()}
        done = piece.need[embedded.indices - embedded.offset]
        if not len(done) and not reasons:
            yield Chunk(piece.rows, piece.at)
            return
        failed = sorted(reasons)
        ids = self._ids_of(piece.rows, failed)  # before the rows change: the input's ids
        kept: Any
        if isinstance(piece.rows, list):
            kept = self._finish_dicts(piece.rows, done, embedded.vectors, reasons)
        elif isinstance(piece.rows, Columns):
            kept = _columns_with(piece.rows, done, embedded.vectors, failed)
        else:
            kept = self._finish_arrow(piece.rows, done, embedded.vectors, reasons)
        if kept is not None:
            yield Chunk(kept, np.delete(piece.at, failed))
        if reasons:
            yield Prepared(failures=_failures(reasons, ids, piece.at))

    def _finish_dicts(
        self,
        rows: list[Mapping[str, Any]],
        done: np.ndarray,
        vectors: np.ndarray,
        reasons: Mapping[int, tuple[str, str, bool, int]],
    ) -> list[Mapping[str, Any]] | None:
        out: list[Mapping[str, Any]] = list(rows)
        column = self.spec.vector_column
        for k, i in enumerate(done.tolist()):
            out[i] = {**rows[i], column: vectors[k]}  # a new dict: the caller's rows are left as they were
        kept = [row for i, row in enumerate(out) if i not in reasons]
        return kept or None

    def _finish_arrow(
        self,
        batch: pa.RecordBatch,
        done: np.ndarray,
        vectors: np.ndarray,
        reasons: Mapping[int, tuple[str, str, bool, int]],
    ) -> pa.RecordBatch | None:
        import pyarrow as pa

        if len(done):
            batch = _with_vectors(batch, self.spec.vector_column, done, vectors)
        if reasons:
            keep = np.ones(batch.num_rows, dtype=bool)
            keep[list(reasons)] = False
            if not keep.any():
                return None
            batch = batch.filter(pa.array(keep))
        return batch

    def _ids_of(self, rows: Any, failed: list[int]) -> dict[int, str | None]:
        """The ids of the rows at ``failed`` as the report shows them (read by the rows' own readers)."""
        if not failed:
            return {}
        if isinstance(rows, Columns):
            every = reported_ids(rows, self.spec)
            return {i: every[i] for i in failed}
        if isinstance(rows, list):
            subset: Any = [rows[i] for i in failed]
        else:
            import pyarrow as pa

            subset = rows.take(pa.array(failed, type=pa.int64()))
        return dict(zip(failed, reported_ids(subset, self.spec), strict=True))


def _probe_error(failure: InputFailure) -> ConnectorError:
    """The error of a probe text that was not embedded: a refusal blames the model (``ConfigError``); a
    failure that may pass (a throttle, a 503, a timeout) is raised as what it was, for a job to retry."""
    if failure.error_type == "Rejected":
        return ConfigError(
            f"option embed_model: the embedding endpoint refused a one-line probe text: {failure.message}"
        )
    kind = getattr(errors, failure.error_type, None)
    message = f"the embedding endpoint did not embed a one-line probe text: {failure.message}"
    if isinstance(kind, type) and issubclass(kind, ServerError | TransportError):
        return kind(message)
    return ServerError(message) if not failure.retryable else Unavailable(message)


def _pieces(chunk: Any, size: int) -> Iterator[tuple[int, Any]]:
    """``chunk`` in pieces of at most ``size`` rows, each with where it starts in ``chunk`` (Arrow
    slices and ``Columns``' vectors are views)."""
    if isinstance(chunk, Columns) and chunk.n <= size:
        yield 0, chunk
    elif isinstance(chunk, Columns):
        for start in range(0, chunk.n, size):
            yield start, _slice_columns(chunk, start, min(chunk.n, start + size))
    elif isinstance(chunk, list):
        for start in range(0, len(chunk), size):
            yield start, chunk[start : start + size]
    else:  # an Arrow record batch
        for start in range(0, max(chunk.num_rows, 1), size):
            yield start, chunk.slice(start, size)


def _slice_columns(cols: Columns, start: int, stop: int) -> Columns:
    offsets = cols.offsets[start : stop + 1]
    return Columns(
        n=stop - start,
        ids=cols.ids[start:stop],
        flat=cols.flat[offsets[0] : offsets[-1]],
        offsets=offsets - offsets[0],
        null_vector=cols.null_vector[start:stop],
        sparse=None if cols.sparse is None else cols.sparse[start:stop],
        metadata=None if cols.metadata is None else cols.metadata[start:stop],
        namespaces=None if cols.namespaces is None else cols.namespaces[start:stop],
        own_namespaces=cols.own_namespaces,
    )


def _columns_with(cols: Columns, rows: np.ndarray, vectors: np.ndarray, drop: list[int]) -> Columns | None:
    """``cols`` with ``vectors[k]`` as row ``rows[k]``'s vector (``rows`` increasing) and the rows in
    ``drop`` left out; ``None`` when none is left."""
    n = cols.n
    lengths = np.diff(cols.offsets)
    if len(rows):
        filled = np.zeros(n, dtype=bool)
        filled[rows] = True
        new_lengths = lengths.copy()
        new_lengths[rows] = vectors.shape[1]
        offsets = offsets_of(new_lengths)
        flat = np.empty(int(offsets[-1]), dtype=np.float32)
        flat[np.repeat(~filled, new_lengths)] = cols.flat[np.repeat(~filled, lengths)]
        flat[np.repeat(filled, new_lengths)] = vectors.reshape(-1)
        nulls = cols.null_vector & ~filled
        cols = Columns(
            n,
            cols.ids,
            flat,
            offsets,
            nulls,
            cols.sparse,
            cols.metadata,
            cols.namespaces,
            own_namespaces=cols.own_namespaces,
        )
        lengths = new_lengths
    if not drop:
        return cols
    keep = np.ones(n, dtype=bool)
    keep[drop] = False
    if not keep.any():
        return None
    kept = np.flatnonzero(keep).tolist()
    offsets = offsets_of(lengths[keep])
    return Columns(
        n=len(kept),
        ids=[cols.ids[i] for i in kept],
        flat=cols.flat[np.repeat(keep, lengths)],
        offsets=offsets,
        null_vector=cols.null_vector[keep],
        sparse=None if cols.sparse is None else [cols.sparse[i] for i in kept],
        metadata=None if cols.metadata is None else [cols.metadata[i] for i in kept],
        namespaces=None if cols.namespaces is None else [cols.namespaces[i] for i in kept],
        own_namespaces=cols.own_namespaces,
    )


def _holds_text(typ: pa.DataType) -> bool:
    """Whether a column of ``typ`` holds text, an extension type's (``arrow.json``) by its storage's."""
    import pyarrow as pa

    return is_text(typ.storage_type if isinstance(typ, pa.ExtensionType) else typ)


def _missing(vector: Any) -> bool:
    """A dict row's vector is none, as Arrow's reader of text takes it: null, empty, blank text (a CSV's
    empty field), or the text of an empty list."""
    if vector is None:
        return True
    if isinstance(vector, str):
        if not vector.strip():
            return True
        read = json_vector(vector)
        return read is not None and len(read) == 0
    try:
        return len(vector) == 0
    except TypeError:
        return False  # not a sequence: the rows' reader refuses it, by name


def _reason(failure: InputFailure) -> tuple[str, str, bool, int]:
    return (failure.error_type, _not_embedded(failure.message), failure.retryable, failure.attempts)


def _not_embedded(message: str) -> str:
    return f"text not embedded: {message}"


def _failures(
    reasons: Mapping[int, tuple[str, str, bool, int]], ids: Mapping[int, str | None], positions: np.ndarray
) -> list[BatchFailure]:
    """One ``BatchFailure`` per distinct reason, rows in order (``positions``: the piece's rows' offsets
    in the write's input)."""
    grouped: dict[tuple[str, str, bool, int], list[int]] = {}
    for i in sorted(reasons):
        grouped.setdefault(reasons[i], []).append(i)
    return [
        BatchFailure(
            ids=tuple(ids.get(i) for i in rows),
            positions=tuple(int(positions[i]) for i in rows),
            error=error,
            error_type=error_type,
            retryable=retryable,
            attempts=attempts,
        )
        for (error_type, error, retryable, attempts), rows in grouped.items()
    ]


def _with_vectors(batch: pa.RecordBatch, name: str, rows: np.ndarray, vectors: np.ndarray) -> pa.RecordBatch:
    """``batch`` with ``vectors[k]`` in column ``name`` at row ``rows[k]``, every other row as it was."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n, dim = batch.num_rows, vectors.shape[1]
    if len(rows) == n:
        flat, mask = vectors.reshape(-1), None  # every row embedded: the matrix itself, no copy
    else:
        full = np.zeros((n, dim), dtype=np.float32)
        full[rows] = vectors
        flat = full.reshape(-1)
        hole = np.ones(n, dtype=bool)
        hole[rows] = False
        mask = pa.array(hole)
    embedded = pa.FixedSizeListArray.from_arrays(pa.array(flat), dim, mask=mask)
    names = batch.schema.names
    if name not in names:
        return batch.append_column(name, embedded)
    position = names.index(name)
    existing = batch.column(position)
    if existing.null_count < n:  # some rows keep their own vectors
        filled = np.zeros(n, dtype=bool)
        filled[rows] = True
        as_lists = pa.list_(pa.float32())
        try:
            existing = existing.cast(as_lists)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise ConfigError(
                f"option vector_column: column {name!r} has type {existing.type}; expected a list of floats"
            ) from None
        embedded = pc.if_else(pa.array(filled), embedded.cast(as_lists), existing)
    return batch.set_column(position, name, embedded)
