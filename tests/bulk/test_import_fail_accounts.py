"""``on_error=fail`` imports: the error says what happened, and its report accounts for every row given.

Rows refused while staging stop the import before it starts: its report counts the rows that were staged
but never imported as failures, so written + failed is the input. An import that imports
part of the rows names none of the rest: the error then names no ids rather than an empty list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bulk.test_pinecone_import import client_for, rows, with_nan
from tests.servers.pinecone_control import ImportScript, PineconeImportServer, store_opener
from vectordb.connector import WriteFailed
from vectordb.connector.backends.pinecone_import import import_data


def test_rows_refused_while_staging_leave_no_row_out_of_the_errors_report(tmp_path: Path) -> None:
    with (
        PineconeImportServer(store_opener()) as server,
        client_for(server, str(tmp_path), namespace="docs") as client,
        pytest.raises(WriteFailed) as info,
    ):
        import_data(client, with_nan(rows(100), 5))
    report = info.value.report
    assert (report.written, report.failed) == (0, 100), report.summary()
    assert report.failed_ids == ["v5"]  # the refused row is named; the 99 staged ones are counted
    (not_imported,) = [f for f in report.failures if f.error_type == "NotImported"]
    assert not_imported.unnamed == 99 and "refused while staging" in not_imported.error
    assert "1 of 100 rows were refused while staging (first ids: v5)" in str(info.value)


def test_an_import_that_imports_part_names_no_ids_and_says_no_empty_list(tmp_path: Path) -> None:
    with PineconeImportServer(store_opener()) as server:
        server.imports.set_script(ImportScript(fail_after_rows=40))
        with (
            client_for(server, str(tmp_path), namespace="docs") as client,
            pytest.raises(WriteFailed) as info,
        ):
            import_data(client, rows(100))
    message = str(info.value)
    assert message.split(";")[0].endswith(": 60 of 100 rows failed"), message
    assert "first ids" not in message
    assert (info.value.report.written, info.value.report.failed) == (40, 60)
