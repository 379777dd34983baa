"""The main job, ``vectordb-load``: load vectors from files (or a generated sample) into a vector database with Spark.

    vectordb-load --sample 10000 --dim 384                          # into ./vectors.db (Milvus Lite)
    vectordb-load --input embeddings.parquet --uri pinecone+grpc://my-index.svc.pinecone.io \\
        --api-key-env PINECONE_API_KEY --namespace docs
    vectordb-load --input s3a://bucket/embeddings/ --uri milvus://milvus:19530/docs --master spark://host:7077
        # s3a://: hadoop-aws's jar on Spark's classpath (spark.jars, --packages); gs://, abfss://: their connectors
    vectordb-load --input docs.jsonl --text-column text --embed-url https://api.openai.com \\
        --embed-model text-embedding-3-small --embed-api-key-env OPENAI_API_KEY    # text in, vectors out

(``python -m vectordb.spark.load`` is the same command; under ``spark-submit``, give it this module's
file: ``spark-submit "$(python -c 'import vectordb.spark.load as m; print(m.__file__)')" …``.)

Input: Parquet, JSON (lines) or CSV files, globs or folders (the format follows the extension, a
folder's or glob's its first data file's, a folder in another store is Parquet, or ``--format``; one
format for every file: each file of a local folder or glob is checked by its name before Spark starts), with an id column and a vector column (``array<float>``; in CSV and JSON a vector, or a
multi-vector, may also be a JSON array in a string, and a row whose text is not one fails, saying so; in JSON
a row whose vector is nested otherwise than the others' fails alone, its column read as text; CSV as spreadsheets and Python's ``csv`` write it: a header row, ``""``
for a quote, quoted fields that span lines, so one task reads a whole file). ``--sample N --dim D`` generates N deterministic vectors instead
(the same N and D give the same vectors on every run, so re-running upserts the same rows).
With ``--text-column``, ``--embed-url`` and ``--embed-model`` the input may be text instead: rows
with text and no vector are embedded by that OpenAI-compatible endpoint in the write's tasks (the
driver probes it first, and the collection takes the model's dimension); a text it refuses is a
failed row with its reason. Every other column goes along as metadata. ``--uri`` defaults to the embedded database
``./vectors.db`` (Milvus Lite, started on demand), where the collection is created if missing.

The job prints its progress (tasks done per stage) and a final summary (rows written and failed,
rows/s, MB/s, retries, throttling, first failure reasons); it exits with 1 when rows failed. A
``ConnectorError`` (a bad option, a database or embedding endpoint that cannot be reached, a key
refused) is one line and exit status 2; ``--debug`` shows its trace.
"""

from __future__ import annotations

import argparse
import bz2
import fnmatch
import glob
import gzip
import io
import json
import os
import pkgutil
import re
import shutil
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from vectordb.connector.cli import (
    NOT_JSON_LINES,
    canonical_flags,
    embedded_note,
    flag_advice,
    keep_hint,
    local_files,
    missing_extra,
    not_kept,
    one_format,
    option_pairs,
    refuse_earlier_letters,
    refuse_json_array,
    refused_options,
    run_command,
    summary,
    unrecognized,
)

if TYPE_CHECKING:
    from vectordb.connector.errors import ConfigError

__all__ = ["main"]

