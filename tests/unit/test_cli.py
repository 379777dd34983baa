"""What both command-line jobs share (``vectordb.connector.cli``): one line for a ``ConnectorError``, found
in the exception, the exceptions it was raised from, or the traceback text another process sent back;
and the closing summary."""

from __future__ import annotations

import pytest

from vectordb.connector.cli import connector_error_line, option_pairs, run_command, summary
from vectordb.connector.errors import ConfigError, ConnectError, WriteFailed
from vectordb.connector.keys import key_from
from vectordb.connector.report import WriteReport

SPARK_TEXT = """[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source writer: Traceback (most recent call last):
  File "/x/vectordb/spark/plan.py", line 114, in _probe_embedding
    raise ConnectError(f"{self.where}: cannot connect: {exc}") from None
vectordb.connector.errors.ConnectError: POST http://127.0.0.1:9/v1/embeddings: cannot connect: [Errno 111] Connection refused
 SQLSTATE: 38000"""


def test_a_connector_error_is_its_class_and_message_on_one_line() -> None:
    assert connector_error_line(ConfigError("option uri:\n  bad")) == "ConfigError: option uri: bad"


def test_it_is_found_where_it_was_raised_from_but_not_where_another_error_was_raised_while_handling_it() -> (
    None
):
    try:
        try:
            raise ConnectError("refused")
        except ConnectError as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as outer:
        assert connector_error_line(outer) == "ConnectError: refused"
    try:
        try:
            raise ConnectError("refused")
        except ConnectError:
            raise KeyError("a bug while handling it") from None
    except KeyError as bug:
        assert connector_error_line(bug) is None


def test_in_the_text_another_process_sent_back_the_last_connector_error_counts() -> None:
    assert connector_error_line(RuntimeError(SPARK_TEXT)) == (
        "ConnectError: POST http://127.0.0.1:9/v1/embeddings: cannot connect: [Errno 111] Connection refused"
    )
    # the worker's exception alone, after Spark's words (what the data source sends for a ConnectorError)
    alone = "[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source writer: "
    alone += "vectordb.connector.errors.ConfigError: option uri is required\n SQLSTATE: 38000"
    assert connector_error_line(RuntimeError(alone)) == "ConfigError: option uri is required"
    # names that only look like one: another package's error, a vectordb name that is no ConnectorError
    assert connector_error_line(RuntimeError("x\nfoo.errors.ConfigError: no")) is None
    assert connector_error_line(RuntimeError("x\nvectordb.connector.report.WriteReport: no")) is None


def test_run_command_prints_the_line_and_returns_2_or_1_when_rows_failed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def bad_option() -> int:
        raise ConfigError("option batch_size: expected at least 1")

    def rows_failed() -> int:
        raise WriteFailed("3 of 10 rows failed", WriteReport())

    assert run_command("vectordb-load", lambda: 0) == 0
    assert run_command("vectordb-load", bad_option) == 2
    assert capsys.readouterr().err == (
        "vectordb-load: ConfigError: option batch_size: expected at least 1 (--debug shows the trace)\n"
    )
    assert run_command("vectordb-beam", rows_failed) == 1
    assert run_command("vectordb-beam", bad_option, debug=True) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "vectordb-beam: WriteFailed: 3 of 10 rows failed (--debug shows the trace)"
    assert "Traceback (most recent call last)" in err and err.endswith(
        "vectordb-beam: ConfigError: option batch_size: expected at least 1\n"
    )
    with pytest.raises(ZeroDivisionError):  # anything else is a bug: its trace stays
        run_command("vectordb-load", lambda: 1 // 0)


def test_an_interrupt_is_one_line_and_status_130(capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    assert run_command("vectordb-load", interrupted) == 130
    err = capsys.readouterr().err
    assert err.startswith("vectordb-load: interrupted") and err.count("\n") == 1
    with pytest.raises(KeyboardInterrupt):  # --debug: the trace
        run_command("vectordb-load", interrupted, debug=True)


def test_an_interrupt_a_runner_wrapped_is_one_line_and_status_130_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Beam's runner re-raises a Ctrl-C in a bundle as a RuntimeError holding its text (a 160-line trace
    and status 1, the status of failed rows); a cause or context that is one counts too."""

    def beams() -> int:
        raise RuntimeError("KeyboardInterrupt [while running 'Write/Write Arrow/ParDo(_WriteFn)']")

    def caused() -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("the bundle failed") from exc

    for job in (beams, caused):
        assert run_command("vectordb-beam", job) == 130
        err = capsys.readouterr().err
        assert err.startswith("vectordb-beam: interrupted") and err.count("\n") == 1
    with pytest.raises(RuntimeError):  # --debug: the trace
        run_command("vectordb-beam", beams, debug=True)


def test_the_summary() -> None:
    counts = {"written": 9_000, "failed": 1_000, "requests": 40, "retries": 3, "bytes_sent": 12_000_000}
    text = summary(
        counts,
        target="qdrant://h:6333/docs",
        wall_s=2.0,
        stage_s=1.5,
        tasks=4,
        reasons=[("Rejected: bad vector", 999), ("Rejected: too long", 1)],
        dead_letters=["out/dead-letters-00000-of-00001.jsonl"],
    )
    assert text.splitlines() == [
        "target:   qdrant://h:6333/docs",
        "written:  9,000 of 10,000 rows (1,000 failed)",
        "speed:    4,500 rows/s, 6.0 MB/s over 2.0 s (the write stage alone: 1.5 s)",
        "traffic:  40 requests, 3 retries, 0 throttled, 12.0 MB, 4 tasks",
        "failed:   999 x Rejected: bad vector",
        "failed:   1 x Rejected: too long",
        "dead letters: 1 file, e.g. out/dead-letters-00000-of-00001.jsonl",
    ]


def test_an_option_without_a_key_is_refused_without_quoting_it() -> None:
    """``--option api_key:sk-…`` (a colon for the =) was quoted whole in the error, the key with it."""
    assert option_pairs(["batch_size=10", " namespace =docs"]) == {"batch_size": "10", "namespace": "docs"}
    for item in ("api_key:sk-live-SECRET123", "=sk-live-SECRET123"):
        with pytest.raises(ConfigError, match="--option takes KEY=VALUE") as refused:
            option_pairs(["batch_size=10", item])
        assert "SECRET123" not in str(refused.value)


def test_a_key_given_as_its_variables_name_is_not_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VDB_NOT_SET", raising=False)
    with pytest.raises(ConfigError, match="environment variable 'VDB_NOT_SET' is not set"):
        key_from(None, "VDB_NOT_SET")
    with pytest.raises(ConfigError, match="not a variable's name") as refused:
        key_from(None, "sk-proj-SECRET123-pasted-here")
    assert "SECRET123" not in str(refused.value)
