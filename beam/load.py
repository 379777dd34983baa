"""The Beam job, ``vectordb-beam``: Parquet or JSON Lines records (or a generated sample) → a vector database.

    vectordb-beam --sample 10000 --dim 384                          # into ./vectors.db (Milvus Lite)
    vectordb-beam --input 'data/embeddings-*.parquet' \\
        --uri pinecone+grpc://my-index-abc123.svc.pinecone.io --option api_key_env=PINECONE_API_KEY \\
        --option namespace=docs --dead_letters out/dead-letters
    vectordb-beam --input docs.jsonl --uri ./vectors.db --option text_column=text \\
        --option embed_url=https://api.openai.com --option embed_model=text-embedding-3-small \\
        --option embed_api_key_env=OPENAI_API_KEY                   # text in, vectors out
    vectordb-beam --input 'gs://bucket/embeddings/*.parquet' --uri … --runner=DataflowRunner \\
        --project=P --region=R --temp_location=gs://bucket/tmp    # any Beam pipeline option
        # gs://: pip install 'apache-beam[gcp]' (s3://: [aws], azfs://: [azure]), Beam's file system for it

(``python -m vectordb.beam.load`` is the same command.)

The job's own flags come first in ``--help``; every other flag is a standard Beam pipeline option
(``--runner``, ``--direct_num_workers``, ``--direct_running_mode``, Dataflow's ``--project``/
``--region``/``--temp_location``/``--setup_file`` …), listed after them; the runner defaults to the
``DirectRunner``. ``--option key=value`` (repeatable) passes any connector option (the README's options
table: ``id_column``, ``vector_column``, ``metadata_columns``, ``batch_size``, ``max_concurrency``, …, and
the embedding options for text in; ``batching`` and ``check_target`` are the flags of those names: given
both ways, they must agree); they are checked before the pipeline starts. ``--input`` is a
Parquet or JSON Lines file, a glob of them, or a folder of them (as ``vectordb-load`` reads a folder:
every file in it, Spark's part files and partition folders included, each partition folder's value,
``lang=en/``, a column typed as Spark types it, and the files Spark leaves out, ``_temporary/`` and
``.``-names, left out; a folder in another store, ``gs://bucket/embeddings/``, holds Parquet); the
extension tells the format (``.parquet``, ``.pq``; ``.jsonl``, ``.json``), the first data file's for a
folder or a glob, or ``--input_format``; a file of no such name is read in it (alone, as JSON Lines).
One format for all: files whose names say two are refused, naming one of each. CSV is refused:
``vectordb-load`` reads it. Parquet files are read
as Arrow tables and written without a per-row step; JSON Lines records are dicts, vectors as lists.
``--sample N`` generates N deterministic vectors of ``--dim`` floats instead (the same N and D give the
same vectors on every run). A missing collection is created (``--no_create``: not) with the dimension
of ``--dim``, else of the model (embedding) or the options, else the most common vector length among
the first 10,000 rows of ``--input``; with ``--dead_letters DIR`` rows that fail are written to
``DIR/dead-letters-*.jsonl`` (``on_error=dead_letter``; a DIR that holds an earlier run's letters is
refused, naming them: move them away) and the job succeeds; without it any failed row
fails the job (``on_error=fail``), unless ``--option on_error=report``. ``--api_key_secret SPEC`` gives
the key as a Beam secret that each worker fetches (on Dataflow, Secret Manager), so the job's stored
pipeline does not hold it.

The job ends with the summary the Spark job prints (``vectordb.connector.cli.summary``: rows written
and failed, rows/s, MB/s, requests, retries, throttling, the embedding endpoint's), added up from the sink's outputs (its
``WriteReport``s, and its dead letters as the failed rows), which the workers save in small files the
job reads after the run (in ``--temp_location`` when given, else a local temporary folder; the sink's
Metrics counters where there are none): the counters are not exact, as the DirectRunner drops those
of batches ``GroupIntoBatches`` flushes (``--batching unbounded``). It exits with 1 when rows failed.
With ``--option write_mode=import`` the totals are the import's counters (rows it imported; rows
refused at staging and staged rows it did not import as failed: the latter have no letter), and the
dead-letter files named are those holding letters. Parquet files' schemas are
checked before the pipeline runs (a file the writer cannot read is named). A
``ConnectorError`` (a bad option, a target that cannot be reached, a key refused) is one line and exit
status 2; ``--debug`` shows its trace.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import itertools
import json
import logging
import os
import re
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import apache_beam as beam
import msgspec
import numpy as np
import orjson
import pyarrow as pa
from apache_beam import coders
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import GoogleCloudOptions, PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineResult
from apache_beam.utils.secret import Secret

from vectordb.beam.coders import EXACT
from vectordb.beam.elements import Refusal, refused_line
from vectordb.beam.sink import COUNTERS, DEAD_LETTER_PREFIX, METRICS_NAMESPACE, WriteResult, WriteToVectorDB
from vectordb.connector.backends.registry import canonical_uri
from vectordb.connector.bulk import bulk_path
from vectordb.connector.cli import (
    NOT_JSON_LINES,
    canonical_flags,
    check_embedded_default,
    connector_error_line,
    embedded_note,
    flag_advice,
    folder_files,
    keep_hint,
    not_kept,
    one_format,
    option_pairs,
    refuse_earlier_letters,
    refuse_json_array,
    refuse_target_as_input,
    refused_options,
    run_command,
    spark_reads,
    summary,
    unrecognized,
)
from vectordb.connector.errors import ConfigError
from vectordb.connector.options import convert_options, without_password
from vectordb.connector.report import BatchFailure, WriteReport
from vectordb.connector.rows.types import agreed_length

__all__ = [
    "build",
    "check_json_lines",
    "check_parquet_schemas",
    "connector_options",
    "count_totals",
    "counters",
    "main",
    "make_parser",
    "parse_args",
    "read_totals",
    "sample_batch",
    "sink_parameters",
]

PROG = "vectordb-beam"
DEFAULT_URI = "./vectors.db"
SAMPLE_DIM = 384
SAMPLE_CHUNK = 10_000  # rows per generated Arrow batch: fixed, so a row's vector never depends on N
EXAMPLES = "examples:\n" + (__doc__ or "").split("\n\n")[1]  # the docstring's, shown by --help
# what an --input's extension says; a name with none of them is read as JSON Lines
EXTENSIONS = {
    ".parquet": "parquet",
    ".parq": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".json": "jsonl",  # JSON Lines, as Spark writes JSON and vectordb-load reads it
    ".ndjson": "jsonl",
    ".csv": "csv",  # refused: resolve_input
}
TOTALS_PREFIX = "totals-"  # count_totals' files, one per bundle
SCHEMA_READERS = 8  # Parquet footers read at once before the pipeline runs
SAMPLED_ROWS = 10_000  # the input's first rows, whose most common vector length is a new collection's
REASONS_KEPT = 100  # distinct failure reasons a bundle saves, its most common (the summary shows 5)
# how this command keeps failed rows from failing it (``run_command``'s ``policy_hint``)
POLICY_HINT = (
    "Give --dead_letters DIR, or --option on_error=report, to keep the rows that did land without failing."
)
# the last line of a job whose failed rows no dead letter keeps (on_error=report)
KEEP_HINT = keep_hint("--dead_letters DIR", f"DIR/{DEAD_LETTER_PREFIX}-*.jsonl")


def make_parser() -> argparse.ArgumentParser:
    """The job's own flags (Beam's pipeline options are parsed by Beam, and listed by ``--help``)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Load Parquet or JSON Lines records (or a generated sample) into a vector database with Beam."
        " Its flags take - or _ alike (--dead_letters, --dead-letters)."
        f"\n\n{EXAMPLES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,  # --help lists Beam's options too
        allow_abbrev=False,  # a prefix of a flag is Beam's business, not an abbreviation of ours
    )
    parser.add_argument(
        "-h", "--help", action=_HelpAction, help="show this help (with Beam's options) and exit"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--input",
        help="Parquet or JSON Lines: a file, a glob ('data/*.parquet') or a folder of them (not CSV)",
    )
    source.add_argument("--sample", type=int, metavar="N", help="generate N vectors instead of reading files")
    parser.add_argument(
        "--dim",
        type=int,
        help=f"dimension of --sample vectors (default {SAMPLE_DIM}), and of the collection the job creates "
        f"(default with --input: the most common vector length among its first {SAMPLED_ROWS:,} rows)",
    )
    parser.add_argument(
        "--input_format", choices=("auto", "parquet", "jsonl"), default="auto", help="default: from the name"
    )
    parser.add_argument(
        "--uri", default=DEFAULT_URI, help=f"target database (default {DEFAULT_URI}: Milvus Lite)"
    )
    parser.add_argument(
        "--collection",
        help="collection/table when the URI names none (not for Pinecone: the host names the index)",
    )
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="a connector option (repeatable)"
    )
    parser.add_argument(
        "--api_key_secret",
        metavar="SPEC",
        help="the key as a Beam secret each worker fetches, e.g. "
        "'type:GcpSecret;version_name:projects/P/secrets/S/versions/latest'",
    )
    parser.add_argument("--dead_letters", metavar="DIR", help="directory for dead-letters-*.jsonl")
    parser.add_argument(
        "--no_create",
        action="store_true",
        help="do not create a missing collection (made otherwise with --dim's, the model's or the input's dimension)",
    )
    parser.add_argument(
        "--check_target",
        action="store_true",
        default=None,  # not given: --option check_target may say
        help="ask the database (and the embedding endpoint) once before the pipeline starts",
    )
    parser.add_argument(
        "--batching",
        choices=("auto", "bounded", "unbounded"),
        help="WriteToVectorDB batching (default auto)",
    )
    parser.add_argument("--debug", action="store_true", help="show the full trace of an error")
    return parser


