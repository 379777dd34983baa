"""The advice to set ``create=true`` is said as "run without --no-create" only where the command's
``--no-create`` flag was given: it was rewritten for every such error, also when ``create`` was left unset
(``vectordb-beam`` with ``vector_columns`` and no ``vector_dimensions``) or given as ``--option
create=false``, and then named a flag the user had not given. There the API's advice stands: the user
can give ``--option create=true``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.firsthour.test_no_create_advice import REFUSALS
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector.cli import run_command
from vectordb.connector.errors import ConfigError


@pytest.mark.parametrize("prog", ["vectordb-load", "vectordb-beam"])
@pytest.mark.parametrize("backend", sorted(REFUSALS))
def test_without_the_flag_each_backends_advice_stands(
    prog: str, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    raised, _ = REFUSALS[backend]

    def job() -> int:
        raise ConfigError(raised)

    assert run_command(prog, job) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{prog}: ConfigError: {raised} (--debug shows the trace)"
    ]


def test_without_the_flag_a_workers_error_keeps_its_advice(capsys: pytest.CaptureFixture[str]) -> None:
    raised, _ = REFUSALS["milvus"]

    def job() -> int:
        raise RuntimeError(f"Traceback ...\nvectordb.connector.errors.ConfigError: {raised}\n")

    assert run_command("vectordb-load", job) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"vectordb-load: ConfigError: {raised} (--debug shows the trace)"
    ]


def named_rows(tmp_path: Path) -> Path:
    source = tmp_path / "named.jsonl"
    source.write_text('{"id": "a", "t": [1.0, 2.0], "b": [1.0, 0.0, 0.5]}\n')
    return source


@pytest.mark.parametrize(
    ("argv", "advice"),
    [
        (
            ["--sample", "20", "--dim", "4", "--option", "create=false"],
            "collection 'missing' does not exist (option create=true makes it)",
        ),
        (  # create left unset: the job creates what is missing, and each name's dimension is the user's to say
            ["--input", "{named}", "--option", "vector_columns=title:t,body:b"],
            "option vector_dimensions: with create=true, state the length of 'title', 'body'",
        ),
    ],
    ids=["create=false", "vector_columns"],
)
def test_vectordb_beam_without_no_create_keeps_the_apis_advice(
    argv: list[str], advice: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vectordb.beam.load import main

    argv = [arg.format(named=named_rows(tmp_path)) for arg in argv]
    with QdrantServer() as server:
        assert main([*argv, "--uri", server.rest_uri("missing"), "--runner=FnApiRunner"]) == 2
        assert not server.store.exists("missing")
    (line,) = capsys.readouterr().err.splitlines()
    assert advice in line
    assert "--no_create" not in line
