"""A flag ``vectordb-load`` does not take: its argparse line said only "unrecognized arguments", although
``--namespce`` is one letter from its ``--namespace``; ``vectordb-beam`` suggested the flag meant. Both
commands now say it in the same words (``connector/cli.py`` ``flag_advice``), and never quote a value."""

from __future__ import annotations

import pytest

from vectordb.spark.load import parse_args


def refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("--namespce", "did you mean --namespace?"),  # its own flag, not --option namespace=VALUE
        ("--dead_leter_path", "did you mean --dead-letter-path?"),  # - and _ alike
        ("--colection=docs", "did you mean --collection?"),
        ("--batch-size", "a connector option goes in --option batch_size=VALUE"),
        ("--max-concurency", "did you mean --option max_concurrency=VALUE?"),
    ],
)
def test_load_suggests_the_flag_or_the_option_meant(
    typed: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    last = refusal(["--sample", "5", typed, "sk-not-shown"], capsys)
    assert last == f"vectordb-load: error: unrecognized argument {typed.split('=')[0]}: {says}"


def test_load_quotes_no_value_when_nothing_is_near(capsys: pytest.CaptureFixture[str]) -> None:
    last = refusal(["--sample", "5", "--zzzzqqq=sk-secret-1", "sk-secret-2"], capsys)
    assert last == (
        "vectordb-load: error: unrecognized arguments: '--zzzzqqq=***', 1 value not shown (it may be a key) "
        "(flags start with --, and --option takes KEY=VALUE as one word)"
    )
    assert "sk-secret" not in last


def test_both_commands_share_the_words() -> None:
    from vectordb.connector.cli import flag_advice

    assert flag_advice("--namespce", ["--sample", "--dead_letters"]) == (
        "unrecognized argument --namespce: did you mean --option namespace=VALUE?"
    )
    assert flag_advice("--dead-leters", ["--sample", "--dead_letters"]) == (
        "unrecognized argument --dead-leters: did you mean --dead_letters?"
    )
    assert flag_advice("--zzzzqqq", ["--sample"]) is None


@pytest.mark.parametrize(
    ("typed", "flag"), [("--api-key", "--api-key-env NAME"), ("--embed_api_key", "--embed-api-key-env NAME")]
)
def test_a_key_typed_after_a_flag_of_its_own_name_is_refused_naming_the_way(
    typed: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--api-key KEY``: argparse took the prefix for ``--api-key-env`` and the key for a variable's name,
    so the job started Spark and then failed on a variable that is not set. Prefixes are not flags now,
    and the refusal names the flag that takes a key's place (a key in a command line shows in ps)."""
    last = refusal(["--sample", "5", typed, "pcsk_7xYzSecret0"], capsys)
    assert last == (
        f"vectordb-load: error: unrecognized argument {typed}: a key is not given in the command line (ps "
        f"and the shell's history show it): give {flag}, NAME the environment variable holding it"
    )


def test_vectordb_beam_names_its_own_ways_for_a_key() -> None:
    from vectordb.connector.cli import flag_advice

    said = flag_advice("--api-key", ["--sample", "--api_key_secret"])
    assert said is not None and "give --option api_key_env=NAME or --api_key_secret SPEC" in said
