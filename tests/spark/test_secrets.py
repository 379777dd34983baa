"""Spark's side of a server that echoes keys: the key reaches no exception Spark raises, no dead letter and
no job report (tests/e2e/test_secrets.py checks the connector itself, transport by transport)."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle

from .conftest import vectors_table

KEY = "sk-SPARKECHO-5d1e7b9a3c"


def spark_error(exc: BaseException) -> str:
    """What Spark shows of a failed write: the message, the traceback, the Python worker's text."""
    return "".join(traceback.format_exception(exc)) + str(exc) + repr(exc)


def test_a_key_the_server_echoes_reaches_no_spark_exception_dead_letter_or_report(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    df = spark.createDataFrame(vectors_table(300, 8)).repartition(2)

    def write(**options: str) -> None:
        writer = df.write.format("vectordb").option("uri", grpc_server.uri).option("api_key", KEY)
        for name, value in options.items():
            writer = writer.option(name, value)
        writer.mode("append").save()

    grpc_server.script(api_key="the-right-key", echo_key=True)  # refused on the driver, before any task
    with pytest.raises(Exception, match="UNAUTHENTICATED") as on_driver:
        write()
    grpc_server.script(api_key=KEY, echo_key=True, reject_ids=frozenset({"v5", "v250"}))
    with pytest.raises(Exception, match="WriteFailed") as in_tasks:  # refused in the tasks: on_error=fail
        write()
    write(
        on_error="dead_letter", dead_letter_path=str(tmp_path / "dead"), report_path=str(tmp_path / "reports")
    )
    letters = [r["error"] for r in spark.read.parquet(str(tmp_path / "dead")).collect()]
    (report,) = (tmp_path / "reports").glob("job-*.json")
    echoed = [r for r in grpc_server.arrived().requests if KEY in r.message]
    assert {r.outcome for r in echoed} == {"rejected"}  # the server quoted the key to the tasks
    texts = [spark_error(on_driver.value), spark_error(in_tasks.value), *letters, report.read_text()]
    assert not any(KEY in text or KEY[3:15] in text for text in texts)
    assert "API key: ***" in texts[0] and "API key: ***" in texts[1]  # the echo, blanked
    assert len(letters) == 2 and all("API key: ***" in letter for letter in letters)
