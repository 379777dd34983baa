"""The Databricks notebook (``examples/databricks/ingest_vectors.py``) shows the report of the job it
just ran. Its cell read the last report by name, but names are ``job-<random id>``: after a few jobs
into one ``report_path`` it showed some earlier job's. The cell runs here as it is, on reports that real
jobs wrote."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

from tests.servers.fixtures import ServerHandle

NOTEBOOK = Path(__file__).parents[2] / "examples" / "databricks" / "ingest_vectors.py"
MAX_JOBS = 12


def report_cell() -> str:
    """The notebook's cell that prints the latest report (``volume`` is its only input)."""
    cells = NOTEBOOK.read_text().split("# COMMAND ----------")
    (cell,) = [c for c in cells if "latest" in c and "/reports" in c and "MAGIC" not in c]
    return cell


def test_the_notebook_shows_the_report_of_the_job_that_ran_last(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    ran: list[str] = []  # report names, in the order the jobs ran
    for k in range(MAX_JOBS):  # job k writes k + 1 rows: its summary says which it was
        rows = [(f"j{k}-{i}", [1.0, 2.0, 3.0, 4.0], f"job {k}") for i in range(k + 1)]
        df = spark.createDataFrame(rows, "id string, values array<float>, title string")
        before = set(os.listdir(reports)) if reports.is_dir() else set()
        df.write.format("vectordb").option("uri", grpc_server.uri).option("report_path", str(reports)).mode(
            "append"
        ).save()
        (name,) = set(os.listdir(reports)) - before
        ran.append(name)
        if len(ran) > 1 and max(ran) != name:  # the last job's name is not the greatest: name order fails
            break
    assert max(ran) != ran[-1], f"{len(ran)} jobs' names all sorted in run order"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(report_cell(), {"volume": str(tmp_path)})
    jobs = len(ran)
    assert out.getvalue().startswith(f"OK: {jobs}/{jobs} written, 0 failed"), (out.getvalue(), ran)
