"""``EmbeddingClient``: texts in, float32 vectors out, in input order, many requests in flight.

Requests run on the one dispatcher the upsert engine runs on (``dispatch.py``): its sender threads,
AIMD slots, retries (capped full-jitter backoff that honours ``Retry-After``, under a retry budget),
isolation of refused inputs, isolation budget and systemic stop. This module says how a request of
texts is sent and accounted for, and keeps what is the embedding stream's own:

- A feeder thread pulls input chunks, cuts them into requests by count and by characters (a
  request may span chunks), and starts one only when the AIMD limit has a free slot and fewer
  than ``WINDOW_PER_SLOT × max_concurrency`` requests wait to be handed over, so memory stays
  bounded however long the input and however slow the consumer.
- A sender decodes the reply straight into one float32 matrix. An item of the reply that is no vector
  like its others (a null, a list of another length) fails its input alone, as a vector holding NaN does,
  and the others are kept. A request the server refuses (400
  and kin) is split until exactly the refused inputs are left, whatever the messages say (an
  OpenAI-compatible server may or may not name the input); each refused input fails alone with the
  server's reason and the others are embedded.
- Base64 first: a refusal before any base64 reply has come back is tried once more as
  ``"float"``; if that is accepted the client asks for floats from then on.
- A reply names its model: the first well-formed reply that names one (or ``expect_model``, a driver's
  probe's) fixes it, and a reply naming another (a gateway's fallback to a model of the same length,
  whose vectors are of another space) is malformed, as one of another dimension is: sent again once,
  then its inputs fail alone. A reply naming none is taken, as it is from servers that never do.
- The consumer's thread assembles finished requests into chunks in input order and yields them.

Fatal errors (bad key, no such model, a server never reached, a reply that is not the protocol
twice before any reply was, a systemic refusal) stop the feeder, let the requests in flight finish, and are raised by the
stream. Per-input failures are data: ``EmbeddedChunk.failures``. A stream closed on an error retries
nothing more; on an interrupt (Ctrl-C) it does not wait for the requests on the wire either, as an
interrupted write does not: they end on their own threads.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dispatch import Dispatcher
from ..errors import ConnectorError, Rejected, ServerError, SystemicRejection
from ..forks import ForkCheck
from ..options import without_password
from ..redaction import Secrets
from .options import EmbedOptions
from .result import EmbeddedChunk, EmbedStats, InputFailure
from .transport import EmbeddingTransport
from .wire import Decoded, MalformedReply, decode, not_utf8, request_body

__all__ = ["PROBE_TEXT", "EmbedResult", "EmbeddingClient"]

PROBE_TEXT = "vectordb-connector probe"  # a text every model embeds: the driver's probe, the control request
WINDOW_PER_SLOT = 4  # requests sent or done but not yet handed over, per unit of max_concurrency
MAX_PENDING_CHUNKS = 4096  # chunks read but not yet handed over (beyond what the window holds)
MODEL_CHARS = 100  # of a reply's model name quoted in an error


@dataclass(frozen=True, slots=True)
class EmbedResult:
    """All inputs' vectors, ``nan`` in the rows of ``failures``; shape ``(n, 0)`` if none was embedded."""

    vectors: np.ndarray
    failures: tuple[InputFailure, ...]

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass(slots=True)
class _Part:
    """Inputs sent together: their positions among all inputs, and their texts."""

    indices: list[int]
    texts: list[str]

    def __len__(self) -> int:
        return len(self.texts)

    def halves(self) -> tuple[_Part, _Part]:
        mid = len(self.texts) // 2
        return (
            _Part(self.indices[:mid], self.texts[:mid]),
            _Part(self.indices[mid:], self.texts[mid:]),
        )


