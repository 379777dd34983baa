"""``vectordb-load`` refused a local JSON array (``refuse_json_array``) only when it was given as a plain
path and stored uncompressed: as ``file:///…`` (or ``file:/…``) the input was taken for another store and
not opened, and a ``rows.json.gz`` was checked as its compressed bytes, while Spark reads both, a line at a
time, and wrote the array's objects. ``check_before_spark`` now lists ``file:`` inputs as local paths and
opens ``.gz`` and ``.bz2`` files decompressed, as Spark's text reader does; no Spark starts."""

from __future__ import annotations

import bz2
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vectordb.connector.errors import ConfigError

ARRAY = '[\n{"id":"a","values":[1.0,2.0]},\n{"id":"b","values":[3.0,4.0]}\n]\n'
LINES = '{"id":"a","values":[1.0,2.0]}\n{"id":"b","values":[3.0,4.0]}\n'
ADVICE = (
    "not JSON Lines (one JSON object a line): it starts with '[', a JSON array; a JSON array or a "
    "pretty-printed file is not read, write one object a line"
)


def input_format(path: str) -> str | None:
    from vectordb.spark.load import input_format

    return input_format(path)


def check(tmp_path: Path, given: str, *flags: str) -> None:
    """``check_before_spark`` as ``load()`` runs it, before ``session()``."""
    from vectordb.connector.backends.registry import canonical_uri
    from vectordb.spark.load import check_before_spark, parse_args

    args = parse_args(["--input", given, "--uri", str(tmp_path / "load.db"), *flags])
    args.uri = canonical_uri(args.uri)
    check_before_spark(args)


@pytest.mark.parametrize("scheme", ["file://", "file:"])
def test_a_file_uri_json_array_is_refused(tmp_path: Path, scheme: str) -> None:
    path = tmp_path / "rows.json"
    path.write_text(ARRAY)
    with pytest.raises(ConfigError) as caught:
        check(tmp_path, f"{scheme}{path}")
    assert str(caught.value) == f"--input {str(path)!r}: {ADVICE}"


def test_a_file_uri_folder_is_listed_and_its_array_refused(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_text(LINES)
    (folder / "b.json").write_text(ARRAY)
    with pytest.raises(ConfigError) as caught:
        check(tmp_path, f"file://{folder}")  # no --format: the folder's first file says json
    assert str(caught.value) == f"--input {str(folder / 'b.json')!r}: {ADVICE}"


def test_a_file_uri_that_matches_nothing_is_refused(tmp_path: Path) -> None:
    given = f"file://{tmp_path / 'nothing.json'}"
    with pytest.raises(ConfigError) as caught:
        check(tmp_path, given)
    assert str(caught.value) == f"--input: nothing matches {given!r}"


@pytest.mark.parametrize(("suffix", "compress"), [(".gz", gzip.compress), (".bz2", bz2.compress)])
def test_a_compressed_json_array_is_refused(tmp_path: Path, suffix: str, compress: object) -> None:
    path = tmp_path / f"rows.json{suffix}"
    path.write_bytes(compress(ARRAY.encode()))  # type: ignore[operator]
    with pytest.raises(ConfigError) as caught:
        check(tmp_path, str(path), "--format", "json")
    assert str(caught.value) == f"--input {str(path)!r}: {ADVICE}"


@pytest.mark.parametrize(("suffix", "compress"), [(".gz", gzip.compress), (".bz2", bz2.compress)])
def test_compressed_json_lines_pass_and_their_name_says_json(
    tmp_path: Path, suffix: str, compress: object
) -> None:
    path = tmp_path / f"rows.json{suffix}"
    path.write_bytes(compress(LINES.encode()))  # type: ignore[operator]
    for given in (str(path), f"file://{path}"):  # no --format: 'cannot tell the format' before
        check(tmp_path, given)
    assert input_format(str(path)) == input_format(f"file://{path}") == "json"  # what read_input gives Spark


def test_a_file_that_is_not_what_its_extension_says_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rows.json.gz"
    path.write_text(LINES)  # not gzip: Spark's task fails on it
    with pytest.raises(ConfigError) as caught:
        check(tmp_path, str(path), "--format", "json")
    assert str(caught.value).startswith(f"--input {str(path)!r}: not gzip data (its extension says it is):")


def run(tmp_path: Path, given: str) -> tuple[int, list[str], bool]:
    """``vectordb-load --input given`` in a process of its own whose only Java records that it was started
    (Spark starts it first) and exits: its status, its stderr's lines, and whether Spark was started."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    started = tmp_path / "java-started"
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\ntouch {started}\nexit 1\n")
    java.chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    argv = ["--input", given, "--format", "json", "--uri", str(tmp_path / "v.db")]
    done = subprocess.run(
        [sys.executable, "-m", "vectordb.spark.load", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stderr.strip().splitlines(), started.exists()


def test_the_command_refuses_them_before_spark_starts(tmp_path: Path) -> None:
    plain, packed = tmp_path / "rows.json", tmp_path / "rows.json.gz"
    plain.write_text(ARRAY)
    packed.write_bytes(gzip.compress(ARRAY.encode()))
    for given, named in ((f"file://{plain}", plain), (str(packed), packed)):
        status, lines, spark = run(tmp_path, given)
        assert (status, spark) == (2, False)
        assert lines == [
            f"vectordb-load: ConfigError: --input {str(named)!r}: {ADVICE} (--debug shows the trace)"
        ]
    assert not (tmp_path / "v.db").exists()
