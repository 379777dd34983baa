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