class _HelpAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(help_text(parser))
        parser.exit()


def help_text(own: argparse.ArgumentParser) -> str:
    """The job's flags, then every Beam pipeline option, one group per options class."""
    shown = argparse.ArgumentParser(
        prog=own.prog,
        usage=own.format_usage().removeprefix("usage: ").rstrip() + " [Beam pipeline options]",
        description=own.description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[own],
        add_help=False,
    )
    seen: set[str] = set()
    for cls in PipelineOptions.__subclasses__():
        if str(cls) in seen or cls.__name__.startswith("Test"):  # Beam's own tests' options
            continue
        seen.add(str(cls))
        group = _BeamGroup(shown.add_argument_group(f"Beam pipeline options: {cls.__name__}"))
        cls._add_argparse_args(group)  # type: ignore[arg-type]  # what it calls of a parser, see _BeamGroup
    return shown.format_help()


class _BeamGroup:
    """What Beam's ``_add_argparse_args`` calls on a parser, on an argument group (for the help only)."""

    def __init__(self, group: Any) -> None:
        self._group = group

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        with contextlib.suppress(argparse.ArgumentError):  # a flag the job (or another class) defines
            self._group.add_argument(*args, **kwargs)

    add_value_provider_argument = add_argument

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _BeamGroup:
        return _BeamGroup(self._group.add_mutually_exclusive_group(**kwargs))


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The job's flags, and the rest: Beam's pipeline options."""
    own = make_parser()
    args, rest = own.parse_known_args(canonical_flags(sys.argv[1:] if argv is None else argv, own))
    if args.sample is not None and args.sample < 1:
        own.error("--sample must be positive")
    if args.dim is not None and args.dim < 1:
        own.error("--dim must be positive")
    ours = [s for action in own._actions for s in action.option_strings if s.startswith("--")]
    stray = _stray_arguments(rest)
    if stray:  # Beam drops what it cannot parse: a target given without --uri went to ./vectors.db
        own.error(unrecognized(stray))
    beam_flags = _beam_flags()
    for arg in rest:  # a misspelt flag of ours would otherwise go to Beam, which drops what it cannot parse
        name = arg.split("=", 1)[0]
        if not name.startswith("--") or name in beam_flags:
            continue
        advice = flag_advice(name, ours)
        if advice is not None:
            own.error(advice)
        # Beam drops a flag no options class defines, with a log line: vectordb-load's --overwrite was
        # ignored and the old rows kept, a cut --dead_letters kept no letter
        longer = [flag for flag in ours if flag.replace("-", "_").startswith(name.replace("-", "_"))]
        meant = f": did you mean {' or '.join(longer)}?" if longer else ""
        own.error(f"unrecognized argument {name}: neither a flag of {PROG} nor a Beam pipeline option{meant}")
    refused = refused_options(args.option, ours)  # a key given as --option api_key=… among them
    if refused is not None:
        own.error(refused)
    return args, rest


def _beam_parser() -> argparse.ArgumentParser:
    found: list[argparse.ArgumentParser] = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=found.append)
    return found[0]


def _beam_flags() -> set[str]:
    return {s for action in _beam_parser()._actions for s in action.option_strings}


def _stray_arguments(rest: Sequence[str]) -> list[str]:
    """The arguments among ``rest`` that are neither a flag nor a flag's value (Beam's own flags parsed
    as Beam parses them; an unknown ``--name value`` is a pipeline option of the user's, kept by Beam)."""
    _, unknown = _beam_parser().parse_known_args(list(rest))
    stray = []
    for i, arg in enumerate(unknown):
        after_flag = i > 0 and unknown[i - 1].startswith("--") and "=" not in unknown[i - 1]
        if not arg.startswith("-") and not after_flag:
            stray.append(arg)
    return stray


