"""``vectordb-load --on-error report`` with failed rows: they are counted and kept nowhere, and the job's
last line said nothing of how to keep them (README: "its last line says which flags keep them");
``vectordb-beam`` said it. Both now end with the same words (``connector/cli.py`` ``not_kept``), each
naming its own flags and the files they write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.spark.load import main


def test_report_names_the_flags_that_keep_failed_rows_and_where_they_go(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grpc_server.script(reject_ids=frozenset({"11", "12"}))
    argv = ["--sample", "50", "--dim", "4", "--uri", grpc_server.uri]
    assert main([*argv, "--on-error", "report"]) == 1
    out, err = capsys.readouterr()
    assert "written:  48 of 50 rows (2 failed)" in out
    assert err.strip().splitlines()[-1] == (
        "vectordb-load: 2 rows failed and no dead letters keep them. Give --dead-letter-path DIR to keep "
        "the failed rows, with their reasons, in DIR/job-*-part-*.parquet."
    )

    # the flags it names keep them, in the files it names; and then it says nothing of keeping them
    letters = tmp_path / "letters"
    assert main([*argv, "--on-error", "dead_letter", "--dead-letter-path", str(letters)]) == 1
    out, err = capsys.readouterr()
    assert "dead letters: 1 file" in out or "dead letters: 2 files" in out
    assert sorted(letters.glob("job-*-part-*.parquet")) == sorted(letters.glob("*.parquet")) != []
    assert "no dead letters keep them" not in err
