"""The Beam job, ``vectordb-beam`` (``vectordb.beam.load``), end to end: Parquet and JSON Lines files or a
generated sample in, the server and dead-letter files out, the summary printed; its flags in ``--help``,
and a ``ConnectorError`` as one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.utils.secret import GcpSecret

from tests.embedding.fixtures import embeddings_server, expected_vectors, too_long, words
from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from tests.servers.pinecone_control import ImportScript, PineconeImportServer, store_opener
from tests.servers.script import FaultScript
from vectordb.beam.load import connector_options, main, parse_args, sample_batch
from vectordb.connector import ConfigError

__all__ = ["embeddings_server"]  # a fixture, used by name

N, DIM = 300, 8


def vectors() -> np.ndarray:
    return np.random.default_rng(11).standard_normal((N, DIM)).astype(np.float32)


def write_parquet(path: Path) -> None:
    offsets = pa.array(np.arange(0, (N + 1) * DIM, DIM, dtype=np.int32))
    table = pa.table(
        {
            "doc_id": [f"p{i}" for i in range(N)],
            "embedding": pa.ListArray.from_arrays(offsets, pa.array(vectors().reshape(-1))),
            "title": [f"title {i}" for i in range(N)],
        }
    )
    pq.write_table(table, path)


def write_jsonl(path: Path) -> None:
    rows = [
        {"doc_id": f"j{i}", "embedding": v.tolist(), "title": f"title {i}"} for i, v in enumerate(vectors())
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
def test_files_to_the_database_with_dead_letters(
    kind: str, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = kind[0]
    source = tmp_path / f"records.{kind}"
    (write_parquet if kind == "parquet" else write_jsonl)(source)
    grpc_server.script(reject_ids=frozenset({f"{prefix}7", f"{prefix}123"}))
    dead = tmp_path / "dead"
    status = main(
        [
            "--runner=FnApiRunner",
            f"--input={source}",
            f"--uri={grpc_server.uri}",
            "--option=id_column=doc_id",
            "--option=vector_column=embedding",
            "--option=namespace=docs",
            f"--dead_letters={dead}",
        ]
    )
    assert status == 1  # rows failed (and went to the dead letters), as the Spark job says it
    out = capsys.readouterr().out
    assert f"written:  {N - 2:,} of {N:,} rows (2 failed)" in out
    assert f"traffic:  {len(grpc_server.arrived().requests):,} requests, 0 retries, 0 throttled" in out
    assert "rows/s" in out and "dead letters: 1 file, e.g. " in out

    arrived = grpc_server.arrived()
    assert arrived.ids("docs") == {f"{prefix}{i}" for i in range(N)} - {f"{prefix}7", f"{prefix}123"}
    stored = arrived.vector(f"{prefix}5", "docs")
    assert stored.values_f32 == vectors()[5].tobytes() and stored.metadata == {"title": "title 5"}
    letters = [
        json.loads(line) for f in dead.glob("dead-letters-*.jsonl") for line in f.read_text().splitlines()
    ]
    assert sorted(letter["id"] for letter in letters) == [f"{prefix}123", f"{prefix}7"]
    assert all(letter["error_type"] == "Rejected" for letter in letters)


def test_a_sample_lands_and_the_summary_says_so(
    grpc_server: ServerHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--sample N --dim D``: N generated vectors, the same ones on every run."""
    argv = ["--sample", "120", "--dim", "4", "--uri", grpc_server.uri, "--no_create", "--runner=FnApiRunner"]
    assert main(argv) == 0
    expected = sample_batch(0, 120, 4)
    arrived = grpc_server.arrived()
    assert arrived.ids() == {str(i) for i in range(120)}
    assert arrived.vector("7").values_f32 == np.asarray(expected.column("values")[7].values).tobytes()
    assert arrived.vector("7").metadata == {"title": "sample 7"}
    out = capsys.readouterr().out
    assert f"writing a sample of 120 to {grpc_server.uri}" in out
    assert "written:  120 of 120 rows (0 failed)" in out and "speed:    " in out
    assert sample_batch(0, 10, 4).column("values")[7] == expected.column("values")[7]  # whatever N is


