"""A namespace over 255 bytes with import_uri a local folder (a mount such as /dbfs/... or /Volumes/...), whose
file and folder names hold at most 255 bytes: each namespace is a folder of the import, so such a row fails alone,
pointing to write_mode=upsert (which writes it: Pinecone takes longer namespaces), as a name with '/' does; and the
option ``namespace`` is refused on the driver. Before, the row's file could not be made and the whole write
stopped with StagingFailed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bulk.test_pinecone_import import client_for, rows
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import ConfigError
from vectordb.connector.backends.pinecone_import import check_import, import_data

LONG = "n" * 256  # Pinecone namespaces are ASCII: 256 bytes


def test_a_row_whose_namespace_is_too_long_for_a_local_folder_fails_alone(tmp_path: Path) -> None:
    table = rows(9, namespaces=["docs", LONG, "m" * 255])
    with (
        PineconeImportServer(store_opener()) as server,
        client_for(server, str(tmp_path), namespace_column="tenant", on_error="report") as client,
    ):
        report = import_data(client, table)
        assert (report.written, report.failed) == (6, 3), report
        assert sorted(server.state.snapshot().namespaces) == ["docs", "m" * 255]
    assert report.failed_ids == ["v1", "v4", "v7"]
    ((reason, count),) = report.reasons()
    assert count == 3 and "(256 bytes)" in reason and "at most 255 bytes" in reason, reason
    assert reason.endswith("; use write_mode=upsert for such namespaces"), reason


def test_the_option_namespace_too_long_for_a_local_folder_is_refused_on_the_driver(tmp_path: Path) -> None:
    with (
        PineconeImportServer(store_opener()) as server,
        client_for(server, str(tmp_path / "imports"), namespace=LONG) as client,
        pytest.raises(ConfigError, match=r"^option namespace: namespace .* \(256 bytes\) cannot be a folder"),
    ):
        check_import(client)
    assert not (tmp_path / "imports").exists()