class _SinkFlags(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The sink's parameters the job has flags for, as ``--option`` gives them too (``None``: not given)."""

    batching: Literal["auto", "bounded", "unbounded"] | None = None
    check_target: bool | None = None


SINK_DEFAULTS = {"batching": "auto", "check_target": False}


def sink_parameters(args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any]:
    """``WriteToVectorDB``'s ``batching`` and ``check_target``: the flag, else the ``--option`` of the same
    name, else the default. Such options are taken out of ``options`` (they are no connector options).

    Raises:
        ConfigError: a bad value, or a flag and an option that disagree (naming both).
    """
    given = {name: options.pop(name) for name in SINK_DEFAULTS if name in options}
    parsed = convert_options(given, _SinkFlags)
    parameters = {}
    for name, default in SINK_DEFAULTS.items():
        flag, option = getattr(args, name), getattr(parsed, name)
        if flag is not None and option is not None and flag != option:
            shown = f"--{name}" if isinstance(flag, bool) else f"--{name} {flag}"
            raise ConfigError(f"--option {name}={given[name]} and {shown} disagree: give one of them")
        parameters[name] = next((v for v in (flag, option) if v is not None), default)
    return parameters


def connector_options(args: argparse.Namespace) -> dict[str, Any]:
    """The connector's options: ``--option`` pairs, ``--collection``, ``--api_key_secret``, the policy of
    ``--dead_letters``, and ``create`` with the dimension where the job knows it (``--sample``, ``--dim``,
    the input's vectors); where it sets option ``dimension``, ``args.dimension_from`` says from what, in
    the user's words (``run_command``)."""
    options: dict[str, Any] = dict(option_pairs(args.option))
    if args.collection:
        options.setdefault("collection", args.collection)
    if args.api_key_secret:
        try:
            options["api_key"] = Secret.parse_secret_option(args.api_key_secret)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"--api_key_secret: {exc}") from None
    if args.dead_letters:
        options.setdefault("on_error", "dead_letter")
        options.setdefault("dead_letter_path", args.dead_letters)
    if args.no_create:
        return options
    if args.sample is not None or args.dim is not None:
        options.setdefault("create", "true")
        if "dimension" not in options:  # the command's: a mismatch names the flag (run_command)
            options["dimension"] = str(args.dim or SAMPLE_DIM)
            args.dimension_from = "the sample's vectors (--dim {n})" if args.sample else "--dim {n}"
    elif not {"embed_url", "dimension", "vector_dimensions"}.isdisjoint(options):
        options.setdefault("create", "true")  # the model's, the option's or each name's dimension
    elif "create" not in options and not {"vector_columns", "multi_vector_columns"}.isdisjoint(options):
        # each name's dimension is vector_dimensions' to give: create=true has the plan say so up front
        options["create"] = "true"
    elif "create" not in options:
        # the dimension lets every worker create (or check) the collection before its first row
        options["create"] = "true"
        column = options.get("vector_column", "values")
        files = getattr(args, "files", None)
        options["dimension"] = str(input_dimension(args.input, input_format(args), column, files))
        args.dimension_from = "the input's vectors (most of length {n})"
    return options


def input_dimension(pattern: str, fmt: str, column: str, files: Sequence[str] | None = None) -> int:
    """The most common vector length among the input's first rows (the rule of option ``dimension``,
    as ``vectordb-load`` learns it): no single row decides, so a first row of another length fails
    alone instead of every other row."""
    lengths: list[int] = []
    read = 0
    for path in data_files(pattern) if files is None else files:
        with FileSystems.open(path) as stream:
            try:
                read_lengths = (
                    _parquet_lengths(stream, column)
                    if fmt == "parquet"
                    else _line_lengths(text_lines(stream), column)
                )
                for found, rows in read_lengths:
                    lengths += found
                    read += rows
                    if read >= SAMPLED_ROWS:
                        break
            except ConfigError as exc:
                raise ConfigError(f"--input {path}: {exc}") from None
        if read >= SAMPLED_ROWS:
            break
    if not lengths:
        raise ConfigError(
            f"--input: no vector in column {column!r} among its first {SAMPLED_ROWS:,} rows to give a new "
            "collection its dimension; give --dim N (or --option vector_column=… naming the vectors)"
        )
    return agreed_length(np.asarray(lengths))


def _parquet_lengths(stream: Any, column: str) -> Iterator[tuple[list[int], int]]:
    """Each batch's present vector lengths, and its rows.

    Raises:
        ConfigError: no such column (naming the file's columns), or one that holds no vectors.
    """
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        source = pq.ParquetFile(stream)
    except (pa.ArrowException, ValueError) as exc:
        raise ConfigError(f"not a Parquet file the job can read: {exc}") from None
    names = source.schema_arrow.names
    if column not in names:
        raise ConfigError(
            f"no column {column!r} (columns: {', '.join(names)}); name the vectors' column with "
            "--option vector_column=NAME"
        )
    try:
        for batch in source.iter_batches(batch_size=SAMPLED_ROWS, columns=[column]):
            vectors = batch.column(0)
            if pa.types.is_string(vectors.type) or pa.types.is_large_string(vectors.type):
                lengths = [_text_length(text) for text in vectors.to_pylist()]  # JSON text a row
            else:
                lengths = pc.list_value_length(vectors).to_pylist()
            yield [n for n in lengths if n], batch.num_rows
    except (pa.ArrowException, ValueError, KeyError, IndexError) as exc:
        raise ConfigError(f"cannot read the vectors of column {column!r}: {exc}") from None


