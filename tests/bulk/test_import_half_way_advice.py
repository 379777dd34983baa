"""An import that fails half way under ``on_error=fail`` ends its error with advice that can be followed: what
it imported stays whatever ``on_error`` says, and another import into the namespace (which now exists) is
refused, so the rows go with ``write_mode=upsert`` (not "set on_error='report' to keep the rows that landed")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bulk.test_pinecone_import import client_for, rows
from tests.servers.pinecone_control import ImportScript, PineconeImportServer, store_opener
from vectordb.connector import WriteFailed
from vectordb.connector.backends.pinecone_import import import_data
from vectordb.connector.policy import HINT, enforce
from vectordb.connector.report import BatchFailure, WriteReport


def test_an_import_failed_half_way_advises_upsert_not_another_on_error(tmp_path: Path) -> None:
    with PineconeImportServer(store_opener()) as server:
        server.imports.set_script(ImportScript(fail_after_rows=4))
        with (
            client_for(server, str(tmp_path), namespace="docs") as client,
            pytest.raises(WriteFailed) as info,
        ):
            import_data(client, rows(10))
    message = str(info.value)
    assert message.endswith(
        "write the same rows with write_mode=upsert (an upsert by id replaces the rows already imported)."
    ), message
    assert "on_error='report'" not in message and HINT not in message


def test_an_upsert_that_fails_keeps_the_on_error_advice() -> None:
    report = WriteReport(
        written=3, failed=1, failures=[BatchFailure(ids=("a",), error="bad", error_type="Invalid")]
    )
    with pytest.raises(WriteFailed) as info:
        enforce(report, "fail", "db")
    assert str(info.value).endswith(HINT)
