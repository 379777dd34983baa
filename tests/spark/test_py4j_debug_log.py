"""At DEBUG, py4j logs each command it sends to the JVM with its arguments: ``.option("api_key", key)``
put the key in the log, against README's "never logged". ``vectordb.spark`` blanks credential options'
values and URI passwords in those lines; other options stay readable."""

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


def test_option_values_of_credentials_are_blanked_in_py4j_debug_lines(spark: Any, py4j_debug: _Kept) -> None:
    df = spark.range(1)
    (
        df.write.format("vectordb")
        .option("api_key", "sk-PY4J-hunter31")
        .option("embed_api_key", "sk-PY4J-hunter32")
        .option("uri", "postgresql://loader:hunter33@db.internal/vectors?table=t")
        .option("namespace", "docs-visible")
    )
    text = "\n".join(py4j_debug.lines)
    assert "docs-visible" in text  # the log is there: other values stay readable
    assert "sapi_key\ns***" in text and "postgresql://loader:***@db.internal" in text
    for secret in ("hunter31", "hunter32", "hunter33"):
        assert secret not in text