def _text_length(text: str | None) -> int:
    """The length of a vector given as JSON text (``"[0.1, 0.2]"``), 0 for anything else: the row is the
    writer's to fail, with its reason."""
    try:
        vector = orjson.loads(text) if text else None
    except orjson.JSONDecodeError:
        return 0
    return len(vector) if isinstance(vector, list) else 0


def text_lines(stream: Any) -> Iterator[bytes]:
    """The lines of a file ``FileSystems.open`` opened: a compressed one (``rows.json.gz``, which the job
    reads decompressed) is a ``CompressedFile``, which has ``readline`` but cannot be iterated."""
    return iter(stream.readline, b"")


def _line_lengths(lines_read: Iterable[bytes], column: str) -> Iterator[tuple[list[int], int]]:
    """Each JSON Lines record's vector length (where it has a list, or a list's JSON text, there), one
    record at a time.

    Raises:
        ConfigError: the file's first lines hold no JSON object: a JSON array or a pretty-printed file,
            which the job would read as one failed row a line.
    """
    objects = lines = 0
    for read in lines_read:
        line = read.removeprefix(codecs.BOM_UTF8)
        if not line or line.isspace():  # skipped by the job, as by Spark
            continue
        lines += 1
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:  # a dead letter in the job; no dimension here
            record = None
        if isinstance(record, dict):
            objects += 1
        elif lines == NOT_JSON_LINES_AFTER and not objects:
            raise ConfigError(NOT_JSON_LINES)
        vector = record.get(column) if isinstance(record, dict) else None
        if isinstance(vector, str):
            length = _text_length(vector)
        else:
            length = len(vector) if isinstance(vector, list) else 0
        yield ([length] if length else []), 1
    if lines and not objects:
        raise ConfigError(NOT_JSON_LINES)


# lines read with no JSON object among them before a file is taken to be something else than JSON Lines
NOT_JSON_LINES_AFTER = 100


def input_format(args: argparse.Namespace) -> str:
    if args.input_format != "auto":
        return str(args.input_format)
    return format_of(args.input) or "jsonl"


def format_of(name: str) -> str | None:
    """The format a file name's extension says (``.csv``: ``"csv"``, which the job refuses), else ``None``.
    A text format's may be followed by a codec's Beam reads (``rows.json.gz``, as Spark writes it with
    option ``compression``): the job's text reader decompresses it."""
    stem, suffix = os.path.splitext(name.rstrip("*/"))
    if CompressionTypes.detect_compression_type(suffix) != CompressionTypes.UNCOMPRESSED:
        found = EXTENSIONS.get(os.path.splitext(stem)[1].lower())
        return found if found in ("jsonl", "csv") else None
    return EXTENSIONS.get(suffix.lower())


def resolve_input(given: str, fmt: str) -> tuple[str, str, list[str]]:
    """``--input`` and ``--input_format`` as the job reads them, and the data files (``data_files``): a
    local folder's files as ``vectordb-load`` (Spark) lists them, every one of them; a folder in another
    store is the pattern of its Parquet files (``FOLDER/**.parquet``; ``.json*`` with ``--input_format
    jsonl``). ``fmt`` ``auto`` becomes the format the first data file's name says (else, but for a
    folder, JSON Lines); a file whose name says none is read in it, as Spark reads it.

    Raises:
        ConfigError: an input that matches no file, or only files Spark leaves out; a file whose name
            says another format than the first's, or than ``--input_format`` (naming both, as
            ``vectordb-load`` does: the job reads one format, and read the others as garbage or not at
            all); CSV (which this job does not read).
    """
    refuse_target_as_input(given)
    folder = input_folder(given)
    pattern = input_pattern(given, fmt)
    if folder is None or "://" in given:
        check_input(pattern)
    files = data_files(pattern, folder)
    if not files:
        raise ConfigError(f"--input {given}: no data file but those Spark leaves out (_… and .… names)")
    found = one_format([(given, files)], format_of, None if fmt == "auto" else fmt, flag="--input_format")
    if found is None and folder is not None:  # a file or a glob of no such name is JSON Lines; a folder?
        raise ConfigError(
            f"--input {given}: no Parquet or JSON Lines file in the folder ({', '.join(sorted(EXTENSIONS))}); "
            "give --input_format to read its files"
        )
    fmt = found or "jsonl"
    if fmt == "csv":
        raise ConfigError(
            f"--input {given}: {PROG} reads Parquet and JSON Lines (files, globs, folders of them), not CSV; "
            "vectordb-load reads CSV, or write the rows as Parquet or JSON Lines"
        )
    return pattern, fmt, files


def input_pattern(given: str, fmt: str) -> str:
    """What the job matches for ``--input``: a folder in another store, the pattern of its Parquet files
    (``FOLDER/**.parquet``; ``.json*`` with ``--input_format jsonl``: ``**`` spans partition folders);
    anything else as given."""
    if "://" not in given or input_folder(given) is None:
        return given
    return given.rstrip("/") + "/**" + (".parquet" if fmt in ("auto", "parquet") else ".json*")


def input_folder(pattern: str) -> str | None:
    """``--input``'s folder, ending with ``/``, or ``None`` where it names files (a file, a glob)."""
    if os.path.isdir(pattern) or ("://" in pattern and pattern.endswith("/")):
        return pattern.rstrip("/") + "/"
    return None


def data_files(pattern: str, folder: str | None = None) -> list[str]:
    """The files the job reads, sorted: a local ``folder``'s as Spark lists them (``folder_files``: at
    any depth, every name, but for ``_temporary/``, a failed job's leftovers, ``.crc`` and other hidden
    files); in a folder of another store, those ``pattern`` matches that Spark reads; else those
    ``pattern`` matches, as Beam's reader matches them (``**`` spans folders)."""
    folder = folder or (input_folder(pattern) if "://" not in pattern else None)
    if folder is not None and "://" not in folder:
        return folder_files(folder)
    found = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    if folder is None:
        return found
    return [path for path in found if spark_reads(folder, path)]


def _below(folder: str, path: str) -> list[str]:
    """``path``'s folders below ``folder`` and its name (``FileSystems.match`` keeps the pattern's prefix)."""
    return path.removeprefix(folder).strip("/").split("/")


HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # Spark's folder name for a null partition value


def partition_values(folder: str, files: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Each file's partition folders' values (``lang=en/``), by file, as Spark's partition discovery
    reads them: unquoted (``%20``), ``__HIVE_DEFAULT_PARTITION__`` as null, and a column whose values
    are all whole numbers read as integers, all numbers as floats, else text (Spark would read a date
    as a date: here it stays text). Files without such folders: none.

    Raises:
        ConfigError: files under different partition columns (Spark refuses such a folder too).
    """
    found = {
        path: dict(part.split("=", 1) for part in _below(folder, path)[:-1] if "=" in part) for path in files
    }
    first = {tuple(values): path for path, values in reversed(found.items())}  # each kind's first file
    names = set(first)
    if len(names) > 1:
        shown = " and ".join(f"{'/'.join(n) or 'none'} ({first[n]})" for n in sorted(names)[:2])
        raise ConfigError(
            f"--input {folder}: its files sit under different partition columns: {shown}, which Spark "
            "refuses too; give a glob of the files instead"
        )
    if not names or not next(iter(names)):
        return {}
    columns = {
        name: _partition_column([values[name] for values in found.values()]) for name in next(iter(names))
    }
    return {
        path: {name: columns[name][raw] for name, raw in values.items()} for path, values in found.items()
    }


WHOLE = re.compile(r"-?\d+")
NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _partition_column(raws: list[str]) -> dict[str, Any]:
    """One partition column's values, by their folder text, typed as the column's values agree."""
    texts = {raw: None if raw == HIVE_NULL else urllib.parse.unquote(raw) for raw in raws}
    given = [t for t in texts.values() if t is not None]
    if given and all(WHOLE.fullmatch(t) and -(2**63) <= int(t) < 2**63 for t in given):
        return {raw: None if t is None else int(t) for raw, t in texts.items()}
    if given and all(NUMBER.fullmatch(t) for t in given):
        return {raw: None if t is None else float(t) for raw, t in texts.items()}
    return texts


def with_partitions(
    path: str, table: pa.Table, partitions: Mapping[str, Mapping[str, Any]] | None = None
) -> pa.Table:
    """A table read from ``path`` with its partition folders' values as columns (at the end, replacing
    a column of the same name, as Spark reads them)."""
    for name, value in (partitions or {}).get(path, {}).items():
        one = pa.array([value], type=_arrow_type(value))
        column = one.take(pa.array(np.zeros(table.num_rows, dtype=np.int32)))
        if name in table.column_names:
            table = table.drop_columns([name])
        table = table.append_column(name, column)
    return table


def _arrow_type(value: Any) -> pa.DataType:
    if isinstance(value, int):
        return pa.int64()
    return pa.float64() if isinstance(value, float) else pa.string()


def build(pipeline: beam.Pipeline, args: argparse.Namespace, sink: WriteToVectorDB) -> Any:
    """Read (or generate), write; returns ``WriteToVectorDB``'s result (``written``, ``failed``)."""
    if args.sample is not None:
        records = (
            pipeline
            | "Sample" >> beam.Create(range(0, args.sample, SAMPLE_CHUNK))
            | "Spread" >> beam.Reshuffle()
            | "Generate" >> beam.Map(sample_batch, n=args.sample, dim=args.dim or SAMPLE_DIM)
        )
    elif (
        getattr(args, "folder", None) is not None
    ):  # its data files as Spark lists them, with their partitions
        files = pipeline | "Data files" >> beam.Create(args.files)
        if input_format(args) == "parquet":
            read_all = beam.io.ReadAllFromParquetBatched(with_filename=True)
            tables = files | "Read Parquet" >> read_all
            records = tables | "Partition columns" >> beam.MapTuple(with_partitions, args.partitions)
        else:
            lines = files | "Read JSON Lines" >> beam.io.ReadAllFromText(
                coder=coders.BytesCoder(), with_filename=True
            )
            records = (
                lines
                | "Skip blank lines" >> beam.Filter(has_text)
                | "Parse" >> beam.MapTuple(parse_line, args.partitions).with_output_types(EXACT)
            )
    elif input_format(args) == "parquet":
        records = pipeline | "Read Parquet" >> beam.io.ReadFromParquetBatched(args.input)  # Arrow tables
    else:
        # bytes, decoded by parse_line: Beam's default coder decodes UTF-8 itself, and one line that is
        # not UTF-8 stopped the whole job with its trace
        read = beam.io.ReadFromTextWithFilename(args.input, coder=coders.BytesCoder())
        lines = pipeline | "Read JSON Lines" >> read | "Skip blank lines" >> beam.Filter(has_text)
        records = lines | "Parse" >> beam.MapTuple(parse_line).with_output_types(EXACT)
    return records | "Write" >> sink


def has_text(read: tuple[str, bytes]) -> bool:
    """Whether a line ``(file, line)`` holds more than white space: Spark's JSON reader skips blank lines
    (a file's last newline, say), and so does the job, rather than failing each as a row."""
    return not read[1].isspace() and read[1] != b""


def parse_line(path: str, line: bytes, partitions: Mapping[str, Mapping[str, Any]] | None = None) -> Any:
    """A JSON Lines record of file ``path``, with its partition folders' values (``partition_values``);
    a line that is not UTF-8 or not JSON is its dead letter (holding the line and the file), failed
    alone. Its reason names the file, not the line's number: the reader splits a file among bundles,
    which do not know their first line's number."""
    line = line.removeprefix(codecs.BOM_UTF8)  # a file's first, as some editors write it: Spark reads past it
    try:
        text = line.decode()
    except UnicodeDecodeError as exc:
        return _refused(path, line.decode(errors="backslashreplace"), f"the line is not valid UTF-8: {exc}")
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        record = _with_lone_surrogate(text, exc)
        if record is None:
            # orjson's position is within the line, whose own "line 1" would read as the file's first
            where = str(exc).replace(": line 1 column ", ": column ")
            return _refused(path, text, f"the line is not JSON: {where}")
    values = partitions.get(path) if partitions else None
    if values and isinstance(record, dict):
        record.update(values)  # the folder's value wins over a key of the same name, as in Spark
    return record


