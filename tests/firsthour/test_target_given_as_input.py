"""A target given where the commands read their input: ``vectordb-beam`` handed an argument without a
flag to Beam, which drops it, and wrote to ``./vectors.db``; ``vectordb-load --input data.jsonl URI``
took the URI as a second input and died in Spark with a page of Java trace. Each is one line naming
``--uri``, with the URI's password blanked; a path of a scheme Spark cannot read is one line too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vectordb.connector.cli import refuse_target_as_input
from vectordb.connector.errors import ConfigError

PYTHON = sys.executable


@pytest.mark.parametrize(
    ("path", "scheme"),
    [
        ("postgresql://u:hunter22@db/v?table=t", "postgresql"),
        ("pinecone+grpc://i.svc.pinecone.io", "pinecone"),
    ],
)
def test_a_database_uri_as_input_names_uri_and_blanks_the_password(path: str, scheme: str) -> None:
    with pytest.raises(ConfigError) as caught:
        refuse_target_as_input(path)
    assert f"is a {scheme} URI, not files to read: the target goes in --uri" in str(caught.value)
    assert "hunter22" not in str(caught.value)


@pytest.mark.parametrize(
    "path", ["data/*.parquet", "s3a://bucket/x.parquet", "gs://b/rows.jsonl", "./vectors.db"]
)
def test_files_are_not_refused(path: str) -> None:
    refuse_target_as_input(path)


def run_beam(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "vectordb.beam.load", *argv], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_beam_refuses_an_argument_without_a_flag_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"id": 1, "values": [1, 2, 3, 4]}\n')
    done = run_beam("postgresql://u:hunter23@127.0.0.1:1/db?table=t", "--input", "in.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "vectordb-beam: error: unrecognized arguments: 'postgresql://u:***@127.0.0.1:1/db?table=t' "
        "(the target goes in --uri)"
    )
    assert "hunter23" not in done.stderr + done.stdout
    assert not (tmp_path / "vectors.db").exists()  # nothing went to the embedded default


def test_beam_keeps_beam_flags_and_their_values(tmp_path: Path) -> None:
    from vectordb.beam.load import parse_args

    args, rest = parse_args(["--sample", "3", "--runner", "DirectRunner", "--job_name", "j1", "--labels=a=b"])
    assert args.sample == 3 and rest == ["--runner", "DirectRunner", "--job_name", "j1", "--labels=a=b"]


def test_beam_starts_without_beams_apitools_warning(tmp_path: Path) -> None:
    """Beam without its [gcp] extra logs "apitools not found" as it is imported: the command's first
    line read like a fault. The warning is Beam's, logged on import, here or not at all."""
    imported = subprocess.run(
        [PYTHON, "-c", "import apache_beam"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    done = run_beam("--help", cwd=tmp_path)
    assert done.returncode == 0 and "usage: vectordb-beam" in done.stdout
    assert "apitools" not in done.stderr
    if "apitools not found" not in imported.stderr:
        pytest.skip("this Beam logs no apitools warning on import: nothing to quiet")


def test_load_refuses_a_uri_after_its_inputs_before_spark(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"id": 1, "values": [1, 2, 3, 4]}\n')
    argv = [
        "--input",
        str(tmp_path / "in.jsonl"),
        "postgresql://u:hunter24@h/db",
        "--uri",
        str(tmp_path / "v.db"),
    ]
    done = subprocess.run(
        [PYTHON, "-m", "vectordb.spark.load", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "vectordb-load: ConfigError: --input 'postgresql://u:***@h/db' is a postgresql URI, not files to read: "
            "the target goes in --uri"
        )
    )
    assert "hunter24" not in done.stderr and "log4j" not in done.stderr  # refused before Spark started


def test_beam_input_it_cannot_list_is_named_without_its_password(tmp_path: Path) -> None:
    """Without apache-beam[gcp] (as here), Beam has no file system for gs://: said so, not "nothing matches"
    (tests/beam/test_cli_input_store_missing.py), the input and Beam's reason without the password."""
    done = run_beam("--input", "gs://u:hunter25@bucket/x*.parquet", cwd=tmp_path)
    assert done.returncode == 2
    assert "--input 'gs://u:***@bucket/x*.parquet': " in done.stderr
    assert "hunter25" not in done.stderr + done.stdout


@pytest.mark.parametrize("command", ["vectordb.beam.load", "vectordb.spark.load"])
def test_a_key_typed_after_option_with_a_space_is_not_shown(command: str, tmp_path: Path) -> None:
    """``--option api_key sk-…`` (a space for the ``=``) leaves the key as an argument of its own, which
    argparse's "unrecognized arguments" line quoted."""
    argv = ["--sample", "3", "--option", "api_key", "sk-STRAY-hunter26", "--uri", str(tmp_path / "v.db")]
    done = subprocess.run(
        [PYTHON, "-m", command, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2
    assert "hunter26" not in done.stderr + done.stdout
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "error: unrecognized arguments: 1 value not shown (it may be a key) (flags start with --, and --option "
            "takes KEY=VALUE as one word)"
        )
    )


def test_mixed_formats_quote_input_urls_without_their_passwords() -> None:
    from vectordb.connector.cli import one_format
    from vectordb.spark.load import stated_format

    inputs = [
        (f"s3a://AKIA:hunter27@bucket/{name}", [f"s3a://AKIA:hunter27@bucket/{name}"])
        for name in ("a.parquet", "b.jsonl")
    ]
    with pytest.raises(ConfigError) as caught:
        one_format(inputs, stated_format, None, flag="--format")
    assert "hunter27" not in str(caught.value)
    assert "'s3a://AKIA:***@bucket/b.jsonl' is json, but 's3a://AKIA:***@bucket/a.parquet' is parquet" in str(
        caught.value
    )


def test_load_quotes_remote_inputs_of_two_formats_without_their_passwords(tmp_path: Path) -> None:
    argv = ["--input", "s3a://AKIA:hunter28@b/a.parquet", "s3a://AKIA:hunter28@b/b.jsonl", "--uri", "v.db"]
    done = subprocess.run(
        [PYTHON, "-m", "vectordb.spark.load", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "hunter28" not in done.stderr + done.stdout
    assert (
        "--input 's3a://AKIA:***@b/b.jsonl' is json, but 's3a://AKIA:***@b/a.parquet' is parquet"
        in done.stderr
    )
