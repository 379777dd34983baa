"""import_uri on a local folder (a mount such as /dbfs/...) needs import_source_uri: the bucket behind it.

Pinecone reads only object storage. Before, a job with a mount and no import_source_uri staged every row,
then told Pinecone ``file:///dbfs/...`` and failed at the import's start; it is refused on the driver now,
before anything is staged, naming import_source_uri. The tests' index host on loopback reads local folders
(tests/servers/pinecone_control.py), so the local-folder tests keep working.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bulk.test_pinecone_import import assert_imported_exactly, client_for, rows
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import ConfigError, ConnectorError, connect
from vectordb.connector.backends.pinecone_import import import_data

REMOTE = "pinecone://192.0.2.1:443"  # a documentation address: not loopback, nothing answers there


@pytest.mark.parametrize("form", ["path", "file://"])
def test_a_local_import_uri_without_import_source_uri_is_refused_before_staging(
    tmp_path: Path, form: str
) -> None:
    uri = str(tmp_path / "mnt") if form == "path" else f"file://{tmp_path}/mnt"
    options = {"api_key": "k", "namespace": "docs", "write_mode": "import", "import_uri": uri, "dimension": 4}
    with connect(REMOTE, **options) as client, pytest.raises(ConfigError) as info:  # type: ignore[arg-type]
        client.bulk.check(client)  # type: ignore[union-attr]
    message = str(info.value)
    assert message.startswith("option import_source_uri: import_uri ") and "is a local folder" in message
    assert "import_source_uri=s3://" in message
    assert not (tmp_path / "mnt").exists()  # nothing staged, not even the folder made


def test_a_local_import_uri_with_import_source_uri_passes_that_check(tmp_path: Path) -> None:
    options = {
        "api_key": "k",
        "namespace": "docs",
        "write_mode": "import",
        "import_uri": str(tmp_path / "mnt"),
        "import_source_uri": "s3://bucket/imports",
        "dimension": 4,
        "timeout_s": 0.5,
        "max_retries": 0,
    }
    with connect(REMOTE, **options) as client, pytest.raises(ConnectorError) as info:  # type: ignore[arg-type]
        client.bulk.check(client)  # type: ignore[union-attr]
    assert "import_source_uri" not in str(info.value)  # it got as far as asking the index host


def test_the_loopback_test_host_still_imports_a_local_folder(tmp_path: Path) -> None:
    with PineconeImportServer(store_opener()) as server:
        with client_for(server, str(tmp_path / "imports"), namespace="docs") as client:
            assert import_data(client, rows(5)).written == 5
        assert_imported_exactly(server, rows(5), "docs")