def _with_lone_surrogate(text: str, refused: orjson.JSONDecodeError) -> Any:
    """The record of a JSON line whose text escapes a lone surrogate (``"\\ud800"``): JSON, which orjson
    refuses and the stdlib's ``json`` reads, so the row fails alone with its id, for that text, as in
    Python, rather than as a line that is not JSON; ``None`` for a line ``refused`` for anything else."""
    if "surrogate" not in str(refused):
        return None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError:
        return None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: the stdlib's extension, which orjson refuses


def _refused(path: str, line: str, reason: str) -> Refusal:
    refused = refused_line(line, f"file {path}: {reason}")
    refused.dead_letter["file"] = path
    return refused


# the Beam extra that brings the file system of each store Beam reads
BEAM_STORES = {"gs": "gcp", "s3": "aws", "azfs": "azure", "hdfs": "hadoop"}


def check_input(pattern: str) -> None:
    """Refuse an ``--input`` that matches no file, or that Beam cannot list: Beam's own refusal is a page
    of trace. Only an empty match is "nothing matches": a store whose file system is not installed (the
    ``gs://`` of the help without ``apache-beam[gcp]``), or a listing refused (permission, credentials),
    says so, in Beam's words.

    Raises:
        ConfigError: naming ``--input`` (its password blanked) and, where Beam could not list it, Beam's
            reason, blanked of the input's credentials (``Secrets``): Beam quotes the path.
    """
    from vectordb.connector.redaction import Secrets, uri_passwords

    shown = repr(without_password(pattern))
    try:
        found = FileSystems.match([pattern])[0].metadata_list
    except Exception as exc:  # ValueError: no file system for the scheme; BeamIOError: the listing failed
        reason = Secrets(*uri_passwords(pattern)).blank(" ".join(str(exc).split()))
        if not reason.startswith(("Unable to get filesystem", "Unable to get the Filesystem")):
            raise ConfigError(f"--input {shown}: Beam cannot list it: {reason}") from None
        scheme = pattern.partition("://")[0].lower()
        extra = BEAM_STORES.get(scheme)
        how = (
            f"pip install 'apache-beam[{extra}]'"
            if extra
            else f"it reads {', '.join(f'{store}://' for store in BEAM_STORES)} and local paths"
        )
        raise ConfigError(
            f"--input {shown}: Beam has no file system for {scheme}:// here: {how} (Beam: {reason})"
        ) from None
    if not found:
        raise ConfigError(f"--input: nothing matches {shown}")