PROG = "vectordb-load"
EXAMPLES = "examples:\n" + (__doc__ or "").split("\n\n")[1]  # the docstring's, shown by --help
DEFAULT_URI = "./vectors.db"
# how this command keeps failed rows from failing it (``run_command``'s ``policy_hint``)
POLICY_HINT = (
    "Give --dead-letter-path DIR, or --on-error report, to keep the rows that did land without failing."
)
# the last line of a job whose failed rows no dead letter keeps (on_error=report): the commit's file names
KEEP_HINT = keep_hint("--dead-letter-path DIR", "DIR/job-*-part-*.parquet")
FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}
# the codecs Spark's text reader picks by a file's extension (Hadoop's CompressionCodecFactory): those the
# standard library opens, and those whose files are left unchecked before Spark starts
CODECS: dict[str, tuple[str, Callable[[str], Any]]] = {
    ".gz": ("gzip", gzip.open),
    ".bz2": ("bzip2", bz2.open),
}
UNCHECKED_CODECS = frozenset({".deflate", ".lz4", ".snappy", ".zst"})
EMBED_ARGS = (  # argument -> writer option: the same name
    "text_column",
    "embed_url",
    "embed_model",
    "embed_api_key_env",
    "embed_batch_size",
    "embed_max_batch_chars",
    "embed_max_concurrency",
    "embed_dimensions",
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Load vectors from files (or a generated sample) into a vector database with Spark."
        " Flags take - or _ alike (--dead-letter-path, --dead_letter_path).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # --api-key KEY must not be read as --api-key-env KEY
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", nargs="+", help="Parquet/JSON/CSV files or folders")
    source.add_argument("--sample", type=int, metavar="N", help="generate N vectors instead of reading files")
    parser.add_argument("--dim", type=int, default=384, help="dimension of --sample vectors (default 384)")
    parser.add_argument(
        "--format",
        choices=sorted(set(FORMATS.values())),
        help="input format (default: by extension; a folder: by its files', a folder of another store: parquet)",
    )
    parser.add_argument(
        "--uri", default=DEFAULT_URI, help=f"target database (default {DEFAULT_URI}: Milvus Lite)"
    )
    parser.add_argument(
        "--collection",
        help="collection/table when the URI names none (not for Pinecone: the host names the index)",
    )
    parser.add_argument("--api-key-env", help="environment variable holding the API key")
    parser.add_argument("--namespace", help="namespace/partition for every row")
    parser.add_argument("--id-column", default="id")
    parser.add_argument("--vector-column", default="values")
    parser.add_argument(
        "--on-error",
        choices=("fail", "report", "dead_letter"),
        help="what failed rows do (default fail; dead_letter with --dead-letter-path)",
    )
    parser.add_argument("--dead-letter-path", help="folder for failed rows (implies --on-error dead_letter)")
    parser.add_argument("--no-create", action="store_true", help="do not create a missing collection")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="delete what the namespace (or, without --namespace, the collection) holds first",
    )
    embedding = parser.add_argument_group("embedding (text in, vectors out)")
    embedding.add_argument("--text-column", help="column of text to embed where a row has no vector")
    embedding.add_argument("--embed-url", help="OpenAI-compatible endpoint (/v1/embeddings is appended)")
    embedding.add_argument("--embed-model", help="embedding model, e.g. text-embedding-3-small")
    embedding.add_argument("--embed-api-key-env", help="environment variable holding its API key")
    embedding.add_argument("--embed-batch-size", type=int, help="texts per embedding request (default 64)")
    embedding.add_argument(
        "--embed-max-batch-chars", type=int, help="characters of text per embedding request (default 200000)"
    )
    embedding.add_argument("--embed-max-concurrency", type=int, help="embedding requests in flight per task")
    embedding.add_argument("--embed-dimensions", type=int, help="ask the model for shorter vectors")
    parser.add_argument("--partitions", type=int, help="Spark partitions to write with (default: as read)")
    parser.add_argument("--master", default=None, help="Spark master (default: local[*], or spark-submit's)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other writer option (repeatable)",
    )
    parser.add_argument("--debug", action="store_true", help="show the full trace of an error")
    args, rest = parser.parse_known_args(canonical_flags(sys.argv[1:] if argv is None else argv, parser))
    ours = [flag for action in parser._actions for flag in action.option_strings]
    for name in (arg.split("=", 1)[0] for arg in rest if arg.startswith("--")):  # never a value: a key?
        advice = flag_advice(name, ours)
        if advice is not None:
            parser.error(advice)
    if rest:
        parser.error(unrecognized(rest))
    refused = refused_options(args.option, ours)  # a key given as --option api_key=… among them
    if refused is not None:
        parser.error(refused)
    if args.sample is not None and (args.sample < 1 or args.dim < 1):
        parser.error("--sample and --dim must be positive")
    embedding_given = [name for name in EMBED_ARGS if getattr(args, name) is not None]
    if embedding_given and not (args.text_column and args.embed_url and args.embed_model):
        parser.error("embedding needs --text-column, --embed-url and --embed-model together")
    if embedding_given and args.sample is not None:
        parser.error("--sample generates vectors: embedding takes --input files with a text column")
    given = {item.partition("=")[0].strip().lower() for item in args.option}  # --option keys, not values
    if args.dead_letter_path and args.on_error not in (None, "dead_letter"):  # the folder would stay empty
        parser.error("--dead-letter-path is written only with --on-error dead_letter")
    if args.on_error is None:  # as vectordb-beam's --dead_letters: the folder says what failed rows do
        args.on_error = "dead_letter" if args.dead_letter_path else "fail"
    if args.on_error == "dead_letter" and not (args.dead_letter_path or "dead_letter_path" in given):
        parser.error("--on-error dead_letter writes failed rows to files: give --dead-letter-path DIR")
    return args


NEEDS_JAVA = f"{PROG} runs Spark, which needs Java 17 or later (e.g. apt-get install openjdk-17-jre-headless)"