@dataclass(slots=True, eq=False)
class _Request:
    """One request's inputs ``[lo, hi)`` and, once ``done``, what became of each."""

    lo: int
    hi: int
    part: _Part
    failures: list[InputFailure] = field(default_factory=list)
    pieces: list[tuple[list[int], np.ndarray]] = field(default_factory=list)
    indices: np.ndarray | None = None
    vectors: np.ndarray | None = None
    done: bool = False
    stop: threading.Event | None = None  # its stream's: set, the request is not sent again

    def finish(self, dim: int | None) -> None:
        """Merge the accepted pieces into one matrix, in input order (isolation may accept out of order)."""
        if len(self.pieces) == 1:
            self.indices = np.asarray(self.pieces[0][0], dtype=np.int64)
            self.vectors = self.pieces[0][1]
        elif self.pieces:
            indices = np.concatenate([np.asarray(i, dtype=np.int64) for i, _ in self.pieces])
            vectors = np.concatenate([v for _, v in self.pieces])
            order = np.argsort(indices, kind="stable")
            self.indices, self.vectors = indices[order], vectors[order]
        else:
            self.indices = np.empty(0, dtype=np.int64)
            self.vectors = np.empty((0, dim or 0), dtype=np.float32)
        self.failures.sort(key=lambda failure: failure.index)
        self.pieces = []
        self.part = _Part([], [])  # the texts are no longer needed


class _Batcher:
    """Cuts a stream of (index, text) into requests of at most ``batch_size`` inputs and ``max_chars``."""

    def __init__(self, batch_size: int, max_chars: int) -> None:
        self.batch_size, self.max_chars = batch_size, max_chars
        self._start()

    def _start(self, lo: int = 0) -> None:
        self.lo, self.hi, self.chars = lo, lo, 0
        self.indices: list[int] = []
        self.texts: list[str] = []
        self.invalid: list[InputFailure] = []

    def add(self, index: int, text: object) -> _Request | None:
        """Take one input; return the request it completed, if any."""
        ready = None
        problem = _unsendable(text)
        if problem is not None:
            message = f"input {index} is {problem}"
            self.invalid.append(InputFailure(index=index, error_type="InvalidInput", message=message))
        else:
            assert isinstance(text, str)
            if self.texts and self.chars + len(text) > self.max_chars:
                ready = self.flush()
            self.indices.append(index)
            self.texts.append(text)
            self.chars += len(text)
        self.hi = index + 1
        if len(self.texts) + len(self.invalid) >= self.batch_size:
            # never two at once: after a flush for size, one input is held, below any batch_size > 1
            ready = self.flush()
        return ready

    def flush(self) -> _Request | None:
        """The inputs taken so far as a request (None if there are none)."""
        if self.hi == self.lo:
            return None
        request = _Request(self.lo, self.hi, _Part(self.indices, self.texts), failures=list(self.invalid))
        self._start(self.hi)
        return request


def _unsendable(text: object) -> str | None:
    """Why ``text`` is never sent, or ``None``: not a string, an empty string (OpenAI-compatible servers
    refuse a whole request for one), a string UTF-8 cannot carry."""
    if not isinstance(text, str):
        return f"{type(text).__name__}, not a string"
    if not text:
        return "an empty string, which embedding servers refuse"
    return not_utf8(text)