def check_parquet_schemas(
    pattern: str,
    sink: WriteToVectorDB,
    files: Sequence[str] | None = None,
    partitions: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Check each Parquet file's columns as the sink's writer will read them, from its footer alone (no
    row is read), before the pipeline runs: one file without the id or vector column, or with one of a
    type the writer cannot take, would stop the job after other files were written, naming no file.

    Raises:
        ConfigError: naming the file and the option or column at fault (or a file that is not Parquet).
    """
    from vectordb.connector.client import Client

    paths = data_files(pattern) if files is None else list(files)
    with ThreadPoolExecutor(max_workers=SCHEMA_READERS) as pool:  # a footer each: a round trip in a store
        schemas = list(pool.map(_parquet_schema, paths))
    if partitions:  # the columns the files' folders add, as the job reads them
        schemas = [
            with_partitions(p, s.empty_table(), partitions).schema
            for p, s in zip(paths, schemas, strict=True)
        ]
    # without a Secret's value, as the sink's plan holds the options (the check asks nothing)
    options = sink.options if sink.secret is None else msgspec.structs.replace(sink.options, api_key="")
    checked: set[pa.Schema] = set()
    with Client(options) as client:
        for path, schema in zip(paths, schemas, strict=True):
            if schema in checked:
                continue
            try:
                client.check_columns(pa.RecordBatch.from_pylist([], schema=schema))
            except ConfigError as exc:
                raise ConfigError(f"--input {path}: {exc}") from None
            checked.add(schema)


def check_json_lines(files: Sequence[str]) -> None:
    """Refuse a JSON Lines input file that is a JSON array (``refuse_json_array``), or whose first lines
    hold no JSON object (a pretty-printed file), before the pipeline runs, whatever gives the dimension:
    read a line at a time, an array written one object a line wrote its last object and failed the
    others, and a pretty-printed file failed every line.

    Raises:
        ConfigError: naming the file.
    """
    with ThreadPoolExecutor(max_workers=SCHEMA_READERS) as pool:  # a round trip each in a store
        list(pool.map(_check_json_lines_file, files))


def _check_json_lines_file(path: str) -> None:
    with FileSystems.open(path) as stream:
        refuse_json_array(path, stream)
    with FileSystems.open(path) as stream:
        try:
            for _ in itertools.islice(_line_lengths(text_lines(stream), "values"), NOT_JSON_LINES_AFTER):
                pass
        except ConfigError as exc:
            raise ConfigError(f"--input {without_password(path)!r}: {exc}") from None


def _parquet_schema(path: str) -> pa.Schema:
    import pyarrow.parquet as pq

    try:
        with FileSystems.open(path) as stream:
            return pq.read_schema(stream)
    except (pa.ArrowException, OSError) as exc:
        raise ConfigError(f"--input {path}: not a Parquet file the job can read: {exc}") from None


def sample_batch(start: int, n: int, dim: int) -> pa.RecordBatch:
    """Rows ``start`` … of ``n`` (at most ``SAMPLE_CHUNK``): ``id``, ``values`` (dim floats in [-1, 1)), ``title``.

    A chunk's vectors come from a generator seeded with the chunk and the dimension, row after row:
    the same id gets the same vector whatever N is, so a second run upserts the same rows.
    """
    rows = min(SAMPLE_CHUNK, n - start)
    values = (
        np.random.default_rng([dim, start // SAMPLE_CHUNK]).uniform(-1, 1, (rows, dim)).astype(np.float32)
    )
    offsets = pa.array(np.arange(0, (rows + 1) * dim, dim, dtype=np.int32))
    ids = [str(i) for i in range(start, start + rows)]
    return pa.RecordBatch.from_pydict(
        {
            "id": ids,
            "values": pa.ListArray.from_arrays(offsets, pa.array(values.reshape(-1))),
            "title": [f"sample {i}" for i in ids],
        }
    )


def count_totals(result: WriteResult, folder: str) -> None:
    """Save the sink's outputs' counts in ``folder``, a file per bundle, for ``read_totals``: its reports'
    counts (``COUNTERS``) but ``failed``, and its dead letters as ``failed``: one a failed row, those of
    rows refused while reading (which no report holds) included. The failed rows' reasons too, from
    the letters (every failed row has one), and which of them were deletes from the reports (a letter
    does not say).

    Outputs, not Metrics counters: the DirectRunner drops the counters of batches ``GroupIntoBatches``
    flushes. Files, not a ``CombineGlobally``: those batches' reports reach the runner after its
    grouping steps have closed (the BundleBasedDirectRunner then fails the job). Not for an import
    (``write_mode=import``): the staged rows it leaves out fail with no letter; it is bounded input,
    batched without ``GroupIntoBatches``, whose counters are exact."""
    _ = result.written | "Count reports" >> beam.ParDo(_SaveCounts(folder, _report_counts))
    # the letters after the sink's Flatten: another consumer of one of its inputs (the rows refused while
    # reading) changes the FnApiRunner's fusion, and batches are then encoded without their elements
    _ = result.failed | "Count failed rows" >> beam.ParDo(_SaveCounts(folder, _letter_counts))


# a reason as saved: (error_type, error, op, rows); op "" for a letter's (which does not say its op)
Reason = tuple[str, str, str, int]


def _report_counts(report: WriteReport) -> tuple[list[int], list[Reason]]:
    counts = [0 if name == "failed" else int(getattr(report, name)) for name in COUNTERS]
    return counts, [(f.error_type, f.error, f.op, f.rows) for f in report.failures if f.op != "upsert"]


def _letter_counts(letter: Any) -> tuple[list[int], list[Reason]]:
    counts = [int(name == "failed") for name in COUNTERS]
    return counts, [(str(letter.get("error_type")), str(letter.get("error")), "", 1)]


class _SaveCounts(beam.DoFn):
    """Adds up a bundle's counts and reasons and writes them at its end, in one file of their own (the
    file is the bundle's last act, so a bundle that fails before it leaves none, and its retry counts
    once). It keeps the ``REASONS_KEPT`` most common reasons: rows failing each for its own reason
    would otherwise make the file as long as the letters."""

    def __init__(self, folder: str, counts_of: Callable[[Any], tuple[list[int], list[Reason]]]) -> None:
        self._folder, self._counts_of = folder, counts_of

    def start_bundle(self) -> None:
        self._total = [0] * len(COUNTERS)
        self._reasons: Counter[tuple[str, str, str]] = Counter()

    def process(self, element: Any) -> Iterator[Any]:
        counts, reasons = self._counts_of(element)
        for i, value in enumerate(counts):
            self._total[i] += value
        for error_type, error, op, rows in reasons:
            self._reasons[error_type, error, op] += rows
        yield from ()

    def finish_bundle(self) -> None:
        if any(self._total) or self._reasons:
            path = FileSystems.join(self._folder, f"{TOTALS_PREFIX}{uuid.uuid4().hex}.json")
            reasons = [[*key, rows] for key, rows in self._reasons.most_common(REASONS_KEPT)]
            with FileSystems.create(path) as stream:
                stream.write(orjson.dumps({"counts": self._total, "reasons": reasons}))


def read_totals(folder: str) -> tuple[dict[str, int], list[tuple[str, int]]] | None:
    """The counts ``count_totals`` saved in ``folder``, added up, and the failed rows' reasons with their
    rows, most first (``WriteReport.reasons``' words); ``None`` when it saved none (no output, or
    workers that could not reach the folder)."""
    pattern = FileSystems.join(folder, f"{TOTALS_PREFIX}*.json")
    files = FileSystems.match([pattern])[0].metadata_list
    if not files:
        return None
    totals = dict.fromkeys(COUNTERS, 0)
    reasons: Counter[tuple[str, str, str]] = Counter()
    for found in files:
        with FileSystems.open(found.path) as stream:
            saved = orjson.loads(stream.read())
        for name, value in zip(COUNTERS, saved["counts"], strict=True):
            totals[name] += value
        for error_type, error, op, rows in saved["reasons"]:
            reasons[error_type, error, op] += rows
    return totals, _failed_reasons(reasons)


def _failed_reasons(found: Counter[tuple[str, str, str]]) -> list[tuple[str, int]]:
    """The letters' reasons (op ``""``), the rows the reports name as deletes said to be so."""
    letters = Counter({(t, e): n for (t, e, op), n in found.items() if not op})
    failures = []
    for (error_type, error, op), rows in found.items():
        deletes = min(rows, letters[error_type, error]) if op else 0
        if deletes:
            letters[error_type, error] -= deletes
            failures.append(BatchFailure(ids=(), unnamed=deletes, error=error, error_type=error_type, op=op))
    failures += [
        BatchFailure(ids=(), unnamed=rows, error=error, error_type=error_type)
        for (error_type, error), rows in letters.items()
        if rows
    ]
    # all of them: the summary shows the first and says how many it leaves out
    return WriteReport(failures=failures).reasons(len(failures))


@contextlib.contextmanager
def _totals_folder(options: PipelineOptions) -> Iterator[str]:
    """Where the workers save their counts: in ``--temp_location`` (workers elsewhere reach it), else a
    local temporary folder (the DirectRunner's workers are on this machine); removed after the run."""
    temp = options.view_as(GoogleCloudOptions).temp_location
    if not temp:
        with tempfile.TemporaryDirectory(prefix="vectordb-beam-") as folder:
            yield folder
        return
    folder = FileSystems.join(temp, f"vectordb-beam-{uuid.uuid4().hex}")
    try:
        yield folder
    finally:
        with contextlib.suppress(Exception):  # nothing saved, or the store refuses: the run's result stands
            saved = FileSystems.match([FileSystems.join(folder, f"{TOTALS_PREFIX}*.json")])[0].metadata_list
            FileSystems.delete([m.path for m in saved] + ([folder] if os.path.isdir(folder) else []))


def counters(result: PipelineResult) -> dict[str, int]:
    """The sink's Metrics counters (``written``, ``failed``, ``requests``, …), summed over its steps (not
    the job's totals: a runner may drop some, see ``count_totals``)."""
    found = result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))["counters"]
    totals = dict.fromkeys(COUNTERS, 0)
    for counter in found:
        name = counter.key.metric.name
        totals[name] = totals.get(name, 0) + (counter.committed or counter.attempted or 0)
    return totals


