"""One rule for what a ``uri`` without a scheme means, for every entry point: a path is the embedded
default; anything else (a host without its scheme, say) is an error, never a local database."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.registry import canonical_uri

TYPO = "my-index-abc123.svc.pinecone.io"  # pinecone+grpc:// forgotten


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("./vectors.db", f"milvus+lite://{os.getcwd()}/vectors.db"),
        ("vectors.db", f"milvus+lite://{os.getcwd()}/vectors.db"),
        ("/abs/x.db", "milvus+lite:///abs/x.db"),
        ("~/x", f"milvus+lite://{Path.home()}/x"),
        ("milvus+lite://./x.db", f"milvus+lite://{os.getcwd()}/x.db"),
        ("pinecone+grpc://host", "pinecone+grpc://host"),
        (TYPO, TYPO),
    ],
)
def test_paths_become_the_embedded_default_and_nothing_else_does(given: str, expected: str) -> None:
    assert canonical_uri(given) == expected


def test_a_host_without_its_scheme_is_refused_by_connect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="is not SCHEME://host"):
        connect(TYPO, create=True)
    assert list(tmp_path.iterdir()) == []  # no local database was made


def test_an_empty_path_is_refused() -> None:
    with pytest.raises(ConfigError, match="names no path"):
        canonical_uri("milvus+lite://")


def test_a_refused_uri_is_quoted_without_its_password() -> None:
    with pytest.raises(ConfigError, match="names no path") as no_path:
        canonical_uri("milvus+lite://?password=PwLITE")
    with pytest.raises(ConfigError, match="is not SCHEME://host") as no_scheme:
        connect("app:PwHOST@db.internal?password=PwQUERY", create=True)
    for text in (str(no_path.value), str(no_scheme.value)):
        assert "Pw" not in text and "***" in text, text


def test_the_main_job_refuses_the_typo_before_starting_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vectordb.spark.load import main

    monkeypatch.chdir(tmp_path)
    assert main(["--uri", TYPO, "--sample", "10", "--dim", "4"]) == 2  # a ConfigError: one line
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("vectordb-load: ConfigError: option uri: ") and "is not SCHEME://host" in line
    assert list(tmp_path.iterdir()) == []