def check_environment() -> None:
    """Fail early, with the command that fixes it, when something the job needs is missing."""
    line = missing_extra(PROG)  # what the console script checks, for python -m vectordb.spark.load
    if line is not None:
        print(line, file=sys.stderr, flush=True)
        sys.exit(2)
    java_home = os.environ.get("JAVA_HOME")
    if java_home:  # Spark starts $JAVA_HOME/bin/java, whatever PATH holds
        java = os.path.join(java_home, "bin", "java")
        if not (os.path.isfile(java) and os.access(java, os.X_OK)):
            no_java(f"JAVA_HOME={java_home} has no bin/java: set it to a Java 17+ installation, or unset it")
    elif not shutil.which("java"):
        no_java()


def no_java(why: str = "") -> None:
    """The one line that says Java is missing (and ``why``), and exit status 2."""
    print(NEEDS_JAVA + (f"; {why}" if why else ""), file=sys.stderr, flush=True)
    sys.exit(2)


def check_before_spark(args: argparse.Namespace) -> None:
    """What needs no Spark, checked before it starts (40 s or more on a busy machine): the embedded
    default's Milvus Lite installed, the format of ``--input`` known and one for all of its files (a
    local folder's and glob's each, as Spark lists them: ``local_files``), its local paths matching
    files, and no local JSON file a JSON array (``refuse_json_array``, on its text decompressed as Spark
    reads it: ``open_as_spark_reads``). A ``file:`` URI is a local path (``local_path``); an input in
    another store is taken by its name alone.

    Raises:
        MissingExtra, ConfigError.
    """
    from vectordb.connector.cli import check_embedded_default, refuse_target_as_input
    from vectordb.connector.errors import ConfigError
    from vectordb.connector.keys import without_password

    check_embedded_default(args.uri)  # the driver starts the server
    check_dead_letter_folder(args)
    if args.sample is not None:
        return
    for path in args.input:
        refuse_target_as_input(path)
    first = args.input[0]
    fmt = args.format or input_format(first)
    if fmt is None:
        raise ConfigError(f"cannot tell the format of {first}: give --format parquet|json|csv")
    # Spark reads every input in one format: a Parquet file read as JSON dies in a task, naming neither,
    # or its rows fail as garbage ('_corrupt_record')
    inputs = [
        (path, [path] if local is None else local_files(local)) for path, local in local_paths(args.input)
    ]
    if args.format is not None or local_path(first) is not None:  # else its name says it, or it is Parquet
        one_format(inputs, stated_format, args.format, flag="--format")  # the first file's: named
    else:
        one_format(inputs, stated_format, fmt, flag="--format", set_by=repr(without_password(first)))
    missing = [path for path, local in local_paths(args.input) if local is not None and not glob.glob(local)]
    if missing:  # Spark's own refusal is a page of trace
        raise ConfigError(f"--input: nothing matches {', '.join(map(repr, missing))}")
    if fmt == "json":  # every file of the inputs is read as JSON: one format (one_format)
        for given, files in inputs:
            if local_path(given) is None:  # another store's: not opened here
                continue
            for path in files:
                with open_as_spark_reads(path) as stream:  # decompressed, as Spark reads it
                    refuse_json_array(path, stream)


def local_path(path: str) -> str | None:
    """The local path an ``--input`` names, ``None`` for one in another store: Spark reads ``file:///x``
    and ``file:/x`` as ``/x``, so they are listed and checked as ``/x`` is (``file://host/x`` is not here)."""
    if path.startswith("file://"):
        rest = path.removeprefix("file://")
        return rest if rest.startswith("/") else None
    if path.startswith("file:"):
        return path.removeprefix("file:")
    return None if "://" in path else path


