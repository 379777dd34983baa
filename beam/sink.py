"""``WriteToVectorDB``: the Beam sink, a thin adapter from elements to the connector's client.

::

    result = records | WriteToVectorDB("pinecone+grpc://my-index.svc.pinecone.io", api_key=..., on_error="report")
    result.failed | "dead letters" >> beam.io.WriteToText("gs://bucket/dead", file_name_suffix=".jsonl")

The steps, each one ``ParDo`` the runner fuses:

1. ``Read``: every element becomes a ``Row`` (column options applied, vector a float32 array);
   ``pyarrow`` batches skip this and go to the writer as they are. An element that cannot become
   a row is a dead letter (``on_error="fail"``: the bundle fails).
2. ``Batch``: bounded input (chosen from the PCollection's ``is_bounded`` unless ``batching=`` says
   otherwise) is read and batched in the same step, ``rows_per_batch`` rows at a time per window, as
   ``BatchElements`` at a fixed size batches them: each element crosses one step of the runner, not
   two. Unbounded input goes through ``GroupIntoBatches.WithShardedKey`` (size- and time-bounded), in
   the global window: rows in other windows carry their own through it and each batch is split by
   window again, so the same id in two windows lands in input order, not window by window. An element
   in several windows (sliding windows) is written once, in the first window the runner gives it
   (``SlidingWindows``: the one that starts last), so its report and dead letter are there alone.
   Windows that merge (``Sessions``) are merged as rows are batched, as a ``GroupByKey`` would merge
   them, so a session's rows share batches; a batch's report and letters are in the merge of its rows'
   windows, which a ``GroupByKey`` downstream merges into their session.
   Each batch then becomes one ``VectorBatch`` (one float32 buffer), with its own coder, so vectors
   never travel as Python lists. The client takes its rows as they are (``Columns``): no Arrow is
   built for it.
3. ``Write``: a DoFn whose client lives from ``setup`` to ``teardown`` (the transport is shared by
   the process). Each batch is written on one sender thread while the bundle thread reads the
   next, so Beam's work overlaps the round trips; the client re-chunks a batch to the database's
   row and byte limits and keeps ``max_concurrency`` requests in flight. ``finish_bundle`` waits
   for every batch of the bundle, so nothing is acknowledged before the database has it. Reports
   are read on the bundle thread, which counts them for the Metrics counters (namespace ``vectordb``:
   ``written``, ``failed``, ``deleted``, ``requests``, ``retries``, ``throttled``, ``bytes_sent``, and
   the embedding endpoint's ``embedded``, ``embed_requests``, ``embed_retries``, ``embed_throttled``; each
   DoFn's counts are added once its bundle has finished, so a failed bundle that is retried, whose
   increments a runner may keep, counts its rows once), applies ``on_error`` (``fail`` raises
   ``WriteFailed``: the runner retries the bundle, and upserts and deletes by id make that safe) and
   emits each batch's ``WriteReport`` on ``written`` and its failed rows on ``failed``, in the batch's
   window.

A dead letter is ``id``, ``error``, ``error_type``, ``retryable`` and ``attempts``, then the failed
row as it came: the element's own keys and values (a ``beam.Row``'s fields, a ``Chunk`` as the reader
sees it), a user's Arrow row with its own columns, a column named like a field of the reason with a
``row_`` prefix; ready for ``json.dumps``. An element refused at reading and a row the database
refused give letters of one shape, so a fixed letter goes back through the sink after
``beam.Map(rows_from_letters)`` (the reason dropped, a ``row_`` name given back). It is the
core's ``dead_letters`` over the batch's elements (each row travels with its element as read),
which finds each row by its position in the batch, whatever its id. The files of option
``dead_letter_path`` (``dead-letters-<run>-00000-of-00001.jsonl``, ``<run>`` the UTC time and a random part
made when the pipeline is built, so no run overwrites or mixes with another's) hold one letter a line as ``json_line`` writes it: bytes as base64, the letter
saying so, and text holding a lone surrogate (in a value or a key) as JSON's escape, so ``rows_from_letters`` of a line read with
``json.loads`` gives the row back as it came.
"""

from __future__ import annotations

import collections
import contextlib
import pickle
import uuid
from collections.abc import Hashable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Annotated, Any, Literal, NamedTuple

import apache_beam as beam
import msgspec
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.pvalue import PCollection, TaggedOutput
from apache_beam.transforms.display import DisplayDataItem
from apache_beam.transforms.window import GlobalWindows, WindowFn
from apache_beam.utils.secret import Secret
from apache_beam.utils.windowed_value import WindowedValue