def test_a_bad_option_is_one_line_and_status_2_before_the_pipeline_runs(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x.jsonl").write_text('{"id": "a", "values": [1.0, 2.0]}\n')
    argv = [
        "--runner=FnApiRunner",
        f"--input={tmp_path}/x.jsonl",
        f"--uri={grpc_server.uri}",
        "--option=bach_size=5",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "vectordb-beam: ConfigError: invalid options: unknown option 'bach_size' (did you mean 'batch_size'?) "
        "(--debug shows the trace)"
    ]
    assert grpc_server.arrived().requests == []
    assert main([*argv, "--debug"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "vectordb/beam/sink.py" in err and "in resolve_options" in err  # the frames, to the options' check
    assert err.splitlines()[-1].startswith(
        "vectordb-beam: ConfigError: invalid options: unknown option 'bach_size'"
    )


def test_an_error_in_the_pipeline_is_one_line_too(
    grpc_server: ServerHandle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``ConnectorError`` raised on a worker (a key the server refuses) comes back through the runner:
    one line still, and the runner does not log its trace either."""
    grpc_server.script(api_key="sk-the-right-one")
    argv = ["--sample", "20", "--dim", "4", "--uri", grpc_server.uri, "--no_create", "--runner=FnApiRunner"]
    monkeypatch.setenv("VDB_TEST_KEY", "sk-another")  # a key is refused in the command line
    argv += ["--option", "api_key_env=VDB_TEST_KEY"]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("vectordb-beam: AuthError: ") and line.endswith("(--debug shows the trace)")
    assert not [r for r in caplog.records if r.exc_info]


def test_help_lists_the_jobs_flags_then_beams(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    ours = out[: out.index("Beam pipeline options: StandardOptions:")]
    for flag in (
        "--input",
        "--sample N",
        "--dim",
        "--uri",
        "--collection",
        "--option KEY=VALUE",
        "--dead_letters",
    ):
        assert flag in ours
    assert "vectordb-beam --sample 10000 --dim 384" in ours  # the examples
    beam = out[len(ours) :]
    assert "--runner RUNNER" in beam and "--direct_num_workers" in beam and "--temp_location" in beam


def test_a_misspelt_flag_of_the_job_is_refused_not_passed_to_beam(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--sample", "5", "--dead-leters", "out"])
    assert exit_info.value.code == 2
    assert "unrecognized argument --dead-leters: did you mean --dead_letters?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "option"),
    [("--id-column", "id_column"), ("--on-error", "on_error"), ("--embed_url", "embed_url")],
)
def test_a_connector_option_given_as_a_flag_is_refused_naming_option(
    flag: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vectordb-load``'s ``--id-column doc`` went to Beam, which drops what it cannot parse: the job
    wrote with the default ``id`` column and exited 0."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--sample", "5", flag, "x"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"unrecognized argument {flag}: a connector option goes in --option {option}=VALUE" in err


def test_its_flags_take_the_spark_jobs_spelling_too() -> None:
    """``vectordb-load`` spells ``--no-create``; the same words work here, and Beam's flags are Beam's."""
    args, rest = parse_args(
        ["--sample", "5", "--no-create", "--dead-letters=out", "--check-target", "--temp_location=/tmp/x"]
    )
    assert (args.no_create, args.dead_letters, args.check_target, rest) == (
        True,
        "out",
        True,
        ["--temp_location=/tmp/x"],
    )


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--overwrite"], "unrecognized argument --overwrite: neither a flag of vectordb-beam nor a Beam"),
        (["--dead", "dl"], "unrecognized argument --dead: neither a flag of vectordb-beam nor a Beam pipeline "
         "option: did you mean --dead_letters?"),
        (["--my_flag=1"], "unrecognized argument --my_flag: neither"),
    ],
)  # fmt: skip
def test_a_flag_beam_would_drop_is_refused(
    given: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Beam drops a flag no options class defines, logging one line: ``vectordb-load``'s ``--overwrite``
    was ignored (the old rows kept), a cut ``--dead_letters`` kept no dead letter, and the job exited 0."""
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--sample", "5", *given])
    assert exit_info.value.code == 2
    assert said in capsys.readouterr().err
    assert parse_args(["--sample", "5", "--runner=DirectRunner", "--direct_num_workers", "2"])[1] == [
        "--runner=DirectRunner",
        "--direct_num_workers",
        "2",
    ]


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
def test_a_new_collection_takes_the_inputs_most_common_length_not_the_first_rows(
    kind: str, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    """Without ``--dim``, as ``vectordb-load``: the most common length among the input's first rows
    gives a new collection its dimension (it needed ``--dim``); a first row of another length fails alone."""
    rows = [{"id": "short", "values": [1.0, 2.0]}] + [
        {"id": f"r{i}", "values": [1.0, 2.0, 3.0]} for i in range(4)
    ]
    source = tmp_path / f"in.{kind}"
    if kind == "parquet":
        pq.write_table(pa.Table.from_pylist(rows), source)
    else:
        source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = parse_args([f"--input={source}", f"--uri={grpc_server.uri}"])[0]
    assert connector_options(args) == {"create": "true", "dimension": "3"}
    dead = tmp_path / "dead"
    argv = ["--runner=FnApiRunner", f"--input={source}", f"--uri={grpc_server.uri}", f"--dead-letters={dead}"]
    assert main(argv) == 1
    assert grpc_server.arrived().ids() == {f"r{i}" for i in range(4)}
    (letter,) = [
        json.loads(line) for f in dead.glob("dead-letters-*.jsonl") for line in f.read_text().splitlines()
    ]
    assert letter["id"] == "short" and "vector has 2 dimensions" in letter["error"]


def test_an_input_without_vectors_for_a_new_collection_asks_for_dim(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "texts.jsonl"
    source.write_text('{"id": "a", "text": "no vector"}\n')
    assert main(["--runner=FnApiRunner", f"--input={source}", f"--uri={grpc_server.uri}"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "no vector in column 'values'" in line and "give --dim N" in line
    assert grpc_server.arrived().requests == []


def test_failed_rows_name_the_flags_that_keep_them(
    grpc_server: ServerHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    """The error says how this command keeps failed rows from failing it, not the API's ``on_error=``."""
    grpc_server.script(reject_ids=frozenset({"3"}))
    argv = ["--sample", "10", "--dim", "4", "--uri", grpc_server.uri, "--no_create", "--runner=FnApiRunner"]
    assert main(argv) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("vectordb-beam: WriteFailed: ") and "1 of 10 rows failed" in line
    assert "Give --dead_letters DIR, or --option on_error=report, to keep the rows" in line
    assert "on_error='report'" not in line


def test_api_key_secret_becomes_a_beam_secret_the_sink_fetches_on_workers() -> None:
    spec = "type:GcpSecret;version_name:projects/p/secrets/pinecone/versions/3"
    options = connector_options(parse_args(["--sample", "1", f"--api_key_secret={spec}"])[0])
    assert options["api_key"] == GcpSecret("projects/p/secrets/pinecone/versions/3")
    with pytest.raises(ConfigError, match=r"--api_key_secret: .*type"):
        connector_options(parse_args(["--sample", "1", "--api_key_secret=projects/p/secrets/s"])[0])


def test_input_or_sample_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--runner=FnApiRunner"])
    assert exit_info.value.code == 2
    assert "one of the arguments --input --sample is required" in capsys.readouterr().err


def test_text_files_to_the_database_through_the_embedding_options(
    grpc_server: ServerHandle,
    tmp_path: Path,
    embeddings_server: EmbeddingsServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The embedding options go through ``--option`` like any other: JSON Lines text in, the model's
    vectors stored, the text the model refused a dead letter with its reason."""
    monkeypatch.setenv("VDB_TEST_EMBED_KEY", DEFAULT_KEY)
    texts = [words(i) for i in range(60)]
    texts[17] = too_long(17)
    source = tmp_path / "texts.jsonl"
    source.write_text("".join(json.dumps({"doc_id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    dead = tmp_path / "dead"
    status = main(
        [
            "--runner=FnApiRunner",
            f"--input={source}",
            f"--uri={grpc_server.uri}",
            "--option=id_column=doc_id",
            "--option=text_column=text",
            f"--option=embed_url={embeddings_server.url}",
            f"--option=embed_model={DEFAULT_MODEL}",
            "--option=embed_api_key_env=VDB_TEST_EMBED_KEY",  # a key is refused in the command line
            "--option=embed_batch_size=8",
            "--no_create",  # the server's index exists
            f"--dead_letters={dead}",
        ]
    )
    assert status == 1  # the refused text
    arrived = grpc_server.arrived()
    good = [i for i in range(60) if i != 17]
    assert arrived.ids() == {f"t{i}" for i in good}
    expected = expected_vectors([texts[i] for i in good])
    for k, i in enumerate(good):
        assert arrived.vector(f"t{i}").values_f32 == expected[k].tobytes()
    (letter,) = [
        json.loads(line) for f in dead.glob("dead-letters-*.jsonl") for line in f.read_text().splitlines()
    ]
    assert letter["id"] == "t17" and "maximum context length" in letter["error"]


def test_a_line_that_is_not_json_fails_alone_as_a_dead_letter(
    grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It stopped the whole job with a Beam trace and no summary."""
    source = tmp_path / "records.jsonl"
    good = [json.dumps({"id": f"j{i}", "values": [0.5, 1.0, 1.5, 2.0]}) for i in range(3)]
    source.write_text("\n".join([good[0], "{not json", *good[1:]]) + "\n")
    dead = tmp_path / "dead"
    argv = ["--runner=FnApiRunner", f"--input={source}", f"--uri={grpc_server.uri}", f"--dead_letters={dead}"]
    assert main(argv) == 1
    assert "written:  3 of 4 rows (1 failed)" in capsys.readouterr().out
    assert grpc_server.arrived().ids() == {"j0", "j1", "j2"}
    (letter,) = [
        json.loads(line) for f in dead.glob("dead-letters-*.jsonl") for line in f.read_text().splitlines()
    ]
    assert letter["line"] == "{not json" and letter["error"].startswith(
        f"file {source}: the line is not JSON: "
    )


def test_an_input_that_matches_nothing_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--runner=FnApiRunner", f"--input={tmp_path / 'none-*.jsonl'}", "--uri=./v.db"]) == 2
    err = capsys.readouterr().err
    assert "--input: nothing matches" in err and "Traceback" not in err


@pytest.mark.parametrize("policy", ["report", "dead_letters", "fail"])
def test_an_import_that_lands_part_of_the_rows_says_so_and_exits_1(
    policy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``write_mode=import``: the summary is the import's (it printed 0 of 0 rows and exited 0)."""
    monkeypatch.setenv("VDB_TEST_KEY", "k")  # a key is refused in the command line
    rows = [{"id": f"b{i}", "values": [0.5, 0.25, float(i), 1.0]} for i in range(N)]
    if policy == "report":
        rows[9]["values"] = [0.5, 0.25]  # refused while staging (under "fail" the staging step would fail)
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    flags = {
        "report": ["--option=on_error=report"],
        "dead_letters": [f"--dead_letters={tmp_path / 'dead'}"],
        "fail": [],
    }[policy]
    with PineconeImportServer(store_opener()) as host:
        host.state.set_script(FaultScript(dimension=4))
        host.imports.set_script(ImportScript(fail_after_rows=100))
        argv = [
            "--runner=FnApiRunner",
            f"--input={source}",
            f"--uri={host.uri}",
            "--no_create",
            *["--option=api_key_env=VDB_TEST_KEY", "--option=namespace=docs", "--option=write_mode=import"],
            f"--option=import_uri=file://{tmp_path / 'staged'}",
            "--option=import_poll_s=0.05",
            *flags,
        ]
        assert main(argv) == 1
        assert len(host.state.snapshot().namespaces["docs"]) == 100
    out, err = capsys.readouterr()
    if policy == "fail":
        (line,) = [line for line in err.splitlines() if line.startswith("vectordb-beam: ")]
        assert line.startswith("vectordb-beam: WriteFailed: ") and "200 of 300 rows failed" in line
        assert "staged rows were not imported" in line
        return
    assert "written:  100 of 300 rows (200 failed)" in out
    # the dead-letter file holds no letter: Pinecone does not say which staged rows it left out
    assert "dead letters:" not in out
