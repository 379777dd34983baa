"""A key given as ``--option api_key=KEY`` (or ``embed_api_key``, ``password``, ``token``: the options the
connector keeps secret) shows in ps and the shell's history for the whole run, as ``--api-key KEY`` would,
which both commands refuse: they took it without a word, and the key sat in the process's command line.
Both now refuse it before anything runs, exit 2, in the words ``--api-key`` gets, naming the command's own
way to give it (``connector/cli.py`` ``option_pairs``), and never quote the value."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

KEY = "pcsk_S3cretPassw0rdXYZ0123"
SHOWN = "a key is not given in the command line (ps and the shell's history show it)"


def spark_args(argv: list[str]) -> Any:
    from vectordb.spark.load import parse_args

    return parse_args(argv)


def beam_args(argv: list[str]) -> Any:
    pytest.importorskip("apache_beam")
    from vectordb.beam.load import parse_args

    return parse_args(argv)


def refusal(parse: Callable[[list[str]], Any], argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        parse(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert KEY not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("given", "way"),
    [
        (f"api_key={KEY}", ": give --api-key-env NAME"),
        (f"embed_api_key={KEY}", ": give --embed-api-key-env NAME"),
        (f"API_KEY={KEY}", ": give --api-key-env NAME"),  # Spark lower-cases option keys
        (f" api_key ={KEY}", ": give --api-key-env NAME"),
        (f"password={KEY}", " (option api_key holds a password): give --api-key-env NAME"),
        (f"token={KEY}", " (option api_key holds a token): give --api-key-env NAME"),
    ],
)
def test_vectordb_load_refuses_a_key_given_as_an_option(
    given: str, way: str, capsys: pytest.CaptureFixture[str]
) -> None:
    last = refusal(spark_args, ["--sample", "5", "--option", "batch_size=10", "--option", given], capsys)
    name = given.partition("=")[0].strip()
    assert (
        last
        == f"vectordb-load: error: --option {name}: {SHOWN}{way}, NAME the environment variable holding it"
    )


@pytest.mark.parametrize(
    ("given", "way"),
    [
        (f"api_key={KEY}", ": give --option api_key_env=NAME or --api_key_secret SPEC"),
        (f"embed_api_key={KEY}", ": give --option embed_api_key_env=NAME"),
        (
            f"password={KEY}",
            " (option api_key holds a password): give --option api_key_env=NAME or --api_key_secret SPEC",
        ),
    ],
)
def test_vectordb_beam_refuses_a_key_given_as_an_option(
    given: str, way: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--sample", "5", "--uri", "pinecone://idx-abc.svc.pinecone.io", f"--option={given}"]
    last = refusal(beam_args, argv, capsys)
    name = given.partition("=")[0]
    assert (
        last
        == f"vectordb-beam: error: --option {name}: {SHOWN}{way}, NAME the environment variable holding it"
    )


def test_a_key_option_without_its_value_is_refused_too(capsys: pytest.CaptureFixture[str]) -> None:
    """``--option api_key`` alone was answered "has no value: give --option api_key=VALUE": typing the key."""
    last = refusal(spark_args, ["--sample", "5", "--option", "api_key"], capsys)
    assert last.startswith(f"vectordb-load: error: --option api_key: {SHOWN}")


def test_other_options_and_the_variables_names_still_pass() -> None:
    args = spark_args(["--sample", "5", "--option", "api_key_env=MY_KEY", "--option", "namespace=docs"])
    assert args.option == ["api_key_env=MY_KEY", "namespace=docs"]
    args, _ = beam_args(["--sample", "5", "--option=embed_api_key_env=OPENAI_API_KEY"])
    assert args.option == ["embed_api_key_env=OPENAI_API_KEY"]


def test_the_console_script_stops_before_connecting(tmp_path: Path) -> None:
    """As the reviewer ran it: ``vectordb-beam --option api_key=KEY`` went on to connect (and held the key
    in its command line meanwhile); now it ends at once, exit 2, one line."""
    pytest.importorskip("apache_beam")
    script = Path(sys.executable).with_name("vectordb-beam")
    argv = [str(script), "--sample", "10", "--dim", "4", "--uri", "pinecone://idx-abc.svc.pinecone.io"]
    argv += ["--option", f"api_key={KEY}", "--option", "max_retries=0", "--option", "timeout_s=2"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert KEY not in done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"vectordb-beam: error: --option api_key: {SHOWN}: give --option api_key_env=NAME or "
        "--api_key_secret SPEC, NAME the environment variable holding it"
    )
    assert "writing" not in done.stdout
