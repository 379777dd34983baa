"""py4j's DEBUG lines blanked an option's value by the option's name and a URI's ``user:password@``, but not
a password given as a query parameter: ``.option("uri", "postgresql://…?password=…")`` (README's uri row
allows it), a ``?api_key=`` or a signed URL's ``sig=`` stayed in clear. Every argument line now goes through
``connector.keys.without_password`` as well."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

import vectordb.spark  # noqa: F401  (installs the filter, as any use of the package does)


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def py4j_debug() -> Iterator[_Kept]:
    kept = _Kept()
    loggers = [logging.getLogger(name) for name in ("py4j.clientserver", "py4j.java_gateway")]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.DEBUG)
        log.addHandler(kept)
    try:
        yield kept
    finally:
        for log, level in zip(loggers, levels, strict=True):
            log.removeHandler(kept)
            log.setLevel(level)


def test_query_parameter_passwords_are_blanked_in_py4j_debug_lines(spark: Any, py4j_debug: _Kept) -> None:
    (
        spark.range(1)
        .write.format("vectordb")
        .option("uri", "postgresql://db.internal:5432/vectors?user=loader&password=HUNTER-QUERY-1&table=t")
        .option("dead_letter_path", "https://acct.blob.core.windows.net/c/letters?sv=1&sig=HUNTER-SIG-2")
        .option("embed_url", "https://embed.internal/v1?api_key=HUNTER-KEY-3")
        .option("namespace", "docs-visible")
    )
    text = "\n".join(py4j_debug.lines)
    assert "docs-visible" in text  # the log is there: other values stay readable
    assert "postgresql://db.internal:5432/vectors?user=loader&password=***&table=t" in text
    assert "sig=***" in text and "api_key=***" in text
    for secret in ("HUNTER-QUERY-1", "HUNTER-SIG-2", "HUNTER-KEY-3"):
        assert secret not in text