def main(argv: Sequence[str] | None = None) -> int:
    """The command: parse ``argv`` (default: the command line), run the pipeline, return the exit status."""
    args, beam_args = parse_args(argv)
    return run_command(
        PROG,
        lambda: load(args, beam_args),
        debug=args.debug,
        policy_hint=POLICY_HINT,
        no_create=args.no_create,
        dimension_from=lambda: getattr(args, "dimension_from", None),  # set by connector_options
    )


def load(args: argparse.Namespace, beam_args: Sequence[str]) -> int:
    """Run the pipeline; 1 when rows failed. Raises ``ConnectorError``."""
    uri = canonical_uri(args.uri)  # the embedded default's folder, resolved here, not on workers
    options = PipelineOptions(list(beam_args))
    # the input is listed and read here before the pipeline runs: a store's own options (--s3_endpoint_url,
    # --s3_region_name…) must reach Beam's file systems first, which the pipeline would give them only later
    FileSystems.set_options(options)
    check_embedded_default(
        uri
    )  # a worker starts the server: said now, not from a worker once the pipeline runs
    if args.input is not None:
        args.folder = input_folder(args.input)
        args.input, args.input_format, args.files = resolve_input(args.input, args.input_format)
        args.partitions = partition_values(args.folder, args.files) if args.folder else {}
        if args.input_format == "jsonl":  # always, not only where the dimension is learnt from them
            check_json_lines(args.files)
    connector = connector_options(args)
    sink = WriteToVectorDB(uri, **sink_parameters(args, connector), **connector)
    check_dead_letter_folder(args, dead_letter_folder(sink))
    if args.input is not None and args.input_format == "parquet":
        check_parquet_schemas(args.input, sink, args.files, args.partitions)
    standard = options.view_as(StandardOptions)
    if not standard.runner:
        standard.runner = "DirectRunner"
    pipeline = beam.Pipeline(options=options)
    what = f"a sample of {args.sample}" if args.sample else args.input
    imports = bulk_path(sink.options) is not None
    with _totals_folder(options) as totals_folder:
        written = build(pipeline, args, sink)
        if not imports:
            count_totals(written, totals_folder)
        print(f"writing {what} to {without_password(uri)}", flush=True)
        started = time.monotonic()
        with _quiet_runner(debug=args.debug):
            result = pipeline.run()
            result.wait_until_finish()
        wall_s = time.monotonic() - started
        totals, reasons = (None if imports else read_totals(totals_folder)) or (counters(result), [])
    folder = dead_letter_folder(sink)
    files = dead_letter_files(folder, sink.dead_letter_prefix) if totals["failed"] else []  # this run's
    print(summary(totals, target=sink.target, wall_s=wall_s, reasons=reasons, dead_letters=files), flush=True)
    note = embedded_note(uri)
    if note:
        print(note, flush=True)
    if totals["failed"] and folder is None:  # on_error=report: the rows are counted, and kept nowhere
        print(not_kept(PROG, totals["failed"], KEEP_HINT), file=sys.stderr, flush=True)
    return 1 if totals["failed"] else 0


# the loggers through which the runners log an exception raised in a bundle before they re-raise it
RUNNER_LOGGERS = ("apache_beam.runners.common", "apache_beam.runners.direct.executor")


@contextlib.contextmanager
def _quiet_runner(*, debug: bool) -> Iterator[None]:
    """Without ``--debug``, the runner does not log the trace of a ``ConnectorError`` the job prints as one line.

    Beam logs an exception raised in a bundle before it re-raises it ("apache_beam.runners.common"); the
    BundleBasedDirectRunner (chosen for ``GroupIntoBatches``' timer) logs each of its attempts' traces too.
    """
    loggers = [logging.getLogger(name) for name in RUNNER_LOGGERS]
    quiet = _NotConnectorErrors()
    for runner_log in loggers if not debug else ():
        runner_log.addFilter(quiet)
    try:
        yield
    finally:
        for runner_log in loggers:
            runner_log.removeFilter(quiet)


class _NotConnectorErrors(logging.Filter):
    """Drops a record about a ``ConnectorError``: its ``exc_info``, an exception among its arguments
    ("A task failed with exception: %s"), or the one being handled (the executor formats the trace
    into its message, inside its ``except``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        found: list[object] = [record.exc_info[1] if record.exc_info else None, sys.exc_info()[1]]
        found += record.args if isinstance(record.args, tuple) else ()
        return not any(isinstance(exc, BaseException) and connector_error_line(exc) for exc in found)


def dead_letter_folder(sink: WriteToVectorDB) -> str | None:
    """Where the sink writes its dead letters (``--dead_letters``, or option ``dead_letter_path``)."""
    if sink.options.on_error != "dead_letter" or not sink.options.dead_letter_path:
        return None
    return str(sink.options.dead_letter_path)


def dead_letter_files(folder: str | None, prefix: str | None = None) -> list[str]:
    """The files in ``folder`` that hold letters (``prefix*.jsonl``, not empty): one run's, given its
    ``WriteToVectorDB.dead_letter_prefix``, else any run's."""
    if folder is None:
        return []
    pattern = FileSystems.join(folder, f"{prefix or DEAD_LETTER_PREFIX}*.jsonl")
    try:
        found = FileSystems.match([pattern])[0].metadata_list
    except Exception:  # BeamIOError: no such folder (yet)
        return []
    # only files with letters: an import's failed rows may all be staged rows it left out, which have none
    return sorted(m.path for m in found if m.size_in_bytes)


def check_dead_letter_folder(args: argparse.Namespace, folder: str | None) -> None:
    """Refuse a dead-letter folder that holds an earlier run's letters: each run writes files of its own
    (``WriteToVectorDB.dead_letter_prefix``), but ``DIR/dead-letters-*.jsonl``, which the job's hint
    names, would still read both runs' letters as one: fixed and fed back, the earlier run's rows would be
    written again. (The empty file of a run without letters names no row.)

    Raises:
        ConfigError: naming the folder, the files, and what to do.
    """
    if folder is None:
        return
    given = "--dead_letters" if args.dead_letters == folder else "option dead_letter_path"
    refuse_earlier_letters(given, folder, dead_letter_files(folder))


if __name__ == "__main__":
    sys.exit(main())