from vectordb.connector.bulk import bulk_path, new_job
from vectordb.connector.client import Client, resolve_options
from vectordb.connector.dead_letters import LETTER_FILES, json_line, letter_files_of_a_run
from vectordb.connector.errors import ConfigError, ConnectorError
from vectordb.connector.options import BackendOptions, convert_options
from vectordb.connector.planner import DriverPlan
from vectordb.connector.policy import enforce
from vectordb.connector.report import BatchFailure, WriteReport
from vectordb.connector.rows import RowRules, arrow_batches, is_arrow

from .batch import VectorBatch, assemble
from .coders import EXACT, register
from .elements import ElementReader, NamedRow, Refusal, Row, as_mapping

__all__ = ["BundleCounts", "WriteResult", "WriteToVectorDB"]

Batching = Literal["auto", "bounded", "unbounded"]
METRICS_NAMESPACE = "vectordb"
# ``WriteReport``'s counts the job's summary says, the embedding endpoint's traffic included
COUNTERS = (
    "written",
    "failed",
    "deleted",
    "requests",
    "retries",
    "throttled",
    "bytes_sent",
    "embedded",
    "embed_requests",
    "embed_retries",
    "embed_throttled",
)
MAX_PENDING = 2  # batches per DoFn waiting or being written: bounds memory, keeps the sender busy
# files in dead_letter_path, a run's own: dead-letters-20261127T103000Z-1a2b3c4d-00000-of-00001.jsonl
DEAD_LETTER_PREFIX = LETTER_FILES
SHARD_KEY = 0  # GroupIntoBatches needs keys; WithShardedKey spreads this one over the workers
MAX_LIVE_WINDOWS = 10  # batches being filled at once in windowed bounded input (BatchElements' limit)

register()


