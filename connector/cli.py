"""What the command-line jobs share: how they end, on success and on error.

Both commands, ``vectordb-load`` (Spark, ``vectordb.spark.load``) and ``vectordb-beam`` (Beam,
``vectordb.beam.load``), close with the same summary (``summary``: rows written and failed, rows/s,
MB/s, requests, retries, throttling, the first failure reasons) and exit with 1 when rows failed.

A ``ConnectorError`` (a bad option, a target or endpoint that cannot be reached, a key refused) is
one line on stderr and exit status 2 (``run_command``); the full trace only with ``--debug``. Its advice
to set option ``create=true`` (a missing collection) names the command's ``--no-create`` flag instead
where that flag was given (else the user can set the option: ``--option create=true``). The
error may have been raised in another Python process: Spark's driver runs the data source's checks
in a Python worker and hands back that worker's error (the exception alone, or a traceback) as the
text of its own exception, so the error is also looked for in the text (``connector_error_line``).
Any other exception is a bug, and keeps its trace.

Both read ``--input`` as Spark lists it (``local_files``, ``folder_files``: a folder's files at any depth,
but for those Spark leaves out, ``left_out_by_spark``) and in one format (``one_format``): a file whose
name says another format is refused, naming it, before anything is read; Spark would read it in the
first one's format and fail its rows as garbage, or the job would skip it. A JSON file that is a JSON
array (its first non-blank character ``[``) is refused too, naming it (``refuse_json_array``): read a line
at a time, its objects written one a line were written in part.

The console scripts start here (``load_command``, ``beam_command``), so that a command whose extra
is not installed says so in one line, with the ``pip install`` that fixes it, and exits with 2:
importing ``vectordb.beam`` without Beam would end in an import traceback before any of the job's
code runs. Nothing here imports pyspark or apache_beam.
"""

from __future__ import annotations

import argparse
import codecs
import difflib
import glob
import importlib.util
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import import_module
from typing import IO

from .errors import ConfigError, ConnectorError, DimensionMismatch, WriteFailed
from .keys import without_password
from .policy import HINT

__all__ = [
    "JSON_ARRAY",
    "NOT_JSON_LINES",
    "beam_command",
    "canonical_flags",
    "connector_error_line",
    "embedded_note",
    "exit_if_run_without_extra",
    "flag_advice",
    "folder_files",
    "keep_hint",
    "key_advice",
    "left_out_by_spark",
    "load_command",
    "local_files",
    "missing_extra",
    "not_kept",
    "one_format",
    "option_pairs",
    "quiet_beam_import_warning",
    "refuse_earlier_letters",
    "refuse_json_array",
    "refuse_target_as_input",
    "refused_options",
    "run_command",
    "running_as",
    "spark_reads",
    "summary",
    "unrecognized",
]

# what both commands say of a JSON input that is not JSON Lines, after why
_JSON_LINES_ADVICE = "a JSON array or a pretty-printed file is not read, write one object a line"
# a JSON input of no JSON object a line (a JSON array, a pretty-printed file), in both commands' words
NOT_JSON_LINES = (
    f"not JSON Lines (one JSON object a line): its first lines hold no JSON object; {_JSON_LINES_ADVICE}"
)
# a JSON input that starts with '[' (``refuse_json_array``), however its objects are laid out
JSON_ARRAY = (
    f"not JSON Lines (one JSON object a line): it starts with '[', a JSON array; {_JSON_LINES_ADVICE}"
)
# each command: the module whose main() it runs, the extra it needs, the modules that extra installs
COMMANDS = {
    "vectordb-load": ("vectordb.spark.load", "spark", ("pyspark",)),
    "vectordb-beam": ("vectordb.beam.load", "beam", ("apache_beam",)),
}
# the commands whose module checks its extra itself, after its flags: ``--help`` needs no Spark
CHECKED_BY_THE_JOB = {"vectordb-load"}

# each command's flag against creating a missing collection, which it creates otherwise: where the API's
# advice says "set create=true", the command's way is to drop this flag
NO_CREATE_FLAGS = {"vectordb-load": "--no-create", "vectordb-beam": "--no_create"}
# the backends' advice for a missing target (collection, table, tenant, pgvector extension), in the
# command's words
_CREATE_ADVICE = (
    ("set create=true to create it", "run without {flag} to create it"),
    ("(option create=true makes it)", "(run without {flag} to make it)"),
    ("or set create=true", "or run without {flag}"),
)

