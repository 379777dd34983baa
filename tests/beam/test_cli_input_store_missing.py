"""``vectordb-beam --input gs://…`` (its own ``--help`` example) without ``apache-beam[gcp]``: Beam says it has no
file system for the scheme and which extra brings it, but ``check_input`` took any exception for an empty
match and said "nothing matches", so a user with a full bucket was told it is empty, and not what to
install; a listing refused (permission, credentials) read the same. Only an empty match says "nothing
matches" now; Beam's refusal is one line naming ``--input`` and quoting Beam's reason, its credentials
blanked."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from vectordb.beam.load import main

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("apache_beam.io.gcp.gcsfilesystem") is not None
    and importlib.util.find_spec("google.cloud.storage") is not None,
    reason="apache-beam[gcp] is installed: Beam has a file system for gs://",
)


def refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("vectordb-beam: ")]
    return line


def test_a_store_without_its_file_system_names_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = refusal(["--input", "gs://bucket/embeddings/*.parquet", "--uri", str(tmp_path / "x.db")], capsys)
    assert line.startswith(
        "vectordb-beam: ConfigError: --input 'gs://bucket/embeddings/*.parquet': Beam has no file system for "
        "gs:// here: pip install 'apache-beam[gcp]' (Beam: Unable to get filesystem"
    )
    assert "nothing matches" not in line


def test_beams_reason_is_quoted_without_the_inputs_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = "gs://reader:Xq7pW0rdLong99@bucket/embeddings/*.parquet?sig=SigSecret0123456789"
    line = refusal(["--input", given, "--uri", str(tmp_path / "x.db")], capsys)
    assert "Xq7pW0rdLong99" not in line and "SigSecret0123456789" not in line
    assert "--input 'gs://reader:***@bucket/embeddings/*.parquet?sig=***'" in line
    assert "(Beam: Unable to get filesystem" in line and "Path specified: gs://reader:***@bucket" in line


def test_a_scheme_beam_does_not_read_names_those_it_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = refusal(["--input", "az://container/x.parquet", "--uri", str(tmp_path / "x.db")], capsys)
    assert (
        "Beam has no file system for az:// here: it reads gs://, s3://, azfs://, hdfs:// and local paths"
        in line
    )


def test_an_empty_match_still_says_nothing_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pattern = str(tmp_path / "none-*.parquet")
    line = refusal(["--input", pattern, "--uri", str(tmp_path / "x.db")], capsys)
    assert (
        line == f"vectordb-beam: ConfigError: --input: nothing matches {pattern!r} (--debug shows the trace)"
    )