class _SinkOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``WriteToVectorDB``'s own parameters, read by the connector's parser as its options are (as
    ``SparkOptions`` are): ``check_target="false"`` is false, ``rows_per_batch="100"`` a number, and a
    bad value a ``ConfigError`` naming the parameter."""

    batching: Batching = "auto"
    rows_per_batch: Annotated[int, msgspec.Meta(ge=1)] | None = None
    # GroupIntoBatches' buffering: finite (NaN and inf would hold rows for ever), at most a day
    max_buffering_s: Annotated[float, msgspec.Meta(gt=0, le=86_400)] = 5.0
    check_target: bool = False


class WriteResult(NamedTuple):
    """What ``WriteToVectorDB`` returns: ``written`` (a ``WriteReport`` per batch) and ``failed`` (dicts)."""

    written: PCollection
    failed: PCollection


class WriteToVectorDB(beam.PTransform):
    """Upsert a PCollection of records into a vector database.

    Args:
        uri: the target, ``SCHEME://host[:port][/collection]``, or a path for the embedded Milvus Lite.
        batching: ``"auto"`` (from the input's boundedness), ``"bounded"`` (fixed-size batches) or
            ``"unbounded"`` (``GroupIntoBatches.WithShardedKey``).
        rows_per_batch: rows per Beam batch (a batch is one client write, re-chunked into requests);
            default: enough for 4 rounds of ``max_concurrency`` requests, at least 1000.
        max_buffering_s: unbounded input: the longest a row waits for its batch to fill.
        content_key: the metadata key for an ``ml.rag`` item's text (``None``: not stored).
        check_target: ask the database now, while the pipeline is built (credentials, the
            collection, its dimension if option ``dimension`` is given), as Spark's driver does, and
            send workers what the backend resolved so they ask nothing; needs the database
            reachable from where the pipeline is built. Off (the default): each DoFn instance's
            client checks once, before its first write.
        **options: the connector's options (``api_key``, ``namespace``, ``batch_size``,
            ``max_concurrency``, ``on_error``, …), validated here: a bad one raises ``ConfigError``.
            ``api_key`` may be a Beam ``Secret`` (``GcpSecret("projects/p/secrets/s/versions/1")``):
            each worker fetches it in ``setup``, so the stored pipeline holds its name, not the key;
            a plain string travels inside the pickled pipeline. ``api_key_env`` is read on the
            workers too. With ``embed_url`` and ``embed_model`` (``embed_api_key``…), rows with text
            and no vector are embedded before they are written (``text_column``; default
            ``content_key``, where an ``ml.rag`` Chunk's text goes); ``check_target`` then also sends
            one probe request, and the model's dimension becomes the write's.
    """

    def __init__(
        self,
        uri: str,
        *,
        batching: Batching = "auto",
        rows_per_batch: int | None = None,
        max_buffering_s: float = 5.0,
        content_key: str | None = "content",
        check_target: bool = False,
        **options: Any,
    ) -> None:
        super().__init__()
        if content_key is not None and (not isinstance(content_key, str) or not content_key):
            raise ConfigError(
                f"option content_key: {content_key!r} is not a metadata key (a non-empty string, or None)"
            )
        own = convert_options(
            {
                "batching": batching,
                "rows_per_batch": rows_per_batch,
                "max_buffering_s": max_buffering_s,
                "check_target": check_target,
            },
            _SinkOptions,
        )
        secret = options.pop("api_key") if isinstance(options.get("api_key"), Secret) else None
        if options.get("embed_url") is not None and options.get("text_column") is None:
            options["text_column"] = content_key  # an ml.rag Chunk's text: the reader puts it there
        raw = {"uri": uri, **options}
        del uri, options  # a bad option's error leaves no key in this frame's locals (tools print them)
        try:
            parsed, error = resolve_options(raw), None
        except ConnectorError as exc:
            parsed, error = None, exc
        del raw
        if error is not None:
            raise error
        assert parsed is not None
        _check_text_is_read(parsed)
        self.secret: Secret | None = secret
        # the driver's plan (connector.planner); the secret is fetched only to ask the database now,
        # otherwise "" stands for "a key will come"
        with DriverPlan(_with_secret(parsed, secret, fetch=own.check_target)) as plan:
            if own.check_target:  # a probe: the model's dimension is the write's; then the target, once
                plan.learn_model_dimension()
                plan.ask_target()
            else:  # no worker's rows may decide the dimension of a collection the pipeline creates
                plan.require_dimension("pass check_target=True")
            self.target = plan.target
            rows_per_request = plan.client.max_rows
            self.rules = plan.client.backend.rules  # which ids are one row to the database
        # what the plan learnt, without the key it fetched: the pipeline is pickled, and stored
        self.options = msgspec.structs.replace(plan.options, api_key=parsed.api_key)
        self.batching = own.batching
        self.rows_per_batch = own.rows_per_batch or max(
            1000, 4 * rows_per_request * self.options.max_concurrency
        )
        self.max_buffering_s = own.max_buffering_s
        self.reader = ElementReader.from_options(self.options, content_key)
        # the start of this run's dead-letter files' names, made when the pipeline is built (expand)
        self.dead_letter_prefix: str | None = None

    def __repr__(self) -> str:  # also of one whose constructor raised (a traceback's locals show it)
        return f"WriteToVectorDB({getattr(self, 'target', '…')})"

    def display_data(self) -> dict[str, Any]:
        return _display(self.options, self.target) | {
            "batching": DisplayDataItem(self.batching, label="Batching"),
            "rows_per_batch": DisplayDataItem(self.rows_per_batch, label="Rows per Beam batch"),
        }

    def expand(self, pcoll: PCollection) -> WriteResult:
        bounded = pcoll.is_bounded if self.batching == "auto" else self.batching == "bounded"
        job = None
        if bulk_path(self.options) is not None:  # the database's bulk path (beam/bulk.py)
            from . import bulk

            if self.secret is not None:
                raise ConfigError(
                    "option api_key: a bulk write is checked while the pipeline is built; give api_key as a "
                    "string or api_key_env, not a Secret"
                )
            bulk.check(self.options, bounded)
            job = new_job()
        # the input's boundedness, not the batching's: batching="bounded" on a stream would reach
        # WriteToText, which refuses unbounded input with Beam's own error about triggering_frequency,
        # and batching="unbounded" of bounded input (exact summaries) leaves its letters bounded
        if self.options.on_error == "dead_letter" and not pcoll.is_bounded:
            raise ConfigError(
                'option on_error="dead_letter" writes files, for bounded input only: with unbounded input '
                'use on_error="report" and send result.failed (one dict per failed row: the row, its error '
                "and error_type) somewhere durable, e.g. result.failed | beam.Map(lambda letter: "
                "json.dumps(letter, default=str).encode()) | beam.io.WriteToPubSub(topic)"
            )
        fn_args = (self.reader, self.options.on_error, self.target, self.rows_per_batch)
        if bounded:  # elements read and batched in one step, which the runner's step between them cost
            if pcoll.windowing.is_default():
                read_fn: _ReadFn = _ReadAndBatchFn(*fn_args)
            else:
                read_fn = _WindowedReadAndBatchFn(
                    *fn_args, rules=self.rules, windowfn=pcoll.windowing.windowfn
                )
            read = pcoll | "Read and batch" >> beam.ParDo(read_fn).with_output_types(
                VectorBatch, arrow=Any, refused=EXACT
            ).with_outputs("arrow", "refused", main="batches")
            batches = read.batches
        else:
            # rows go into the batching, read, each with its element as read (its dead letter, should
            # it fail) pickled: Beam's coder for other values would write a list of floats float by
            # float, about 4x the CPU of the whole write for 768-d vectors as lists
            # (on_error="fail" builds no letter: then the rows travel alone)
            read_fn = _ReadFn(*fn_args) if pcoll.windowing.is_default() else _WindowedReadFn(*fn_args)
            rows_type: Any = tuple[Row, bytes] if read_fn.letters else Row
            read = pcoll | "Read" >> beam.ParDo(read_fn).with_output_types(
                rows_type, arrow=Any, refused=EXACT
            ).with_outputs("arrow", "refused", main="rows")
            gather = beam.GroupIntoBatches.WithShardedKey(self.rows_per_batch, self.max_buffering_s)
            if pcoll.windowing.is_default():
                assemble_fn = _assemble_values if read_fn.letters else _assemble_rows
                batches = (
                    read.rows
                    | "Key" >> beam.Map(_keyed).with_output_types(tuple[int, rows_type])
                    | "Batch" >> gather
                    | "Assemble"
                    >> beam.Map(assemble_fn, _named_columns(self.reader)).with_output_types(VectorBatch)
                )
            else:
                # GroupIntoBatches keeps a buffer per window, each flushed at its own time: the same id in
                # two windows landed in window order, not input order. The rows are gathered in the global
                # window, each with its own, and each gathered batch is split by window again
                assemble = _AssembleInWindows(
                    self.rules, read_fn.letters, _named_columns(self.reader), pcoll.windowing.windowfn
                )
                batches = (
                    read.rows
                    | "Key"
                    >> beam.Map(_keyed_in_window).with_output_types(tuple[int, tuple[rows_type, Any, Any]])
                    | "Global window" >> beam.WindowInto(GlobalWindows())
                    | "Batch" >> gather
                    | "Assemble" >> _InWindows(assemble, pcoll.windowing).with_output_types(VectorBatch)
                )
        arrow = read.arrow | "Arrow" >> beam.Map(VectorBatch.of_arrow).with_output_types(VectorBatch)
        # one Write per input rather than a Flatten in front of one: runners may materialize a
        # Flatten's inputs, which would stop the writes from overlapping the reading
        written = batches | "Write" >> self._write(job)
        written_arrow = arrow | "Write Arrow" >> self._write(job)
        reports = (written.written, written_arrow.written) | "Reports" >> beam.Flatten()
        if job is not None:  # the staged files of every bundle, imported once: the import's one report
            staged = (written.staged, written_arrow.staged) | "Staged" >> beam.Flatten()
            reports = (reports, staged) | "Import" >> bulk.FinishImport(self.options, self.target, job)
        failed = (read.refused, written.failed, written_arrow.failed) | "Failed" >> beam.Flatten()
        # Beam merges its inputs' types into a dict's, whose coder refuses text with a lone surrogate
        failed.element_type = EXACT
        if self.options.on_error == "dead_letter":
            # a name of this run's own: files numbered alone were another run's too, so a clean re-run
            # erased earlier letters, and an earlier run's extra shards stayed among this run's
            self.dead_letter_prefix = letter_files_of_a_run()
            prefix = FileSystems.join(str(self.options.dead_letter_path), self.dead_letter_prefix)
            lines = failed | "Dead letters as JSON" >> beam.Map(json_line)
            if bounded:
                _ = lines | "Write dead letters" >> beam.io.WriteToText(prefix, file_name_suffix=".jsonl")
            else:  # GroupIntoBatches' last batches may come after WriteToText's grouping closed (DirectRunner)
                _ = lines | "Write dead letters" >> beam.ParDo(_LetterFiles(prefix))
        return WriteResult(reports, failed)

    def _write(self, job: str | None = None) -> beam.PTransform:
        if job is not None:  # a bulk path: stage files instead of upserting
            from .bulk import stage_fn

            return stage_fn(self.options, self.target, job)
        return (
            beam.ParDo(_WriteFn(self.options, self.target, self.secret))
            .with_output_types(WriteReport, failed=EXACT)
            .with_outputs("failed", main="written")
        )


class _LetterFiles(beam.DoFn):
    """A bundle's dead-letter lines in a file of its own (``<prefix>-<random>.jsonl``), written at the
    bundle's end: no grouping step, which the DirectRunner closes before the batches ``GroupIntoBatches``
    flushes last report their letters (it then fails the job)."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def start_bundle(self) -> None:
        self._lines: list[str] = []

    def process(self, line: str) -> Iterator[Any]:
        self._lines.append(line)
        yield from ()

    def finish_bundle(self) -> None:
        if self._lines:
            with FileSystems.create(f"{self._prefix}-{uuid.uuid4().hex[:8]}.jsonl") as stream:
                stream.write("".join(f"{line}\n" for line in self._lines).encode())
            self._lines = []


def _check_text_is_read(options: BackendOptions) -> None:
    """The sink reads the text to embed from each row's metadata: ``metadata_columns`` must keep it."""
    text, kept = options.text_column, options.metadata_columns
    if options.embed_url is not None and kept is not None and text not in kept:
        raise ConfigError(
            f"option metadata_columns: the Beam sink reads the text to embed from the row's metadata; "
            f"add text_column {text!r} to it (or leave metadata_columns out)"
        )


def _named_columns(reader: ElementReader) -> dict[str, str]:
    """Each vector name's input column, so that the client's checks of a batch name it."""
    return dict(reader.vector_columns + reader.multi_vector_columns)


def _keyed(read: Any) -> tuple[int, Any]:
    return SHARD_KEY, read


def _keyed_in_window(
    read: Any, window: Any = beam.DoFn.WindowParam, timestamp: Any = beam.DoFn.TimestampParam
) -> tuple[int, tuple[Any, Any, Any]]:
    return SHARD_KEY, (read, window, timestamp)


def _row_key(rules: RowRules, row: Row | NamedRow) -> Hashable:
    """What makes two rows one in the database: its key of the id, in the row's namespace."""
    key = rules.row_keys([row[0]])[0]
    try:
        hash(key)
    except TypeError:  # an id the checks will refuse (a list): keyed by its text
        key = repr(key)
    return rules.scope(row[4]), key


class _InWindows(beam.ParDo):
    """A ``ParDo`` whose elements go back to the windows they came from (its DoFn emits each in its own):
    its output has the input's windowing again, so what follows groups by those windows."""

    def __init__(self, fn: beam.DoFn, windowing: Any) -> None:
        super().__init__(fn)
        self._windowing = windowing

    def get_windowing(self, inputs: Any) -> Any:
        return self._windowing


class _AssembleInWindows(beam.DoFn):
    """A batch gathered in the global window, its rows carrying their own windows → a ``VectorBatch`` per
    window, each in its window at its end, as ``_WindowedReadAndBatchFn`` makes them (``_WindowRows``: the
    same id twice lands in input order; windows of ``Sessions`` are merged). An element in several
    windows (sliding windows) comes once, in its first (``_WindowedReadFn``)."""

    def __init__(self, rules: RowRules, letters: bool, columns: dict[str, str], windowfn: WindowFn) -> None:
        self._rules, self._letters, self._columns, self._windowfn = rules, letters, columns, windowfn

    def process(self, keyed: tuple[Any, list[tuple[Any, Any, Any]]]) -> Iterator[WindowedValue]:
        gathered = _WindowRows(self._windowfn, self._letters, self._columns)
        for read, window, _ in keyed[1]:
            row, record = read if self._letters else (read, None)  # records pickled by _ReadFn.process
            earlier = gathered.add(window, row, record, _row_key(self._rules, row))[1]
            if earlier is not None:
                yield gathered.batch(earlier)
        yield from gathered.drain()


def _assemble_values(keyed: tuple[Any, list[tuple[Row, bytes]]], columns: dict[str, str]) -> VectorBatch:
    rows, records = zip(*keyed[1], strict=True) if keyed[1] else ((), ())
    return assemble(rows, list(records), columns)  # records pickled by _ReadFn.process


def _assemble_rows(keyed: tuple[Any, list[Row]], columns: dict[str, str]) -> VectorBatch:
    return assemble(keyed[1], None, columns)  # on_error="fail": no letters, so no elements


def _with_secret(options: BackendOptions, secret: Secret | None, *, fetch: bool = True) -> BackendOptions:
    """``options`` holding the secret's value (``""`` when not fetched); as they are without a secret."""
    if secret is None:
        return options
    try:
        key = secret.get_str() if fetch else ""
    except Exception as exc:  # GcpSecret raises RuntimeError with the secret's name, never its value
        raise ConfigError(f"option api_key: the {type(secret).__name__} could not be read: {exc}") from None
    return msgspec.structs.replace(options, api_key=key)


def _display(options: BackendOptions, target: str) -> dict[str, Any]:
    """What the runner's UI shows: the target as the backend describes it, never the credential."""
    items = {
        "target": DisplayDataItem(target, label="Target"),
        "on_error": DisplayDataItem(options.on_error, label="On error"),
        "max_concurrency": DisplayDataItem(options.max_concurrency, label="Requests in flight"),
    }
    for name, label in (
        ("collection", "Collection"),
        ("namespace", "Namespace"),
        ("batch_size", "Rows per request"),
    ):
        value = getattr(options, name)
        if value is not None:
            items[name] = DisplayDataItem(value, label=label)
    return items


class BundleCounts:
    """A DoFn's counter increments for its bundle, added to the Metrics counters once the bundle has
    finished: a runner may keep the increments of a bundle that failed (the BundleBasedDirectRunner
    does), and the retried bundle would then count its rows twice."""

    def __init__(self, names: Iterable[str]) -> None:
        self._counters = {name: Metrics.counter(METRICS_NAMESPACE, name) for name in names}
        self._pending: collections.Counter[str] = collections.Counter()

    def add(self, name: str, value: int) -> None:
        self._pending[name] += value

    def discard(self) -> None:
        self._pending.clear()

    def add_up(self) -> None:
        for name, value in self._pending.items():
            if value:
                self._counters[name].inc(value)
        self._pending.clear()


class _ReadFn(beam.DoFn):
    """Element → ``(Row, record)`` (main; the record, the element as read and pickled, is what its
    dead letter holds; ``Row`` alone when ``on_error="fail"``, which builds no letter), Arrow batch → ``arrow`` (in slices of at most ``rows_per_batch`` rows, views of the same
    buffers, so a Parquet row group never sits whole in the write queue), unreadable element →
    ``refused``."""

    def __init__(self, reader: ElementReader, on_error: str, target: str, rows_per_batch: int) -> None:
        self._reader, self._on_error, self._target = reader, on_error, target
        self._rows_per_batch = rows_per_batch
        self._counts = BundleCounts(("failed",))
        self._named_columns = _named_columns(reader)
        # whether rows keep their elements for their dead letters: on_error="fail" fails the bundle at a
        # failed row instead, so keeping (and pickling, encoding) them would be cost for nothing
        self.letters = on_error != "fail"

    def start_bundle(self) -> None:
        self._counts.discard()  # a failed bundle's

    def process(self, element: Any) -> Iterable[Any]:
        row = self._row(element)
        if type(row) is list:
            return row
        if not self.letters:
            return (row,)
        return ((row, pickle.dumps(self._record(element), protocol=5)),)

    def finish_bundle(self) -> Iterator[Any]:
        self._counts.add_up()
        yield from ()

    def _record(self, element: Any) -> Mapping[str, Any]:
        """The element of a row as the reader read it (a dict as it is), for the row's dead letter."""
        return element if type(element) is dict else as_mapping(element, self._reader)

    def _row(self, element: Any) -> Row | NamedRow | list[TaggedOutput]:
        """The element's row, or what it gives instead: its Arrow slices, or its dead letter."""
        if type(element) is not dict and is_arrow(element):
            return [
                TaggedOutput("arrow", batch.slice(start, self._rows_per_batch))
                for batch in arrow_batches(element)
                for start in range(0, batch.num_rows, self._rows_per_batch)
            ]
        row = self._reader.read(element)
        if isinstance(row, Refusal):
            self._counts.add("failed", 1)
            letter = row.dead_letter
            row_id = letter["id"]  # None: the element had none ("(no id)" in the error, not "None")
            failure = BatchFailure(
                ids=(None if row_id is None else str(row_id),), error=letter["error"], error_type="Invalid"
            )
            enforce(WriteReport(failed=1, failures=[failure]), self._on_error, self._target)
            return [TaggedOutput("refused", letter)]
        return row


class _Copies:
    """Tells the calls that are an element again, in another of its windows: an element in several
    windows (sliding windows) reaches a DoFn that takes its window once per window, one call after
    another with the same object. Its row is written, counted and dead-lettered once, in the first."""

    def __init__(self) -> None:
        self._element: Any = None
        self._timestamp: Any = None
        self._windows: set[Any] = set()

    def is_copy(self, element: Any, window: Any, timestamp: Any) -> bool:
        if element is self._element and timestamp == self._timestamp and window not in self._windows:
            self._windows.add(window)
            return True
        self._element, self._timestamp, self._windows = element, timestamp, {window}
        return False


class _WindowedReadFn(_ReadFn):
    """``_ReadFn`` for input in other windows: an element in several windows is read once, in the first
    (see ``_Copies``); ``_read_in`` reads it, knowing its window."""

    def start_bundle(self) -> None:
        super().start_bundle()
        self._copies = _Copies()

    def process(
        self,
        element: Any,
        window: Any = beam.DoFn.WindowParam,
        timestamp: Any = beam.DoFn.TimestampParam,
    ) -> Iterable[Any]:
        if self._copies.is_copy(element, window, timestamp):
            return ()
        return self._read_in(element, window)

    def _read_in(self, element: Any, window: Any) -> Iterable[Any]:
        return super().process(element)


class _ReadAndBatchFn(_ReadFn):
    """Bounded input in the global window: reads as ``_ReadFn`` does and gathers the rows into batches of
    ``rows_per_batch`` itself, as ``BatchElements`` at a fixed size does, so that each element takes
    one step of the runner instead of two (the runner's step between them cost more CPU than reading
    the element); each batch becomes one ``VectorBatch`` at once."""

    def start_bundle(self) -> None:
        super().start_bundle()
        self._rows: list[Row] = []
        self._records: list[Mapping[str, Any] | bytes] = []

    def process(self, element: Any) -> Iterable[Any]:
        row = self._row(element)
        if type(row) is list:
            return row
        rows = self._rows
        rows.append(row)  # type: ignore[arg-type]
        if self.letters:
            self._records.append(self._record(element))
        if len(rows) < self._rows_per_batch:
            return ()
        return (self._batch(),)

    def finish_bundle(self) -> Iterator[WindowedValue]:
        if self._rows:
            yield self._batch()
        yield from super().finish_bundle()

    def _batch(self) -> WindowedValue:
        rows, records = self._rows, self._records if self.letters else None
        self._rows, self._records = [], []
        return GlobalWindows.windowed_value_at_end_of_window(assemble(rows, records, self._named_columns))


class _WindowedReadAndBatchFn(_WindowedReadFn):
    """``_ReadAndBatchFn`` for bounded input in other windows: a batch per window, as ``BatchElements`` keeps
    them (at most ``MAX_LIVE_WINDOWS`` at once: beyond, the largest goes), each at its window's end;
    ``_WindowRows`` gathers them (the same id twice in a bundle lands in input order; windows of
    ``Sessions`` are merged). Batches are written one after another in the order they leave here."""

    def __init__(
        self,
        reader: ElementReader,
        on_error: str,
        target: str,
        rows_per_batch: int,
        *,
        rules: RowRules,
        windowfn: WindowFn,
    ) -> None:
        super().__init__(reader, on_error, target, rows_per_batch)
        self._rules, self._windowfn = rules, windowfn

    def start_bundle(self) -> None:
        super().start_bundle()
        self._gathered = _WindowRows(self._windowfn, self.letters, self._named_columns)

    def _read_in(self, element: Any, window: Any) -> Iterable[Any]:
        row = self._row(element)
        if type(row) is list:
            return row
        gathered = self._gathered
        record = self._record(element) if self.letters else None
        window, earlier = gathered.add(window, row, record, _row_key(self._rules, row))  # type: ignore[arg-type]
        out = [] if earlier is None else [gathered.batch(earlier)]
        waiting = gathered.waiting
        if len(waiting[window].reads) >= self._rows_per_batch:
            out.append(gathered.batch(window))
        elif len(waiting) > MAX_LIVE_WINDOWS:
            out.append(gathered.batch(max(waiting, key=lambda w: len(waiting[w].reads))))
        return out

    def finish_bundle(self) -> Iterator[WindowedValue]:
        yield from self._gathered.drain()
        yield from super().finish_bundle()


class _Waiting:
    """The rows of one window waiting for their batch: ``(order, row, record, key)`` in input order."""

    __slots__ = ("reads", "window")

    def __init__(self, window: Any) -> None:
        self.window = window
        self.reads: list[tuple[int, Row | NamedRow, Any, Hashable]] = []


class _WindowRows:
    """Rows waiting for their batches, a batch per window: what ``_WindowedReadAndBatchFn`` and
    ``_AssembleInWindows`` gather.

    The same id twice lands in input order, as in the global window: a row whose key (``_row_key``: the
    database's key for its id, in its namespace) waits in another window's rows sends that window's batch
    first (``add`` says which). Windows of a merging ``WindowFn`` (``Sessions``) are merged as rows join,
    as a ``GroupByKey`` merges them: until then each element is alone in its window [t, t + gap), and a
    batch per such window was a request per row. A batch's window is then the merge of its rows' (a part
    of their session, into which a ``GroupByKey`` downstream merges it), its rows in input order.
    """

    def __init__(self, windowfn: WindowFn, letters: bool, columns: dict[str, str]) -> None:
        self.waiting: dict[Any, _Waiting] = {}  # window -> its rows
        self._held: dict[Hashable, _Waiting] = {}  # each waiting row's key -> the rows that hold it
        self._merging = windowfn if windowfn.is_merging() else None
        self._letters, self._columns = letters, columns
        self._order = 0

    def add(self, window: Any, row: Row | NamedRow, record: Any, key: Hashable) -> tuple[Any, Any]:
        """Puts a row in ``window``'s rows; returns the window it waits in (merged) and the window whose
        batch must be sent before it, holding an earlier row of its key (``None``: none)."""
        if self._merging is not None and window not in self.waiting:
            window = self._merge(window)
        waiting = self.waiting.get(window)
        if waiting is None:
            waiting = self.waiting[window] = _Waiting(window)
        held = self._held.get(key)
        self._held[key] = waiting
        self._order += 1
        waiting.reads.append((self._order, row, record, key))
        return window, None if held is None or held is waiting else held.window

    def drain(self) -> Iterator[WindowedValue]:
        """Every waiting window's batch, in the order the windows began waiting."""
        while self.waiting:
            yield self.batch(next(iter(self.waiting)))

    def batch(self, window: Any) -> WindowedValue:
        """The batch of ``window``'s rows, in the window at its end; the rows no longer wait."""
        waiting = self.waiting.pop(window)
        for _, _, _, key in waiting.reads:
            if self._held.get(key) is waiting:
                del self._held[key]
        _, rows, records, _ = zip(*waiting.reads, strict=True)
        batch = assemble(rows, list(records) if self._letters else None, self._columns)
        return WindowedValue(batch, window.max_timestamp(), (window,))

    def _merge(self, window: Any) -> Any:
        """Merges ``window`` and the waiting windows it joins; returns the window it is now part of."""
        context = _Merges([*self.waiting, window])
        assert self._merging is not None
        self._merging.merge(context)
        for windows, merged in context.merges:
            parts = [self.waiting.pop(w) for w in windows if w in self.waiting]
            if parts:  # the largest takes the others' rows: its keys stay held by it
                parts.sort(key=lambda part: len(part.reads), reverse=True)
                into = parts[0]
                for part in parts[1:]:
                    into.reads += part.reads
                    for read in part.reads:
                        self._held[read[3]] = into
                if len(parts) > 1:
                    into.reads.sort(key=lambda read: read[0])  # input order
                into.window = merged
                self.waiting[merged] = into
            if window in windows:
                window = merged
        return window


class _Merges(WindowFn.MergeContext):
    """What ``WindowFn.merge`` merges: each group of windows and the window they become."""

    def __init__(self, windows: list[Any]) -> None:
        super().__init__(windows)
        self.merges: list[tuple[list[Any], Any]] = []

    def merge(self, to_be_merged: Iterable[Any], merge_result: Any) -> None:
        self.merges.append((list(to_be_merged), merge_result))


class _Pending(NamedTuple):
    future: Future[WriteReport]
    batch: VectorBatch
    where: WindowedValue  # the batch's window and timestamp, for its outputs


class _WriteFn(beam.DoFn):
    """Writes ``VectorBatch``es; see the module docstring for the lifecycle."""

    def __init__(self, options: BackendOptions, target: str, secret: Secret | None = None) -> None:
        # pickled: options (and the Secret's name), no client and no fetched key
        self._options, self._target, self._secret = options, target, secret
        self._counts = BundleCounts(COUNTERS)

    def display_data(self) -> dict[str, Any]:
        return _display(self._options, self._target)

    def setup(self) -> None:
        # no connection yet: the process-shared transport opens on the first write; but a worker
        # that cannot read its key (a Secret, or the api_key_env variable) fails now, saying which
        options = _with_secret(self._options, self._secret)
        options.credential()
        self._client = Client(options)
        if self._client.embedding is not None:
            self._client.embedding.options.credential()  # embed_api_key_env, likewise
        self._sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vectordb-beam")
        self._pending: collections.deque[_Pending] = collections.deque()

    def start_bundle(self) -> None:
        self._abandon()  # what a failed bundle left behind
        self._counts.discard()

    def process(
        self,
        batch: VectorBatch,
        window: Any = beam.DoFn.WindowParam,
        timestamp: Any = beam.DoFn.TimestampParam,
    ) -> Iterator[Any]:
        future = self._sender.submit(self._client.write, batch.for_client(), batch.namespace)
        self._pending.append(_Pending(future, batch, WindowedValue(None, timestamp, (window,))))
        while self._pending and (len(self._pending) > MAX_PENDING or self._pending[0].future.done()):
            yield from self._complete(self._pending.popleft())

    def finish_bundle(self) -> Iterator[Any]:
        while self._pending:
            yield from self._complete(self._pending.popleft())
        self._counts.add_up()

    def teardown(self) -> None:
        self._abandon()
        self._sender.shutdown(wait=True)
        self._client.close()

    def _complete(self, pending: _Pending) -> Iterator[WindowedValue | TaggedOutput]:
        """On the bundle thread: count, apply on_error, emit the report and the dead letters."""
        try:
            report = pending.future.result()
            for name in COUNTERS:
                self._counts.add(name, getattr(report, name))
            enforce(report, self._options.on_error, self._target)
        except BaseException:
            self._abandon()
            raise
        yield pending.where.with_value(report)
        if not report.failures:
            return
        for letter in pending.batch.dead_letters(report, self._client.spec):
            yield TaggedOutput("failed", pending.where.with_value(letter))

    def _abandon(self) -> None:
        """Drop batches not started and wait for the one on the wire (the database may apply it)."""
        pending, self._pending = list(self._pending), collections.deque()
        for item in pending:
            item.future.cancel()
        for item in pending:
            if not item.future.cancelled():
                with contextlib.suppress(Exception):  # the bundle already failed with the first error
                    item.future.result()