# the last line of a Python traceback, as Spark (or Beam) passes it on: "vectordb.connector.errors.ConnectError: …",
# or the exception alone after Spark's own words, when the worker sent no frames (``PYTHON_DATA_SOURCE_ERROR``)
_RAISED = re.compile(r"(?:^|\s)(vectordb\.[\w.]+)\.(\w+): (.*?)\s*$", re.M)


def load_command() -> int:
    """``vectordb-load``, the console script: the Spark job, or one line naming the extra it needs."""
    return _installed_command("vectordb-load")


def beam_command() -> int:
    """``vectordb-beam``, the console script: the Beam job, or one line naming the extra it needs."""
    return _installed_command("vectordb-beam")


def missing_extra(prog: str) -> str | None:
    """The line ``prog`` prints when its extra is not installed (looked up, not imported), else ``None``."""
    _, extra, modules = COMMANDS[prog]
    missing = [module for module in modules if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    return (
        f"{prog}: {' and '.join(missing)} not installed, which the [{extra}] extra brings: "
        f"pip install 'vectordb-connector[{extra}]'"
    )


def exit_if_run_without_extra(prog: str) -> None:
    """Under ``python -m`` of ``prog``'s module with its extra missing: the line ``prog`` prints, exit 2.

    Python imports a module's package before the module itself, so ``python -m vectordb.beam.load``
    without Beam stops in ``vectordb.beam``'s import, before the job's code: the package calls this
    first. Only while ``runpy`` looks that module up (``sys.argv[0]`` is ``"-m"`` then) and the command
    line names it; any other import of the package is left to its ``MissingExtra``."""
    if not running_as(prog):
        return
    line = missing_extra(prog)
    if line is not None:
        print(line, file=sys.stderr, flush=True)
        sys.exit(2)


def running_as(prog: str) -> bool:
    """Whether ``python -m`` is looking up ``prog``'s module now (importing its package first)."""
    return sys.argv[:1] == ["-m"] and _module_run(sys.orig_argv) == COMMANDS[prog][0]


def _module_run(argv: Sequence[str]) -> str | None:
    """The module of ``python [options] -m MODULE …``, from Python's own options only, else ``None``."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-m"):
            return arg[2:] or (argv[i + 1] if i + 1 < len(argv) else None)
        if arg in ("-X", "-W", "--check-hash-based-pycs"):  # an option and its value
            i += 2
            continue
        if arg in ("-c", "-") or not arg.startswith("-"):  # a command, stdin or a script
            return None
        i += 1
    return None


def _installed_command(prog: str) -> int:
    line = None if prog in CHECKED_BY_THE_JOB else missing_extra(prog)
    if line is not None:
        print(line, file=sys.stderr, flush=True)
        return 2
    if prog == "vectordb-beam":
        quiet_beam_import_warning()
    main: Callable[[], int] = import_module(COMMANDS[prog][0]).main
    return main()


def quiet_beam_import_warning() -> None:
    """Drop Beam's "apitools not found" warning, which ``import apache_beam`` logs without its [gcp]
    extra: the job reads no BigQuery, and the line reads like a fault as the command's first output."""
    logging.getLogger().addFilter(_NotApitools())


class _NotApitools(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("apitools not found")


def refuse_target_as_input(path: str) -> None:
    """Refuse an ``--input`` that is a database URI (the target given in the wrong place): read as a
    path, Spark answers with a page of Java trace and Beam with "nothing matches".

    Raises:
        ConfigError: naming the input (its password blanked) and ``--uri``.
    """
    from .backends.registry import backends

    scheme = path.partition("://")[0].split("+")[0].lower() if "://" in path else ""
    if scheme in backends():
        raise ConfigError(
            f"--input {without_password(path)!r} is a {scheme} URI, not files to read: the target goes in --uri"
        )


def unrecognized(items: Sequence[str]) -> str:
    """The parser's error for arguments a command does not take, quoting only flags and URIs (passwords
    blanked): a bare word may be a key typed after ``--option api_key`` with a space for its ``=``."""

    # a flag's value after its '=' may be a key too (--api-key=sk-…): only its name is shown
    shown = [
        repr(item.split("=", 1)[0] + "=***" if "=" in item else item)
        if item.startswith("-")
        else repr(without_password(item))
        for item in items
        if item.startswith("-") or "://" in item
    ]
    hidden = len(items) - len(shown)
    if hidden:
        shown.append(f"{hidden} value{'s' if hidden > 1 else ''} not shown (it may be a key)")
    if any("://" in item for item in items):
        hint = "the target goes in --uri"
    elif hidden:
        hint = "flags start with --, and --option takes KEY=VALUE as one word"
    else:
        hint = ""
    return f"unrecognized arguments: {', '.join(shown)}" + (f" ({hint})" if hint else "")


# a command's flags that take a key's place: the first a command has is named, else the option
SECRET_FLAGS = {
    "api_key": (("--api-key-env", "NAME"), ("--api_key_secret", "SPEC")),
    "embed_api_key": (("--embed-api-key-env", "NAME"), ("--embed_api_key_secret", "SPEC")),
}


def key_advice(option: str, flags: Sequence[str]) -> str:
    """What a command with ``flags`` says of ``option``, a credential (one the connector keeps secret:
    ``options._SECRET_FIELDS``) typed in its command line, as a flag or as ``--option``: the flags (or
    the ``_env`` option) that take its place. A password or a token is option ``api_key``'s to hold."""
    held = option if option in SECRET_FLAGS else "api_key"
    (env, _), _ = SECRET_FLAGS[held]
    ways = [] if env in flags else [f"--option {held}_env=NAME"]
    ways += [f"{flag} {value}" for flag, value in SECRET_FLAGS[held] if flag in flags]
    holds = "" if held == option else f" (option {held} holds a {option})"
    return (
        f"a key is not given in the command line (ps and the shell's history show it){holds}: give "
        f"{' or '.join(ways)}, NAME the environment variable holding it"
    )


def flag_advice(name: str, flags: Sequence[str]) -> str | None:
    """The parser's error for ``name``, a ``--flag`` the command does not take, where a guess helps: a
    connector option's name goes in ``--option NAME=VALUE``; a misspelling of one of the command's
    ``flags`` (``-`` and ``_`` alike), or of a connector option, is suggested; else ``None``. A flag's own
    spelling comes first: ``vectordb-load`` has ``--namespace``, ``vectordb-beam`` only the option."""
    from .options import _SECRET_FIELDS, BackendOptions

    options = BackendOptions.__struct_fields__
    option = name.removeprefix("--").replace("-", "_").lower()
    if option in _SECRET_FIELDS:  # a key in a command line shows in ps and the shell's history
        return f"unrecognized argument {name}: {key_advice(option, flags)}"
    if option in options:  # vectordb-load's --id-column given to vectordb-beam, --batch-size to either
        return f"unrecognized argument {name}: a connector option goes in --option {option}=VALUE"

    def nearness(known: str) -> float:
        return difflib.SequenceMatcher(None, option, known.removeprefix("--").replace("-", "_")).ratio()

    flag = max((flag for flag in flags if flag.startswith("--")), key=nearness, default=None)
    near = max(options, key=nearness)
    # --max-concurency: the option, though --embed-max-concurrency is near too; --namespce in
    # vectordb-beam: the option, not the nearest of its flags (--sample)
    if nearness(near) >= 0.8 and (flag is None or nearness(near) > nearness(flag)):
        return f"unrecognized argument {name}: did you mean --option {near}=VALUE?"
    if flag is not None and nearness(flag) >= 0.6:
        return f"unrecognized argument {name}: did you mean {flag}?"
    return None


def option_pairs(items: Sequence[str], flags: Sequence[str] = ()) -> dict[str, str]:
    """``--option KEY=VALUE``s as a dict (the key trimmed); an item with no ``=`` or no key is a
    ``ConfigError`` that does not quote it: a key pasted there (``api_key:sk-…``) would be shown.

    A credential (``api_key``, ``embed_api_key``, ``password``, ``token``: the options the connector keeps
    secret) is refused, as the command refuses ``--api-key``: a key in a command line shows in ps and the
    shell's history for the whole run. The error names the command's ``flags`` that take its place
    (``key_advice``), and never the value."""
    from .options import _SECRET_FIELDS, BackendOptions

    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if key.strip().lower() in _SECRET_FIELDS:  # Spark lower-cases option keys: API_KEY is api_key
            raise ConfigError(f"--option {key.strip()}: {key_advice(key.strip().lower(), flags)}")
        if not sep and item.strip() in BackendOptions.__struct_fields__:  # an option's name: no secret
            raise ConfigError(f"--option {item.strip()} has no value: give --option {item.strip()}=VALUE")
        if not sep or not key.strip():
            raise ConfigError(
                f"--option takes KEY=VALUE; one of {len(items)} has no KEY= (not shown: it may be a key)"
            )
        options[key.strip()] = value
    return options


def refused_options(items: Sequence[str], flags: Sequence[str]) -> str | None:
    """The parser's error for ``--option``s that ``option_pairs`` refuses (a key among them, an item with
    no ``KEY=``), else ``None``: both commands check them with their flags, before anything runs."""
    try:
        option_pairs(items, flags)
    except ConfigError as exc:
        return str(exc)
    return None


def refuse_json_array(path: str, stream: IO[bytes]) -> None:
    """Refuse a JSON input file whose first non-blank character is ``[`` (``stream``, opened by the
    command, read up to it): a JSON array, whatever its layout. Written one object a line, each line
    read alone parsed but for ``[`` and ``]``, so ``vectordb-load`` wrote the objects and failed those
    two lines as garbage, and ``vectordb-beam`` wrote the last object only: both commands run this on
    each file before Spark or the pipeline starts.

    Raises:
        ConfigError: naming the file (its password blanked), and what to write instead.
    """
    first = True
    while chunk := stream.read(4096):
        if first:  # a UTF-8 byte order mark, as some editors write it
            chunk, first = chunk.removeprefix(codecs.BOM_UTF8), False
        text = chunk.lstrip()
        if text:
            if text.startswith(b"["):
                raise ConfigError(f"--input {without_password(path)!r}: {JSON_ARRAY}")
            return


def left_out_by_spark(name: str) -> bool:
    """Spark's rule for a file's or a folder's name it does not read (``shouldFilterOutPathName``):
    ``_x`` but not a partition folder (``_x=1``), ``.x``, a file being copied (``x._COPYING_``)."""
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


def spark_reads(folder: str, path: str) -> bool:
    """Whether Spark reads ``path``, a file found in ``folder``: no folder below ``folder`` nor the file's
    name is one it leaves out (a failed job's ``_temporary/``, ``.crc`` files)."""
    below = path.removeprefix(folder.rstrip("/") + "/").strip("/")
    return not any(map(left_out_by_spark, below.split("/")))


def folder_files(folder: str) -> list[str]:
    """A local folder's files as Spark lists them, sorted: at any depth (partition folders), but for
    those ``spark_reads`` says it leaves out. Every other file is data, whatever its name says."""
    found = []
    for root, subfolders, files in os.walk(folder):
        subfolders[:] = [name for name in subfolders if not left_out_by_spark(name)]
        found += [os.path.join(root, name) for name in files if not left_out_by_spark(name)]
    return sorted(found)


def local_files(path: str) -> list[str]:
    """A local ``--input``'s data files: the file; a folder's (``folder_files``); a glob's matches
    (Spark's glob: ``*`` within a name), but for the names Spark leaves out, each folder among them
    listed as a folder is. None for a path that matches nothing."""
    found: list[str] = []
    for match in sorted(glob.glob(path)):
        if os.path.isdir(match):
            found += folder_files(match)
        elif match == path or not left_out_by_spark(os.path.basename(match)):
            found.append(match)
    return found


def one_format(
    inputs: Sequence[tuple[str, Sequence[str]]],
    format_of: Callable[[str], str | None],
    fmt: str | None,
    *,
    flag: str,
    set_by: str | None = None,
) -> str | None:
    """The one format a job reads its inputs' files in: ``fmt``, else the first file's whose name says
    one. A file whose name says none is read in it, as Spark reads it.

    Args:
        inputs: each ``--input`` and its data files, in the order given.
        format_of: the format a file's name says, or ``None``.
        fmt: the format the command's ``flag`` gave, or ``set_by`` (an input's name) says.
        flag: the command's flag for the format (``--format``).
        set_by: what says ``fmt`` when the flag did not (``repr`` of the first input).

    Raises:
        ConfigError: a file whose name says another format, naming it, its input and what says ``fmt``
            (the flag, or a file): Spark reads a folder or a glob in one format, so a Parquet file among
            JSON Lines ones failed its rows as garbage (or, in Beam, was skipped).
    """
    for given, files in inputs:
        for path in files:
            found = format_of(path)
            if found is None or found == fmt:
                continue
            if fmt is None:
                fmt, set_by = found, repr(without_password(path))
                continue
            said = f"{set_by} is" if set_by is not None else f"{flag} is"
            why = f"a job reads one format ({flag})" if set_by is not None else "a job reads one format"
            where = repr(without_password(given))
            where += "" if path == given else f": {without_password(path)!r}"
            raise ConfigError(
                f"--input {where} is {found}, but {said} {fmt}: {why}, so load each format in a run of its own"
            )
    return fmt


def canonical_flags(argv: Sequence[str], parser: argparse.ArgumentParser) -> list[str]:
    """``argv`` with the parser's own flags spelt as it spells them: ``-`` and ``_`` are one.

    ``vectordb-load`` spells its flags ``--dead-letter-path``, ``vectordb-beam`` ``--dead_letters``
    (as Beam spells its pipeline options): a user of both types either in either. Other flags (Beam's)
    and every value are left as they are."""
    flags = {
        flag.replace("_", "-"): flag
        for action in parser._actions
        for flag in action.option_strings
        if flag.startswith("--")
    }
    spelt: list[str] = []
    for arg in argv:
        if arg == "--" or not arg.startswith("--"):
            spelt.append(arg)
            continue
        name, equals, value = arg.partition("=")
        spelt.append(flags.get(name.replace("_", "-"), name) + equals + value)
    return spelt


def run_command(
    prog: str,
    job: Callable[[], int],
    *,
    debug: bool = False,
    policy_hint: str | None = None,
    no_create: bool = False,
    dimension_from: Callable[[], str | None] | None = None,
) -> int:
    """Run ``job`` and return its exit status; a ``ConnectorError`` becomes one line on stderr.

    ``policy_hint`` is how the command keeps failed rows from failing it (its flags): it replaces the
    API's ``on_error`` words in a ``WriteFailed``'s line. ``no_create``: the command's ``--no-create``
    flag was given, so a ``ConfigError``'s advice to set ``create=true`` says to drop the flag; without
    it the advice stands (``create`` was left unset, or given as ``--option create=false``).
    ``dimension_from``: where the command took the dimension it set as option ``dimension`` (``"--dim
    {n}"``, ``"the input's vectors (most of length {n})"``), once the job knows, else ``None``: a
    ``DimensionMismatch``'s line names that, not an option the user never set.

    Returns:
        ``job()``'s status; 2 for a ``ConnectorError``, 1 for ``WriteFailed`` (rows failed, as a
        job that finishes with failed rows does), 130 for an interrupt (Ctrl-C), said in one line.
    """
    beam_log = logging.getLogger("apache_beam.runners.common")
    muted = _NotInterrupt()
    if not debug:  # Beam logs a Ctrl-C in a DoFn as an ERROR with its trace before re-raising it
        beam_log.addFilter(muted)
    try:
        return job()
    except KeyboardInterrupt:  # one line, not the traces of every thread and of Spark's gateway
        if debug:
            raise
        return _interrupted(prog)
    except Exception as exc:
        if not debug and _is_interrupt(exc):  # Beam's runner re-raises it as a RuntimeError
            return _interrupted(prog)
        found = _connector_error(exc)
        if found is None:
            raise
        kind, line = found
        if policy_hint is not None and issubclass(kind, WriteFailed):
            line = line.replace(HINT, policy_hint)
        if no_create and issubclass(kind, ConfigError):
            line = _command_advice(prog, line)
        if issubclass(kind, DimensionMismatch):  # the commands' usual second run: the sample's collection
            line = _dimension_given(line, dimension_from() if dimension_from is not None else None)
            line += "; write to another collection (--collection NAME) or database (--uri)"
        if debug:
            traceback.print_exception(exc)
        hint = "" if debug else " (--debug shows the trace)"
        print(f"{prog}: {line}{hint}", file=sys.stderr, flush=True)
        return 1 if issubclass(kind, WriteFailed) else 2
    finally:
        beam_log.removeFilter(muted)


class _NotInterrupt(logging.Filter):
    """Drops a record that carries a ``KeyboardInterrupt``: the command says "interrupted" in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt))


def _command_advice(prog: str, line: str) -> str:
    """``line`` with the API's advice to set ``create=true`` said as ``prog``'s flag: a user of the command
    who gave ``--no-create`` has no option ``create`` to set."""
    flag = NO_CREATE_FLAGS.get(prog)
    if flag is None:
        return line
    for api, command in _CREATE_ADVICE:
        line = line.replace(api, command.format(flag=flag))
    return line


def _dimension_given(line: str, given: str | None) -> str:
    """``line`` naming ``given`` (a template of ``{n}``, the dimension) where the client's words name option
    ``dimension``, which the command set from ``given``: the user set no such option."""
    if given is None:
        return line
    return re.sub(r"option dimension \((\d+)\)", lambda found: given.format(n=found[1]), line, count=1)


def _interrupted(prog: str) -> int:
    print(
        f"{prog}: interrupted; rows already written stay written (run it again: upserts by id)",
        file=sys.stderr,
        flush=True,
    )
    return 130


def _is_interrupt(exc: BaseException) -> bool:
    """A Ctrl-C that a runner wrapped: a ``KeyboardInterrupt`` among the causes, or Beam's bundle error,
    ``RuntimeError("KeyboardInterrupt [while running 'Write/…']")``, which holds only its text."""
    return any(
        isinstance(error, KeyboardInterrupt) or str(error).startswith("KeyboardInterrupt")
        for error in _chain(exc, context=True)
    )


def _chain(exc: BaseException, *, context: bool) -> Iterator[BaseException]:
    """``exc`` and the errors behind it, each once: its ``__cause__``s, or with ``context`` (where no
    cause is set) its ``__context__``s too."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (current.__context__ if context else None)


def connector_error_line(exc: BaseException) -> str | None:
    """``"ConfigError: message"`` for a ``ConnectorError``, in ``exc``, its causes, or its text; else ``None``."""
    found = _connector_error(exc)
    return None if found is None else found[1]


def _connector_error(exc: BaseException) -> tuple[type[ConnectorError], str] | None:
    # ``raise … from`` only: an exception raised while handling a ConnectorError is another error
    for error in _chain(exc, context=False):
        if isinstance(error, ConnectorError):
            return type(error), f"{type(error).__name__}: {' '.join(str(error).split())}"
    # raised in another process (a Spark Python worker): only its traceback's text came back
    for module, name, message in reversed(_RAISED.findall(str(exc))):
        kind = _connector_error_class(module, name)
        if kind is not None:
            return kind, f"{name}: {message}"
    return None


def _connector_error_class(module: str, name: str) -> type[ConnectorError] | None:
    try:
        found = getattr(import_module(module), name, None)
    except ImportError:
        return None
    return found if isinstance(found, type) and issubclass(found, ConnectorError) else None


SHOWN_REASONS = 5  # failure reasons a summary shows, each on a line of its own


def summary(
    counts: Mapping[str, int],
    *,
    target: str,
    wall_s: float,
    stage_s: float | None = None,
    tasks: int | None = None,
    reasons: Sequence[tuple[str, int]] = (),
    dead_letters: Sequence[str] = (),
) -> str:
    """The closing summary of a job, a few lines.

    Args:
        counts: ``written``, ``failed``, ``requests``, ``retries``, ``throttled``, ``bytes_sent``, and
            the embedding stage's ``embedded``, ``embed_requests``, ``embed_retries``, ``embed_throttled``
            (``WriteReport``'s names, which Spark's job report keeps; a missing one counts 0).
        target: what was written to, as the backend describes it.
        wall_s: the job's time from the start of the write.
        stage_s: the write stage alone, where the engine measures it (Spark).
        tasks: the number of tasks that reported (Spark).
        reasons: ``(reason, rows)`` of the failures, most frequent first; the first five are shown, and
            a line says how many rows and reasons are left out.
        dead_letters: the files failed rows were written to.
    """
    n = {name: int(counts.get(name, 0)) for name in ("written", "failed", "requests", "retries", "throttled")}
    bytes_sent = int(counts.get("bytes_sent", 0))
    wall_s = max(wall_s, 1e-9)
    speed = f"speed:    {n['written'] / wall_s:,.0f} rows/s, {bytes_sent / wall_s / 1e6:,.1f} MB/s over {wall_s:.1f} s"
    if stage_s is not None:
        speed += f" (the write stage alone: {stage_s:.1f} s)"
    traffic = (
        f"traffic:  {n['requests']:,} requests, {n['retries']:,} retries, {n['throttled']:,} throttled, "
        f"{bytes_sent / 1e6:,.1f} MB"
    )
    if tasks is not None:
        traffic += f", {tasks} tasks"
    lines = [
        f"target:   {target}",
        f"written:  {n['written']:,} of {n['written'] + n['failed']:,} rows ({n['failed']:,} failed)",
        speed,
        traffic,
    ]
    embed = {
        name: int(counts.get(name, 0))
        for name in ("embedded", "embed_requests", "embed_retries", "embed_throttled")
    }
    if embed["embed_requests"]:  # the embedding endpoint's own traffic: its throttling slows a load too
        lines.append(
            f"embedded: {embed['embedded']:,} rows in {embed['embed_requests']:,} requests, "
            f"{embed['embed_retries']:,} retries, {embed['embed_throttled']:,} throttled"
        )
    lines += [f"failed:   {rows:,} x {reason}" for reason, rows in reasons[:SHOWN_REASONS]]
    if len(reasons) > SHOWN_REASONS:  # said, not dropped: the rows and reasons the lines above leave out
        more = n["failed"] - sum(rows for _, rows in reasons[:SHOWN_REASONS])
        # a job keeps its most common reasons only (Spark's report: 10): then some rows are in none listed
        at_least = "at least " if sum(rows for _, rows in reasons) < n["failed"] else ""
        others = len(reasons) - SHOWN_REASONS
        where = ": see the dead letters" if dead_letters else ""
        lines.append(
            f"failed:   {more:,} more row{'s' * (more != 1)}, for {at_least}{others:,} more "
            f"reason{'s' * (others != 1 or bool(at_least))}{where}"
        )
    if dead_letters:
        files = "1 file" if len(dead_letters) == 1 else f"{len(dead_letters)} files"
        lines.append(f"dead letters: {files}, e.g. {dead_letters[0]}")
    return "\n".join(lines)


def refuse_earlier_letters(given: str, folder: str, stale: Sequence[str]) -> None:
    """Refuse a dead-letter ``folder`` (named by ``given``, the flag or option) that holds ``stale``, an
    earlier run's letter files: both commands' rule, since the folder read back holds both runs' letters
    as one, and the earlier run's rows, fixed and fed back, would be written again.

    Raises:
        ConfigError: naming the folder, the first files, and what to do.
    """
    if not stale:
        return
    shown = ", ".join(stale[:3]) + (f" and {len(stale) - 3} more" if len(stale) > 3 else "")
    raise ConfigError(
        f"{given} {folder}: it holds dead letters of an earlier run ({shown}); move them away (or give "
        "another folder), so this run's letters are not mixed with them"
    )


def keep_hint(flags: str, files: str) -> str:
    """How a command keeps its failed rows: its ``flags``, and the ``files`` they go to."""
    return f"Give {flags} to keep the failed rows, with their reasons, in {files}."


def not_kept(prog: str, failed: int, hint: str) -> str:
    """The last line of a job whose ``failed`` rows no dead letter keeps (``on_error=report``): counted,
    and kept nowhere, so it says how (``hint``, the command's ``keep_hint``)."""
    return f"{prog}: {failed:,} rows failed and no dead letters keep them. {hint}"


def check_embedded_default(uri: str) -> None:
    """Where this job will start the embedded default's server (no server runs for ``uri``'s folder yet),
    Milvus Lite must be installed: said now, in one line (``MissingExtra``), not after Spark or the
    pipeline has started and not with an empty folder left behind."""
    from .backends.milvus import lite

    path = lite.lite_path(uri)
    if path is not None and lite.running(path) is None:
        lite.check_installed()


def embedded_note(uri: str) -> str | None:
    """How to read what a job wrote into the embedded Milvus Lite meanwhile, or ``None`` for another target."""
    if not uri.startswith("milvus+lite://"):
        return None
    return (
        "the embedded Milvus Lite server stops after 5 idle minutes; read it meanwhile with "
        "pymilvus: MilvusClient(uri='http://' + vectordb.connector.backends.milvus.lite.ensure_server(PATH))"
    )