def local_paths(paths: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each ``--input`` as given and its ``local_path``."""
    return [(path, local_path(path)) for path in paths]


def open_as_spark_reads(path: str) -> IO[bytes]:
    """A local file opened as Spark's text reader reads it: decompressed by its extension's codec
    (``.gz``, ``.bz2``), or empty for a codec the standard library lacks (``.zst``), whose compressed
    bytes say nothing of its first line.

    Raises:
        ConfigError: naming the file, when it is not what its extension says (Spark's task fails on it).
    """
    from vectordb.connector.errors import ConfigError
    from vectordb.connector.options import without_password

    suffix = Path(path).suffix.lower()
    if suffix in UNCHECKED_CODECS:
        return io.BytesIO()
    if suffix not in CODECS:
        return open(path, "rb")
    name, opener = CODECS[suffix]
    stream = opener(path)
    try:  # the check reads the first few KiB: a bad header or block fails here, not in refuse_json_array
        stream.peek(1)
    except (OSError, EOFError, zlib.error) as exc:
        stream.close()
        raise ConfigError(
            f"--input {without_password(path)!r}: not {name} data (its extension says it is): {exc}"
        ) from None
    return stream


def check_options(args: argparse.Namespace) -> None:
    """Parse the options the write will take, as the data source's writer does but without asking the
    target, before Spark starts (``load`` calls it first): a misspelt ``--option`` name, or a bad
    value, is one line at once, not after Spark's 40 s or more.

    Raises:
        ConfigError: naming the option at fault; MissingExtra: the backend's extra not installed.
    """
    from vectordb.connector.client import resolve_options
    from vectordb.spark.options import parse_spark_options, split_options

    connector, adapter = split_options(command_options(args, tempfile.gettempdir()))
    parse_spark_options(adapter)
    resolve_options(connector)


LETTER_FILES = "job-*-part-*.parquet"  # the names the commit gives a job's dead letters (spark/commit.py)


def check_dead_letter_folder(args: argparse.Namespace) -> None:
    """Refuse a dead-letter folder that holds an earlier job's letters: each job adds its own files beside
    them, so the folder read back (``rows_from_letters(spark.read.parquet(folder))``) held both runs'
    letters as one, and wrote the earlier run's rows again. Only the command refuses: the data source
    writes into the folder per job, as a streaming query's micro-batches do.

    Raises:
        ConfigError: naming the folder, the files, and what to do.
    """
    extra = extra_options(args)  # --option on_error=… and dead_letter_path=… win, as in writer_options
    folder = extra.get("dead_letter_path") or args.dead_letter_path
    if extra.get("on_error", args.on_error).strip() != "dead_letter" or not folder:
        return
    given = "option dead_letter_path" if "dead_letter_path" in extra else "--dead-letter-path"
    refuse_earlier_letters(given, folder, dead_letter_files(folder))


def dead_letter_files(folder: str) -> list[str]:
    """The dead-letter files (``LETTER_FILES``) at the top of ``folder``, a path or a filesystem URI as
    option ``dead_letter_path`` takes it; none where it cannot be listed here (the writer says why)."""
    import pyarrow.fs as pafs

    from vectordb.connector.staging import Folder

    filesystem, base = Folder.parse(folder, "dead_letter_path").filesystem()
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    except OSError:  # a store not reachable from here, or a path that is a file: the write refuses it
        return []
    return sorted(
        info.path
        for info in infos
        if info.type == pafs.FileType.File and fnmatch.fnmatchcase(info.base_name, LETTER_FILES)
    )


def java_exited(exc: BaseException) -> bool:
    """PySpark's error for a Java that exited before it answered (no Java there, or too old a one)."""
    condition = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    return callable(condition) and condition() == "JAVA_GATEWAY_EXITED"


def session(master: str | None) -> tuple[Any, bool]:
    """The active Spark session, or a new one (local, bound to loopback); and whether it is ours to stop."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors need the Python with the connector
    # the job prints its own progress: Spark's console bar would interleave with it
    builder = SparkSession.builder.appName(PROG).config("spark.ui.showConsoleProgress", "false")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this driver: its master stands
    if master or not submitted:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.master(master or "local[*]")
    return builder.getOrCreate(), True


def read_input(spark: Any, args: argparse.Namespace) -> Any:
    """The DataFrame to write: the sample, or the files, the vector column as an array or its JSON text."""
    from vectordb.connector.errors import ConfigError
    from vectordb.connector.options import without_password

    if args.sample is not None:
        return sample_frame(spark, args.sample, args.dim, args.partitions)
    fmt = args.format or input_format(args.input[0])  # known: check_before_spark
    check_file_systems(spark, args.input)
    reader = spark.read.format(fmt)
    if (
        fmt == "csv"
    ):  # as Python's csv module and spreadsheets write it: "" escapes a quote, fields span lines
        reader = reader.option("header", "true").option("escape", '"').option("multiLine", "true")
    df = load_files(reader, args.input)
    if fmt == "json" and df.columns == ["_corrupt_record"]:  # else "no column 'values'" blamed the flag
        shown = ", ".join(repr(without_password(path)) for path in args.input)
        raise ConfigError(f"--input {shown}: {NOT_JSON_LINES}")
    if args.text_column is not None:
        if args.text_column not in df.columns:
            raise ConfigError(
                f"no column {args.text_column!r} in the input (columns: {', '.join(df.columns)}); see --text-column"
            )
        if args.vector_column not in df.columns:  # text only: every vector comes from the model
            return partitioned(df, args)
    extra = extra_options(args)
    if named_vectors(extra):  # vector_columns/multi_vector_columns name them: the writer checks them
        vectors = vector_column_types(extra)
    elif args.vector_column not in df.columns:
        raise ConfigError(
            f"no column {args.vector_column!r} in the input (columns: {', '.join(df.columns)}); see --vector-column"
        )
    else:
        vectors = {args.vector_column: "array<float>"}
    if fmt == "json":
        df = vectors_as_text(reader, args.input, df, vectors)
    # CSV, or JSON with vectors as strings: a vector's text goes to the writer as it is, whose reader (the
    # embedding stage's too, with --text-column) fails a row whose text is not JSON numbers with that
    # reason; Spark's from_json read the first JSON value and dropped what followed, a vector stored cut
    # short, and made other text null, losing it (the row embedded from its text instead)
    return partitioned(df, args)


def partitioned(df: Any, args: argparse.Namespace) -> Any:
    """``df`` in ``--partitions`` partitions by its id (the ``id_from`` columns, else ``--id-column``): a
    round-robin split sent one id's rows to tasks that run in no order, so an upsert and then a delete of
    it (``op_column``) could end with the row stored. ``df`` as read without ``--partitions``."""
    if not args.partitions:
        return df
    id_from = extra_options(args).get("id_from")
    keys = [name.strip() for name in id_from.split(",")] if id_from else [args.id_column]
    present = [key for key in keys if key in df.columns]
    return df.repartition(args.partitions, *present) if present else df.repartition(args.partitions)


# Parquet types Spark does not read, as its refusal names them, and the way round each. Not Spark's
# spark.sql.legacy.parquet.nanosAsLong: it reads the instant as bigint nanoseconds, so id_from hashes a number
# and the metadata holds one, and vectordb-beam's rows of the same file are stored again under other ids
_PARQUET_ADVICE = (
    ("(UUID)", "write the UUIDs as strings or 16-byte binary"),
    ("NANOS", "write microsecond timestamps (timestamp[us])"),
)


# the Hadoop connector Spark needs on its classpath (spark.jars, --packages) for a store, by scheme
_CONNECTORS = {
    "gs": "the GCS connector's jar (gcs-connector, or hadoop-gcp)",
    "s3": "hadoop-aws's jar (and read it as s3a://)",
    "s3a": "hadoop-aws's jar",
    "abfs": "hadoop-azure's jar",
    "abfss": "hadoop-azure's jar",
    "wasb": "hadoop-azure's jar",
    "wasbs": "hadoop-azure's jar",
}


def input_scheme(path: str) -> str | None:
    """The scheme of an ``--input`` in another store (``gs``), or ``None`` for a local path."""
    scheme = path.partition("://")[0].lower() if "://" in path else "file"
    return None if scheme == "file" else scheme


def check_file_systems(spark: Any, paths: list[str]) -> None:
    """Refuse an input whose Hadoop file system Spark's JVM cannot load (a store whose connector jar is
    missing: ``gs://`` without the GCS connector) or cannot read from (``http(s)://``): Spark's own refusal
    is a page of Java trace, and its WARN line quotes the input with its password. A Spark Connect session
    has no JVM here: ``load_files`` translates the server's refusal.

    Raises:
        ConfigError: naming the input (without its password) and what is missing.
    """
    remote = [(path, scheme) for path in paths if (scheme := input_scheme(path)) is not None]
    for path, scheme in remote:
        if scheme in ("http", "https"):
            raise no_file_system(path, scheme, "")
    try:
        jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    except Exception:  # Spark Connect
        return
    for path, scheme in remote:
        try:
            jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, conf)
        except Exception as exc:  # Py4JJavaError: ClassNotFoundException, UnsupportedFileSystemException
            raise no_file_system(path, scheme, str(getattr(exc, "java_exception", exc))) from None


def no_file_system(path: str, scheme: str, reason: str) -> ConfigError:
    """The ``ConfigError`` for an input Spark has no usable file system for: ``reason`` is the JVM's, which
    names the class that did not load (``Class org.apache.hadoop.fs.gs.GoogleHadoopFileSystem not
    found``), if any."""
    from vectordb.connector.errors import ConfigError
    from vectordb.connector.keys import without_password

    shown = repr(without_password(path))
    if scheme in ("http", "https"):
        return ConfigError(
            f"--input {shown}: Spark reads no {scheme}:// input (Hadoop's HTTP file system cannot list or "
            "read it as files); download it, or give the URI of its store (abfss://, s3a://, gs://)"
        )
    missing = re.search(r"Class (\S+) not found", reason)
    if missing is None:
        return ConfigError(
            f"--input {shown}: Spark has no file system for {scheme}:// here; read local paths, or add the "
            "Hadoop connector of that store to Spark (s3a://, gs://, abfss://), or load it with vectordb-beam"
        )
    jar = _CONNECTORS.get(scheme, "the jar of that store's Hadoop connector")
    return ConfigError(
        f"--input {shown}: Spark has no file system for {scheme}:// here: its class {missing.group(1)} is not "
        f"on Spark's classpath; add {jar} to Spark (spark.jars, --packages), or load it with vectordb-beam"
    )


def load_files(reader: Any, paths: list[str]) -> Any:
    """``reader.load(paths)``; a path of a scheme Spark has no file system for, or a Parquet type Spark
    cannot read (pyarrow's ``arrow.uuid``, ``timestamp[ns]``), is a ``ConfigError`` naming the input
    and the way round (Spark's own refusal is a page of Java trace)."""
    from pyspark.errors import UnsupportedOperationException

    from vectordb.connector.errors import ConfigError
    from vectordb.connector.options import without_password

    try:
        return reader.load(paths)
    except Exception as exc:
        illegal = re.search(r"\[PARQUET_TYPE_ILLEGAL\] ([^\n]*?)(?:\. SQLSTATE|$)", str(exc), re.M)
        if illegal is not None:
            advice = [how for said, how in _PARQUET_ADVICE if said in illegal.group(1)]
            raise ConfigError(
                f"--input {', '.join(repr(without_password(path)) for path in paths)}: Spark cannot read "
                f"it: {illegal.group(1)}; {'; '.join([*advice, 'or load it with vectordb-beam'])}"
            ) from None
        found = re.search(r'No FileSystem for scheme "([^"]*)"', str(exc))
        if found is not None:
            scheme = found.group(1).lower()
            given = [path for path in paths if input_scheme(path) == scheme] or paths
            raise no_file_system(given[0], scheme, "") from None
        remote = [path for path in paths if input_scheme(path) is not None]
        # a store's connector missing (ClassNotFoundException), or a file system that cannot list (http's:
        # UnsupportedOperationException, whose message is empty)
        missing = re.search(r"ClassNotFoundException: (Class \S*FileSystem not found)", str(exc))
        if remote and (missing is not None or isinstance(exc, UnsupportedOperationException)):
            raise no_file_system(
                remote[0], input_scheme(remote[0]) or "", missing.group(1) if missing else ""
            ) from None
        raise


def vectors_as_text(reader: Any, paths: list[str], df: Any, vectors: dict[str, str]) -> Any:
    """``df``, JSON input, read again with each vector column whose inferred type is not its vector's
    (``vectors``: column -> ``array<float>`` or ``array<array<float>>``) as text: each row's JSON as the
    file holds it. Spark infers one type from every row, so one flat multi-vector among lists of lists,
    or one nested dense vector, made the whole column ``array<string>``, which the writer refused on the
    driver, naming no row, and nothing was stored; as text, the writer's reader fails that row alone,
    saying why."""
    from pyspark.sql.types import ArrayType, DataType, NumericType, StringType, StructField, StructType

    def fits(typ: DataType, depth: int) -> bool:
        for _ in range(depth):
            if not isinstance(typ, ArrayType):
                return False
            typ = typ.elementType
        return isinstance(typ, NumericType)

    depths = {"array<float>": 1, "array<array<float>>": 2}
    types = {field.name: field.dataType for field in df.schema.fields}
    wrong = {
        column
        for column, spark_type in vectors.items()
        if column in types
        and not isinstance(types[column], StringType)
        and not fits(types[column], depths[spark_type])
    }
    if not wrong:
        return df
    schema = StructType(
        [StructField(f.name, StringType(), True) if f.name in wrong else f for f in df.schema.fields]
    )
    return load_files(reader.schema(schema), paths)


def vector_column_types(extra: dict[str, str]) -> dict[str, str]:
    """Each column of ``--option vector_columns=…``/``multi_vector_columns=…``, and the Spark type its JSON
    text is read as (a CSV has only text)."""
    from vectordb.connector.options import name_map

    types = {}
    for option, spark_type in (
        ("vector_columns", "array<float>"),
        ("multi_vector_columns", "array<array<float>>"),
    ):
        if option in extra:
            types.update(dict.fromkeys(name_map(option, extra[option]).values(), spark_type))
    return types


def input_format(path: str) -> str | None:
    """The format of a local file's extension; of a local folder or glob, its first data file's as Spark
    lists them (``local_files``: part files, partition folders); of an input in another store, its
    extension's, else Parquet (``s3://bucket/embeddings/``). A ``file:`` URI is a local path (``local_path``)."""
    local = local_path(path)
    if local is None:
        return stated_format(path) or "parquet"
    path = local
    if os.path.isfile(path) or not glob.glob(path):  # a file, or a name that matches none (refused later)
        return stated_format(path)
    return next(filter(None, map(stated_format, local_files(path))), None)


def stated_format(path: str) -> str | None:
    """The format ``path``'s name says (a file's extension), else ``None``. A text format's may be followed
    by a codec's (``rows.json.gz``, as Spark writes it with option ``compression``): Spark decompresses."""
    name = Path(path.rstrip("/"))
    if name.suffix.lower() in CODECS.keys() | UNCHECKED_CODECS:
        name = name.with_suffix("")
        return fmt if (fmt := FORMATS.get(name.suffix.lower())) in ("json", "csv") else None
    return FORMATS.get(name.suffix.lower())


def sample_frame(spark: Any, n: int, dim: int, partitions: int | None) -> Any:
    """N rows of ``id``, ``values`` (dim floats in [-1, 1), from a hash of id and position), ``title``.

    Built by Spark expressions, not Python: the same id always gets the same vector, so a retried
    task or a second run upserts the very same rows.
    """
    df = spark.range(0, n, numPartitions=partitions or max(2, spark.sparkContext.defaultParallelism))
    values = f"transform(sequence(0, {dim - 1}), i -> cast((xxhash64(id, i) % 1000000) / 1000000.0 as float))"
    return df.selectExpr("cast(id as string) as id", f"{values} as values", "concat('sample ', id) as title")


def extra_options(args: argparse.Namespace) -> dict[str, str]:
    """``--option KEY=VALUE``s, keys lower-cased as Spark's are."""
    return {key.lower(): value for key, value in option_pairs(args.option).items()}


def named_vectors(extra: dict[str, str]) -> bool:
    """Rows carry several vectors (``--option vector_columns=…`` or ``multi_vector_columns=…``): no one
    vector column, and each name's dimension is the options' (``vector_dimensions``) or the target's."""
    return not {"vector_columns", "multi_vector_columns"}.isdisjoint(extra)


def writer_options(args: argparse.Namespace, df: Any, report_dir: str) -> dict[str, str]:
    """The write's options: the command's (``command_options``) and, where the job creates the
    collection with no dimension given, the input's (``common_dimension``) or the sample's, which
    ``args.dimension_from`` then names in the user's words (``run_command``)."""
    options = command_options(args, report_dir)
    extra = extra_options(args)
    if not args.no_create and not (
        args.embed_url is not None or named_vectors(extra) or "dimension" in extra
    ):
        # the dimension lets the driver create (or check) the collection before any task starts
        options["dimension"] = str(
            args.dim if args.sample is not None else common_dimension(df, args.vector_column)
        )
        # a mismatch names it in the user's words, not as an option they never set (run_command)
        sample = args.sample is not None
        args.dimension_from = (
            "the sample's vectors (--dim {n})" if sample else "the input's vectors (most of length {n})"
        )
    return options


def command_options(args: argparse.Namespace, report_dir: str) -> dict[str, str]:
    """The write's options the flags and ``--option`` give, read before Spark starts (no dimension
    learnt from the input: ``writer_options``)."""
    extra = extra_options(args)
    named = named_vectors(extra)
    options = {
        "uri": args.uri,
        "id_column": args.id_column,
        "on_error": args.on_error,
        "report_path": report_dir,
    }
    if not named:
        options["vector_column"] = args.vector_column
    for key, value in (
        ("collection", args.collection),
        ("api_key_env", args.api_key_env),
        ("namespace", args.namespace),
        ("dead_letter_path", args.dead_letter_path),
    ):
        if value:
            options[key] = value
    for name in EMBED_ARGS:
        if getattr(args, name) is not None:
            options[name] = str(getattr(args, name))
    if args.overwrite:
        options["allow_overwrite"] = "true"
    if not args.no_create:  # the dimension: the model's probe, vector_dimensions, the option or the input's
        options["create"] = "true"
    options.update(extra)
    return options


SAMPLED_VECTORS = 10_000  # the first vectors, whose most common length is the collection's


def common_dimension(df: Any, column: str) -> int:
    """The most common length among the input's first vectors (the rule of option ``dimension``): no
    single row decides it, so a first row of another length fails alone instead of every other row."""
    from pyspark.sql import functions as F

    from vectordb.connector.errors import ConfigError

    vectors = F.col(column)
    if dict(df.dtypes).get(column) == "string":  # JSON text (read_input): sized as Spark reads it
        vectors = F.from_json(vectors, "array<float>")
    sizes = df.select(F.size(vectors).alias("n")).where(vectors.isNotNull() & (F.col("n") > 0))
    row = sizes.limit(SAMPLED_VECTORS).groupBy("n").count().orderBy(F.desc("count"), "n").first()
    if row is None:
        raise ConfigError(f"the input has no vectors in column {column!r}")
    return int(row["n"])


class Progress:
    """Prints, every few seconds, how many tasks of the running stages are done."""

    def __init__(self, spark: Any, every_s: float = 5.0) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ingest-progress", daemon=True)
        self._started = time.monotonic()

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            stages = [self._tracker.getStageInfo(s) for s in self._tracker.getActiveStageIds()]
            done = ", ".join(
                f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks" for s in stages if s
            )
            if done:
                print(f"[{time.monotonic() - self._started:6.1f} s] {done}", flush=True)


def job_reports(report_path: str) -> dict[str, int]:
    """The job reports (``job-*.json``) in ``report_path`` (a folder or a filesystem URI, as the option
    takes it), with when each was written (ns): the command's own, or a folder the user named (``--option
    report_path=``), which may hold earlier jobs' too."""
    import pyarrow.fs as pafs

    from vectordb.connector.staging import Folder

    filesystem, base = Folder.parse(report_path, "report_path").filesystem()
    infos = filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    return {
        info.path: info.mtime_ns or 0
        for info in infos
        if info.base_name.startswith("job-") and info.base_name.endswith(".json")
    }


def summarize(report_path: str, before: dict[str, int], wall_s: float) -> tuple[str, int] | None:
    """The final summary from this job's report (the newest in ``report_path`` that is not in ``before``),
    and the number of failed rows; ``None`` if the job wrote none."""
    new = {path: at for path, at in job_reports(report_path).items() if path not in before}
    if not new:
        return None
    from vectordb.connector.staging import Folder

    filesystem, _ = Folder.parse(report_path, "report_path").filesystem()
    with filesystem.open_input_stream(max(new, key=new.__getitem__)) as stream:
        report = json.loads(stream.read())
    text = summary(
        report,
        target=report["target"],
        wall_s=wall_s,
        stage_s=report["elapsed_s"],
        tasks=len(report["tasks"]),
        reasons=[(reason, n) for reason, n in report["reasons"]],
        dead_letters=report["dead_letter_files"],
    )
    return text, int(report["failed"])


def main(argv: Sequence[str] | None = None) -> int:
    """The command: parse ``argv`` (default: the command line), load, return the exit status."""
    args = parse_args(argv)
    return run_command(
        PROG,
        lambda: load(args),
        debug=args.debug,
        policy_hint=POLICY_HINT,
        no_create=args.no_create,
        dimension_from=lambda: getattr(args, "dimension_from", None),  # set by writer_options
    )


def load(args: argparse.Namespace) -> int:
    """Run the load the arguments describe; 1 when rows failed. Raises ``ConnectorError``."""
    check_environment()
    from vectordb.connector.backends.registry import canonical_uri
    from vectordb.connector.options import uri_database, without_password
    from vectordb.spark import register

    args.uri = canonical_uri(args.uri)  # the embedded default's folder, resolved here, not on executors
    uri_database(args.uri)  # a URI that is neither SCHEME://… nor a path fails before Spark starts
    check_options(args)
    check_before_spark(args)
    try:
        spark, ours = session(args.master)
    except Exception as exc:
        if java_exited(exc):  # a JAVA_HOME or java that is not Java 17+: its own words went to stderr above
            no_java("Java exited before Spark could start (JAVA_GATEWAY_EXITED)")
        raise
    report_dir = tempfile.mkdtemp(prefix="vectordb-load-")
    try:
        if not any(m.name == "pyspark_vectordb" for m in pkgutil.iter_modules()):
            register(spark)  # where Spark's own lookup cannot see the install (a plain editable install)
        df = read_input(spark, args)
        options = writer_options(args, df, report_dir)
        what = f"a sample of {args.sample}" if args.sample else ", ".join(args.input)
        print(f"writing {what} to {without_password(args.uri)}", flush=True)
        report_path = options["report_path"]  # the command's own folder, unless --option names another
        before = job_reports(report_path)
        started = time.monotonic()
        error: Exception | None = None
        with Progress(spark):
            try:
                mode = "overwrite" if args.overwrite else "append"
                df.write.format("vectordb").options(**options).mode(mode).save()
            except Exception as exc:  # on_error=fail raises after the report is written: summarize it
                error = exc
        summarized = summarize(report_path, before, time.monotonic() - started)
        text, failed = summarized or ("no report: the job did not commit", 0)
        if error is not None and not failed:
            raise error
        print(text, flush=True)
        if summarized is None:  # a write that raised nothing and left no report: nothing says it landed
            return 1
        note = embedded_note(args.uri)
        if note:
            print(note, flush=True)
        if failed and options["on_error"] == "fail":  # the job failed for them (--option on_error counts too)
            print(f"{PROG}: rows failed, which fails the job. {POLICY_HINT}", file=sys.stderr, flush=True)
        elif failed and options["on_error"] != "dead_letter":  # report: counted, and kept nowhere
            print(not_kept(PROG, failed, KEEP_HINT), file=sys.stderr, flush=True)
        return 1 if failed else 0
    finally:
        shutil.rmtree(report_dir, ignore_errors=True)
        if ours:
            spark.stop()


if __name__ == "__main__":
    sys.exit(main())
