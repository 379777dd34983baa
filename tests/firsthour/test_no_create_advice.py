"""A command run with ``--no-create`` into a missing collection says to drop that flag, not the API's
``set create=true``: a command's user has no option ``create`` to set (its flags create the collection
unless told not to). Each backend's wording of that advice, and a real refusal by Milvus Lite through
``vectordb-beam``; ``tests/spark/test_no_create_advice.py`` runs ``vectordb-load``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from vectordb.connector.cli import run_command
from vectordb.connector.errors import ConfigError

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

# each backend's words for a missing target, as it raises them
REFUSALS = {
    "milvus": (
        "milvus collection 'docs' does not exist at milvus://h:19530; set create=true to create it",
        "milvus collection 'docs' does not exist at milvus://h:19530; run without {flag} to create it",
    ),
    "chroma": (
        "chroma collection 'docs' (tenant 't', database 'd') does not exist; set create=true to create it (404)",
        "chroma collection 'docs' (tenant 't', database 'd') does not exist; run without {flag} to create it (404)",
    ),
    "pgvector table": (
        "pgvector t: table docs does not exist: create it, or set create=true (no ANN index is built during the load: build it afterwards)",
        "pgvector t: table docs does not exist: create it, or run without {flag} (no ANN index is built during the load: build it afterwards)",
    ),
    "pgvector extension": (
        "pgvector t: the pgvector extension is not installed: CREATE EXTENSION vector (or set create=true)",
        "pgvector t: the pgvector extension is not installed: CREATE EXTENSION vector (or run without {flag})",
    ),
    "qdrant or weaviate": (
        "qdrant q: collection 'docs' does not exist (option create=true makes it)",
        "qdrant q: collection 'docs' does not exist (run without {flag} to make it)",
    ),
}


@pytest.mark.parametrize("prog, flag", [("vectordb-load", "--no-create"), ("vectordb-beam", "--no_create")])
@pytest.mark.parametrize("backend", sorted(REFUSALS))
def test_each_backends_advice_names_the_commands_flag(
    prog: str, flag: str, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    raised, said = REFUSALS[backend]

    def job() -> int:
        raise ConfigError(raised)

    assert run_command(prog, job, no_create=True) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{prog}: ConfigError: {said.format(flag=flag)} (--debug shows the trace)"
    ]


def test_the_same_error_raised_in_a_worker_names_the_flag_too(capsys: pytest.CaptureFixture[str]) -> None:
    """Spark hands back a Python worker's error as text: the advice is found there as well."""
    raised, said = REFUSALS["milvus"]

    def job() -> int:
        raise RuntimeError(f"Traceback ...\nvectordb.connector.errors.ConfigError: {raised}\n")

    assert run_command("vectordb-load", job, no_create=True) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"vectordb-load: ConfigError: {said.format(flag='--no-create')} (--debug shows the trace)"
    ]


def test_vectordb_beam_no_create_into_a_missing_collection_names_the_flag(
    milvus_lite: LiteServer, collection_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from vectordb.beam.load import main

    argv = ["--sample", "20", "--dim", "4", "--uri", milvus_lite.uri, "--no_create", "--runner=FnApiRunner"]
    assert main([*argv, "--option", f"collection={collection_name}"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"vectordb-beam: ConfigError: milvus collection {collection_name!r} does not exist"
    )
    assert "; run without --no_create to create it" in line  # then Beam's "[while running …]"
    assert "create=true" not in line
    assert not milvus_lite.client.has_collection(collection_name)
