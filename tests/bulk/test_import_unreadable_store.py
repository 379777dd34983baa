"""An import_uri the executors can write but Pinecone cannot read (it reads s3://, gs:// and Azure's https://):
s3a://, gcs://, wasbs://, hdfs://, fsspec's memory://. Refused on the driver, naming import_source_uri, before
anything is staged; before, every row was staged and the write failed when Pinecone refused the import's start."""

from __future__ import annotations

import fsspec
import pytest

from tests.bulk.test_pinecone_import import client_for, rows
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import ConfigError
from vectordb.connector.backends.pinecone_import import check_import, import_data, source_uri
from vectordb.connector.staging import Folder

UNREADABLE = [
    "s3a://bucket/imports",
    "s3n://bucket/imports",
    "gcs://bucket/imports",
    "hdfs://nn:8020/imports",
    "memory://bucket/imports",
]


class _Options:
    import_source_uri: str | None = None


@pytest.mark.parametrize("uri", [*UNREADABLE, "wasbs://c@acct.blob.core.windows.net/imports"])
def test_source_uri_refuses_a_scheme_pinecone_cannot_read_naming_import_source_uri(uri: str) -> None:
    with pytest.raises(ConfigError, match=r"^option import_source_uri: "):
        source_uri(Folder.parse(uri, "import_uri"), _Options(), "job-1")
    given = _Options()
    given.import_source_uri = "s3://bucket/imports/"
    assert source_uri(Folder.parse(uri, "import_uri"), given, "job-1") == "s3://bucket/imports/job-1/"


@pytest.mark.parametrize("uri", ["s3://bucket/imports", "gs://bucket/imports"])
def test_the_schemes_pinecone_reads_pass(uri: str) -> None:
    assert source_uri(Folder.parse(uri, "import_uri"), _Options(), "job-1") == f"{uri}/job-1/"


def test_a_memory_store_is_refused_by_the_driver_check_before_anything_is_staged() -> None:
    fs = fsspec.filesystem("memory")
    with PineconeImportServer(store_opener()) as server:
        with client_for(server, "memory://unreadable/imports", namespace="docs") as client:
            with pytest.raises(ConfigError) as info:
                check_import(client)
            message = str(info.value)
            assert "option import_source_uri" in message and "memory://" in message, message
            with pytest.raises(ConfigError, match="option import_source_uri"):
                import_data(client, rows(10))
        assert server.imports.all() == []
    assert not fs.exists("/unreadable/imports")  # nothing staged, not even the folder made
