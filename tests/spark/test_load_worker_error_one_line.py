"""An error only the data source's checks find (they run in a Python worker Spark starts, which knows the
input's columns) comes back as the text of Spark's own exception, the worker's trace inside; the job prints
the error alone, exit 2. A misspelt ``--option`` no longer gets that far (``check_options`` refuses it
before Spark starts), so a column the input lacks is the error here."""

from __future__ import annotations

from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.spark.load import main

LINE = "ConfigError: option metadata_columns: no column 'nope' in the input (columns: id, values, title)"


def test_a_connector_error_in_sparks_python_worker_is_one_line_and_status_2(
    spark: Any, grpc_server: ServerHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--sample", "10", "--dim", "4", "--uri", grpc_server.uri, "--option", "metadata_columns=nope"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"vectordb-load: {LINE} (--debug shows the trace)"]
    assert main([*argv, "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last):" in err and "AnalysisException" in err
    assert err.splitlines()[-1] == f"vectordb-load: {LINE}"
    assert grpc_server.arrived().final == {}