class EmbeddingClient:
    """An OpenAI-compatible embeddings client: ``stream(chunks)`` and ``embed(texts)``. Use it as a
    context manager; it owns a pool of ``max_concurrency`` sender threads and their connections."""

    def __init__(
        self,
        options: EmbedOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.options = options
        self._transport = EmbeddingTransport(
            options.endpoint,
            options.credential(),
            secrets=Secrets.of(options),
            max_connections=options.max_concurrency,
            key_option=options.key_option,
        )
        self._clock, self._sleep, self._rand = clock, sleep, rand
        self._sending = threading.local()  # the stop of the request a sender thread last sent
        self._fork = ForkCheck()
        self._forget_parent()  # what a forked child makes anew is made here first
        self._format = options.encoding_format
        self._format_known = options.encoding_format == "float"
        self._dim = options.dimensions
        self._dim_said = "asked for dimensions=" if options.dimensions else "earlier replies had "
        # the model the replies name, once one did (or ``expect_model``): a reply naming another is malformed
        self._model: str | None = None
        self._model_said = "earlier replies named "
        self._replied_well = False  # a reply was well-formed: the server speaks the protocol
        self.stats = EmbedStats(encoding_format=options.encoding_format)

    def _forget_parent(self) -> None:
        """A dispatcher and locks of this process's own, made anew in a forked child (multiprocessing's
        default on Linux): the parent's sender threads are not in it, and a lock a parent's thread held at
        the fork would stay held. The parent's are left alone (the transport forgets its connections)."""
        self.dispatch: Dispatcher[_Unit] = Dispatcher(
            self,
            self.options,
            clock=self._clock,
            sleep=self._pause,
            rand=self._rand,
            thread_name="vectordb-embed",
            control=self._control,
        )
        self.limit = self.dispatch.limit
        self._cond = self.dispatch.cond
        # the native decoder runs on several threads at once, Python's lock released; the Python decoder
        # (no native one, or a reply it does not take) holds the lock anyway, so one reply at a time:
        # threads queued on this lock sleep, where threads queued on the GIL force a switch every 5 ms
        # (40 % less CPU a row; jobs/bench/embed_throughput)
        self._decoding = threading.Lock()
        self._streaming = threading.Lock()  # held while a stream is open
        self._embedding = threading.Lock()  # embed() calls from several threads queue on it

    def __repr__(self) -> str:
        return f"EmbeddingClient({without_password(self.options.endpoint)}, model={self.options.model!r})"

    def __enter__(self) -> EmbeddingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.dispatch.close()
        self._transport.close()

    @property
    def dimension(self) -> int | None:
        """The vectors' length: ``dimensions`` if given, else ``expect``'s, else learnt from the first reply."""
        return self._dim

    @property
    def model_answered(self) -> str | None:
        """The model the replies name (a deployment's or a version's name, as the server says it): the
        first well-formed reply's that named one, else ``expect_model``'s; ``None`` while none did."""
        return self._model

    def expect_model(self, model: str, why: str) -> None:
        """The model the replies must name, known to the caller (``why``: what saw it, e.g. a driver's
        probe), when the client knows none yet: a reply naming another is malformed, even the first."""
        with self._cond:
            if self._model is None:
                self._model, self._model_said = model, f"{why} named "

    def expect(self, dimension: int, why: str) -> None:
        """The vectors' length, known to the caller (``why``: what set it, e.g. an option), when the client
        does not know one: a reply of another is malformed, even the first. Without it the first
        well-formed reply tells the length, and a first reply of another length would fail the rest."""
        with self._cond:
            if self._dim is None:
                self._dim, self._dim_said = dimension, f"{why} is "

    # -- public calls ------------------------------------------------------------------------------

    def stream(
        self, chunks: Iterable[Iterable[str]], *, max_chunks_ahead: int = MAX_PENDING_CHUNKS
    ) -> Iterator[EmbeddedChunk]:
        """One ``EmbeddedChunk`` per input chunk, in order, while later chunks are being embedded.

        ``chunks`` is consumed on a feeder thread, ahead of the consumer by at most the window of
        requests and ``max_chunks_ahead`` chunks (a bound for chunks with few or no texts, when the
        caller holds more than the texts for each); an error it raises comes out of this iterator
        after the chunks read before it. Closing the iterator early stops the feeder and waits for
        the requests in flight; closed on an error, it sends no retry, and on an interrupt (an error
        that is not an ``Exception``: ``KeyboardInterrupt``) it does not wait for the requests on the
        wire. One stream at a time: starting another while this one is open is a ``RuntimeError``.
        """
        if max_chunks_ahead < 1:
            raise ValueError("max_chunks_ahead must be at least 1")
        self._fork.once_per_process(self._forget_parent)
        return self._stream(chunks, max_chunks_ahead)

    def _stream(self, chunks: Iterable[Iterable[str]], max_chunks_ahead: int) -> Iterator[EmbeddedChunk]:
        # one stream at a time: the dispatcher keeps one stream's stop (its fatal error, its systemic
        # watch), and a second stream's begin() would clear the first's
        if not self._streaming.acquire(blocking=False):
            raise RuntimeError(
                f"{self!r}: another stream of this client is still open; finish or close it first, or use "
                "a second EmbeddingClient"
            )
        try:
            self.dispatch.begin()
            yield from _Run(self, iter(chunks), max_chunks_ahead).results()
        finally:
            self._streaming.release()

    def embed(self, texts: Sequence[str]) -> EmbedResult:
        """Every input's vector, in order; inputs that could not be embedded are in ``failures``. Calls
        from several threads run one after another."""
        if isinstance(texts, str | bytes):
            raise TypeError("texts must be a sequence of strings, not one string")
        self._fork.once_per_process(self._forget_parent)
        with self._embedding:
            chunks = list(self.stream([texts]))
        chunk = chunks[0]
        if chunk.ok:
            return EmbedResult(chunk.vectors, ())
        out = np.full((chunk.count, chunk.vectors.shape[1]), np.nan, dtype=np.float32)
        out[chunk.indices] = chunk.vectors
        return EmbedResult(out, chunk.failures)

    # -- the channel: how a request of texts is sent and accounted for (on sender threads) ----------

    noun, whole = "inputs", "stream"

    def counts(self, unit: _Unit) -> EmbedStats:
        return self.stats

    @property
    def answered(self) -> bool:
        """The endpoint has answered once, in this process (its transport's ``Host``)."""
        return self._transport.host.answered

    def send(self, unit: _Unit) -> tuple[np.ndarray, dict[int, str]]:
        """The reply's matrix, and its rows that are no vector, with why (the reply's faults: an item
        that is none; a vector that is not finite), found here, on the sender thread, not under the lock
        ``accepted`` holds."""
        stop = unit.request.stop
        if stop is not None and stop.is_set():
            raise _StreamClosed("not sent: the embedding stream was closed on an error")
        self._sending.stop = stop  # for the wait before a retry of it, on this thread (_pause)
        matrix, _, faults = self._send_checked(unit.part.texts)
        return matrix, self._faulty_rows(matrix, faults)

    def _faulty_rows(self, matrix: np.ndarray, faults: Mapping[int, str]) -> dict[int, str]:
        """The rows of ``matrix`` that are no vector, and why: the reply's faults (their rows are NaN),
        and the rows holding a NaN or an infinity (a float over float32's range)."""
        faulty = dict(faults)
        non_finite = _non_finite_rows(matrix)
        if non_finite is not None:
            message = f"{self._transport.where}: the embedding server returned a non-finite vector"
            for k in non_finite.tolist():
                faulty.setdefault(k, message)
        return faulty

    def _send_checked(self, texts: list[str]) -> Decoded:
        """A reply of one item per text, of the stream's dimension; its items that are no vector (a null,
        a list of another length) are its faults, whose inputs ``accepted`` fails alone. A reply malformed
        as a whole is sent again once: malformed again, it is fatal while no reply was well-formed (the
        server does not speak the protocol; one naming another model than the probe's does), and after
        well-formed ones it fails these texts alone (an extra item, vectors of another dimension: a fault
        of that reply, not a reason to drop the whole write; another model's: a gateway's fallback). Not
        sent again once the stream stopped (a fatal error, or closed on one): nothing is sent after a stop."""
        try:
            return self._well_formed(texts)
        except MalformedReply as exc:
            if self._stopped():
                raise _not_sent_again(exc) from None
            with self._cond:
                self.stats.retries += 1
        try:
            return self._well_formed(texts)
        except MalformedReply as exc:
            if not self._replied_well and not isinstance(exc, _OtherModel):
                raise
            raise _malformed_again(exc) from None

    def _stopped(self) -> bool:
        """The stream of the request this sender thread sends was stopped: by a fatal error (another
        request's), or closed on an error (``_Request.stop``)."""
        stop = getattr(self._sending, "stop", None)
        return self.dispatch.fatal is not None or (stop is not None and stop.is_set())

    def _well_formed(self, texts: list[str]) -> Decoded:
        """A reply of the stream's dimension naming the stream's model (or none): a gateway that falls back
        to another model of the same length (LiteLLM, Portkey) names it, and its vectors are of another
        space, which the index would hold beside the first model's with nothing to tell them apart. Items
        of it that are no vector are its ``faults``: the dimension is that of its vectors."""
        decoded = self._send(texts)
        matrix, model = decoded.matrix, decoded.model
        with self._cond:
            if self._dim is None:
                self._dim = matrix.shape[1]
            if matrix.shape[1] != self._dim:
                mismatch = (
                    f"the server returned {matrix.shape[1]}-dimensional vectors; {self._dim_said}{self._dim}"
                )
                raise MalformedReply(f"{self._transport.where}: {mismatch}")
            if model is not None and self._model is not None and model != self._model:
                raise _OtherModel(
                    f"{self._transport.where}: the reply names model {self._shown(model)}; "
                    f"{self._model_said}{self._shown(self._model)} (a gateway's fallback?): vectors of two "
                    "models are not written into one index"
                )
            if model is not None and self._model is None:
                self._model = model
            self._replied_well = True
        return decoded

    def _shown(self, model: str) -> str:
        """A model's name as an error quotes it: a reply's text, so credentials blanked, and cut short."""
        return repr(self._transport.secrets.blank(model)[:MODEL_CHARS])

    def _pause(self, delay_s: float) -> None:
        """The dispatcher's wait before a retry, on the sender thread that just sent: cut short by a fatal
        error (another request's 401 must not wait out this one's Retry-After, up to 300 s) or when the
        request's stream is closed on an error. Both are set under the dispatcher's condition, with
        ``notify_all``. An injected ``sleep`` (tests) is the wait itself."""
        if self._sleep is not time.sleep:
            if not self._stopped():
                self._sleep(delay_s)
            return
        stop = getattr(self._sending, "stop", None)
        deadline = time.monotonic() + delay_s
        with self._cond:
            while self.dispatch.fatal is None and (stop is None or not stop.is_set()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def accepted(
        self, unit: _Unit, outcome: tuple[np.ndarray, dict[int, str]]
    ) -> tuple[bool, ConnectorError | None]:
        """Keep the reply's vectors; a row that is no vector (an item the reply got wrong, a vector that
        is not finite) fails its input alone, as a reply the server got wrong, never a vector handed on."""
        matrix, faulty = outcome  # of the stream's dimension (_well_formed)
        indices = unit.part.indices
        if faulty:
            unit.request.failures.extend(
                InputFailure(index=indices[k], error_type="MalformedReply", message=message, attempts=1)
                for k, message in faulty.items()
            )
            self.stats.failed += len(faulty)
            keep = np.ones(len(indices), dtype=bool)
            keep[list(faulty)] = False
            indices, matrix = (
                [i for i, kept in zip(indices, keep.tolist(), strict=True) if kept],
                matrix[keep],
            )
        self.stats.embedded += len(indices)
        if indices:
            unit.request.pieces.append((indices, matrix))
        return bool(indices), None

    def failed(
        self, unit: _Unit, exc: ConnectorError, attempts: int, note: str = "", error_type: str | None = None
    ) -> None:
        message = f"{exc} ({note})" if note else str(exc)
        kind = error_type or type(exc).__name__
        failures = [
            InputFailure(
                index=i, error_type=kind, message=message, retryable=exc.retryable, attempts=attempts
            )
            for i in unit.part.indices
        ]
        with self._cond:
            unit.request.failures.extend(failures)
            self.stats.failed += len(unit.part)

    def halves(self, unit: _Unit) -> tuple[_Unit, _Unit]:
        left, right = unit.part.halves()
        return _Unit(unit.request, left), _Unit(unit.request, right)

    def isolates(self, error: Rejected) -> bool:
        return True

    def probing(self, unit: _Unit) -> None:
        with self._cond:
            self.stats.isolation_requests += 1

    def systemic(self, count: int, error: Rejected) -> SystemicRejection:
        return SystemicRejection(
            f"the embeddings server refused each of the first {count} inputs sent one by one for the "
            f"same reason and accepted none: {error}. The cause is the request itself (model, "
            "dimensions, options), not the inputs: stopped instead of refusing every input",
            status=error.status,
        )

    def _control(self) -> None:
        """The probe text alone: the dispatcher's control request, sent (and retried) before it concludes
        that the inputs refused one by one are refused for the request itself; raises if not embedded."""
        self._send_checked([PROBE_TEXT])

    def _send(self, texts: list[str]) -> Decoded:
        """One request (two when the server may not know base64 and refuses it)."""
        encoding = self._format
        try:
            decoded = self._post(texts, encoding)
        except Rejected as exc:
            if encoding != "base64" or exc.fatal or (self._format_known and self._format == "base64"):
                raise  # a refusal of the inputs: base64 is known to work, or was not asked for
        else:
            self._format_known = True
            return decoded
        decoded = self._post(texts, "float")  # a refusal here is the inputs' fault, not base64's
        with self._cond:
            if not self._format_known:
                self._format, self._format_known = "float", True
                self.stats.encoding_format = "float"
        return decoded

    def _post(self, texts: list[str], encoding: str) -> Decoded:
        try:
            body = request_body(self.options.model, texts, encoding, self.options.dimensions)
        except TypeError:  # orjson's JSONEncodeError: a text the batcher let through (it checks each)
            problems = [problem for text in texts if (problem := not_utf8(text)) is not None]
            reason = f"a text is {problems[0]}" if problems else "a text JSON cannot carry"
            raise Rejected(f"{self._transport.where}: not sent: {reason}") from None
        with self._cond:
            self.stats.requests += 1
        reply = self._transport.post(body, self.options.timeout_s)
        with self._cond:
            self.stats.bytes_received += len(reply)
        return decode(
            reply, len(texts), self._transport.where, self._decoding, secrets=self._transport.secrets
        )


def _malformed_again(exc: MalformedReply) -> MalformedReply:
    """The error a request's texts fail with when its reply was malformed twice, after well-formed replies:
    not fatal (the stream goes on) and not retryable (the same texts met it twice)."""
    again = MalformedReply(
        f"{exc} (the reply was malformed twice, after well-formed ones: its inputs fail, the stream goes on)",
        status=exc.status,
    )
    again.fatal = False
    return again


def _not_sent_again(exc: MalformedReply) -> MalformedReply:
    """The error a request's texts fail with when its reply was malformed and the stream stopped before it
    could be sent again: not fatal (the stream's own error is the one raised)."""
    again = MalformedReply(f"{exc} (not sent again: the stream stopped)", status=exc.status)
    again.fatal = False
    return again


def _non_finite_rows(matrix: np.ndarray) -> np.ndarray | None:
    """The rows of ``matrix`` holding a NaN or an infinity, or ``None`` when every value is finite."""
    finite = np.isfinite(matrix)
    if finite.all():
        return None
    return np.flatnonzero(~finite.all(axis=1))


@dataclass(slots=True)
class _Unit:
    """What the dispatcher sends: some inputs of one request (all of them, or a half being isolated)."""

    request: _Request
    part: _Part

    def __len__(self) -> int:
        return len(self.part)


class _Run:
    """The state of one ``stream`` call: its feeder, its requests in order, its chunks. Its fatal error
    is the dispatcher's (one stream at a time)."""

    def __init__(self, client: EmbeddingClient, source: Iterator[Iterable[str]], max_chunks: int) -> None:
        self.client = client
        self.source = source
        self.max_chunks = max_chunks
        self.cond = client._cond
        self.window = WINDOW_PER_SLOT * client.options.max_concurrency
        self.chunks: deque[_ChunkOut] = deque()  # read, not yet handed over
        self.filling: deque[_ChunkOut] = deque()  # the chunks above some of whose inputs are not drained
        self.requests: deque[_Request] = deque()  # submitted, in input order, not yet drained
        self.drained_to = 0  # the results of inputs below this index are in their chunks
        self.source_error: BaseException | None = None
        self.fed_all = False
        self.stopping = False
        self.stop = threading.Event()  # set: the stream was closed on an error, its requests are not retried
        self.feeder = threading.Thread(target=self._feed, name="vectordb-embed-feed", daemon=True)

    @property
    def fatal(self) -> BaseException | None:
        return self.client.dispatch.fatal

    def _close_on(self, error: BaseException | None) -> None:
        """Stop the feeder; closed on an error, send no retry (``stop``), and on an interrupt return
        without waiting for the requests on the wire."""
        with self.cond:
            self.stopping = True
            if error is not None:
                self.stop.set()
            self.cond.notify_all()
        self.feeder.join()
        if error is not None and not isinstance(error, Exception):
            return  # the requests on the wire end on their own threads, accounted for in their requests
        with self.cond:
            while not self._settled():
                self.cond.wait()

    # -- the feeder thread -------------------------------------------------------------------------

    def _feed(self) -> None:
        try:
            self._feed_all()
        finally:
            with self.cond:
                self.fed_all = True
                self.cond.notify_all()

    def _feed_all(self) -> None:
        options = self.client.options
        batcher = _Batcher(options.batch_size, options.max_batch_chars)
        offset = 0
        try:
            for chunk in self.source:
                texts = _as_list(chunk)
                if not self._room_for_chunk(batcher):
                    return
                with self.cond:
                    out = _ChunkOut(offset, len(texts))
                    self.chunks.append(out)
                    self.filling.append(out)
                    self.client.stats.inputs += len(texts)
                    self.cond.notify_all()
                for i, text in enumerate(texts):
                    request = batcher.add(offset + i, text)
                    if request is not None and not self._submit(request):
                        return
                offset += len(texts)
        except BaseException as exc:  # the input's error, raised to the consumer after the chunks before it
            with self.cond:
                self.source_error = exc
        last = batcher.flush()
        if last is not None:
            self._submit(last)

    def _room_for_chunk(self, batcher: _Batcher) -> bool:
        with self.cond:
            full = len(self.chunks) >= self.max_chunks
        if full:  # the consumer waits for the inputs held back: send them before waiting
            held = batcher.flush()
            if held is not None and not self._submit(held):
                return False
        with self.cond:
            while len(self.chunks) >= self.max_chunks and not self._stopped():
                self.cond.wait()
            return not self._stopped()

    def _stopped(self) -> bool:
        return self.stopping or self.fatal is not None

    def _submit(self, request: _Request) -> bool:
        """Wait for a free slot and room in the window, then send; False if the stream stopped. A
        request of invalid inputs only is done at once."""
        dispatch = self.client.dispatch
        if not request.part.texts:
            with self.cond:
                if self._stopped():
                    return False
                self.requests.append(request)
            self._done(_Unit(request, request.part))
            return True
        request.stop = self.stop
        if not dispatch.take_slot(ready=self._may_start, stopped=lambda: self.stopping):
            return False
        with self.cond:
            self.requests.append(request)
        # the ticket's on_done runs once: on the sender that takes it, or here if none does (call_off does
        # nothing once a sender took it: the pool may raise after queueing, as it starts a worker thread)
        ticket = dispatch.ticket(_Unit(request, request.part), self._done)
        try:
            dispatch.send(ticket)
        except BaseException:
            dispatch.call_off(ticket)  # never sent: the slot is given back and the request done
            raise
        return True

    def _may_start(self) -> bool:
        """Room in the window; and, until a well-formed reply told the vectors' dimension, no other request
        in flight: with several, a malformed reply (vectors of another length) could be the first
        answered, and the dimension it told would fail every well-formed reply after it. Under the
        dispatcher's lock (``take_slot``)."""
        if len(self.requests) >= self.window:
            return False
        return self.client._dim is not None or self.client.dispatch.in_flight == 0

    def _done(self, unit: _Unit) -> None:
        request = unit.request
        request.finish(self.client._dim)
        with self.cond:
            request.done = True
            self.cond.notify_all()

    # -- the consumer's thread ---------------------------------------------------------------------

    def results(self) -> Iterator[EmbeddedChunk]:
        self.feeder.start()
        error: BaseException | None = None
        try:
            while True:
                with self.cond:
                    while True:
                        if self.fatal is not None and self._settled():
                            raise self.fatal
                        self._drain()
                        if self._head_complete():
                            chunk = self.chunks.popleft().result(self.client._dim or 0)
                            self.cond.notify_all()
                            break
                        if not self.chunks and self.fed_all:
                            if self.source_error is not None:
                                raise self.source_error
                            return
                        self.cond.wait()
                yield chunk
        except BaseException as exc:
            error = _error_closing(exc)
            raise
        finally:
            self._close_on(error)

    def _settled(self) -> bool:
        """The feeder stopped and no request of this stream is in flight."""
        return self.fed_all and all(request.done for request in self.requests)

    def _head_complete(self) -> bool:
        return bool(self.chunks) and self.drained_to >= self.chunks[0].end

    def _drain(self) -> None:
        """Move the results of finished requests, in order, into their chunks, until the first chunk is
        whole (under the lock).

        Drained request by request, not once a chunk is whole: a chunk longer than the window would
        wait for requests the full window keeps from being sent. And no further than the first chunk:
        the window of requests is what bounds how far the feeder reads ahead of the consumer.
        """
        while self.requests and self.requests[0].done and not self._head_complete():
            request = self.requests.popleft()
            assert request.indices is not None and request.vectors is not None
            for out in self.filling:
                if out.offset >= request.hi:
                    break
                if out.end <= request.lo:
                    continue
                if out.offset <= request.lo and request.hi <= out.end:
                    lo, hi = 0, len(request.indices)
                    out.failures.extend(request.failures)
                else:
                    lo, hi = np.searchsorted(request.indices, [out.offset, out.end])
                    out.failures.extend(f for f in request.failures if out.offset <= f.index < out.end)
                if hi > lo:
                    out.indices.append(request.indices[lo:hi])
                    out.vectors.append(request.vectors[lo:hi])
            while self.filling and self.filling[0].end <= request.hi:
                self.filling.popleft()
            self.drained_to = request.hi
            self.cond.notify_all()  # room in the window


@dataclass(slots=True, eq=False)
class _ChunkOut:
    """One input chunk's results, gathered as its requests finish."""

    offset: int
    count: int
    indices: list[np.ndarray] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)
    failures: list[InputFailure] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.offset + self.count

    def result(self, dim: int) -> EmbeddedChunk:
        if not self.vectors:
            matrix, found = np.empty((0, dim), dtype=np.float32), np.empty(0, dtype=np.int64)
        elif len(self.vectors) == 1:
            matrix, found = self.vectors[0], self.indices[0]
        else:
            matrix, found = np.concatenate(self.vectors), np.concatenate(self.indices)
        return EmbeddedChunk(self.offset, self.count, found, matrix, tuple(self.failures))


class _OtherModel(MalformedReply):
    """A well-formed reply naming another model than the earlier ones or the driver's probe: never fatal,
    as a server that speaks the protocol answered (a gateway's fallback may pass); its inputs fail."""


class _StreamClosed(ServerError):
    """A retry of a request whose stream was closed on an error: not sent (not retryable, not fatal)."""


def _error_closing(exc: BaseException) -> BaseException | None:
    """The error a stream is closed on: ``exc``, or for a ``GeneratorExit`` (its consumer's generators
    closed in a ``finally``, as a stopped write closes its input's) the error that was propagating then;
    ``None`` for a plain close."""
    error: BaseException | None = exc
    while isinstance(error, GeneratorExit):
        error = error.__context__
    return error


def _as_list(chunk: Any) -> list[Any]:
    if isinstance(chunk, str | bytes):
        raise TypeError("each chunk must be a sequence of strings, not one string")
    to_pylist = getattr(chunk, "to_pylist", None)  # a pyarrow array or chunked array of strings
    return list(to_pylist() if to_pylist is not None else chunk)
