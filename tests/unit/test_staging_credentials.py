"""Which folder URIs hold a credential (``staging.refuse_credentials``): options are logged and shown.

ABFS and WASB URIs name the container before the ``@`` (``abfss://container@account.dfs.core.windows.net``),
no credential: they are accepted, a password or a SAS signature in them refused. Elsewhere a user (an access
key id) is refused too, and a password is found up to the last ``@``, so a secret key holding an unencoded
``/`` (AWS secret keys often do), which urlsplit reads as the end of the host, is refused all the same.
"""

from __future__ import annotations

import pytest

from vectordb.connector import ConfigError
from vectordb.connector.client import resolve_options
from vectordb.connector.staging import Folder

SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCY"


@pytest.mark.parametrize(
    "uri",
    [
        "abfss://container@account.dfs.core.windows.net/dead-letters",
        "abfs://container@account.dfs.core.windows.net/dead-letters",
        "wasbs://container@account.blob.core.windows.net/reports",
        "WASB://container@account.blob.core.windows.net/reports",
        "s3://bucket/a@b/dead",  # an @ in a path is no user
        # a ":" and an "@" in a path are no password: a port, a time, a file name (they were refused)
        "hdfs://namenode:8020/letters@v2",
        "s3://bucket/runs/2026-11-26T10:00@eu/x",
        "gs://bucket/x:y@z",
    ],
)
@pytest.mark.parametrize("option", ["dead_letter_path", "report_path"])
def test_a_container_at_an_account_is_no_credential(uri: str, option: str) -> None:
    assert Folder.parse(uri, option).uri == uri


def test_an_abfs_import_uri_is_accepted() -> None:
    uri = "abfss://container@account.dfs.core.windows.net/imports"
    options = resolve_options(
        {"uri": "pinecone://idx.svc.pinecone.io", "write_mode": "import", "import_uri": uri}
    )
    assert options.import_uri == uri  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "uri",
    [
        f"abfss://container:{SECRET}@account.dfs.core.windows.net/dead",
        f"wasbs://container@account.blob.core.windows.net/dead?sv=2022-11-02&sig={SECRET}",
        f"s3://AKIAIOSFODNN7EXAMPLE:{SECRET}@bucket/dead",  # the secret holds an unencoded "/"
        f"s3://AKIAIOSFODNN7EXAMPLE:{SECRET.replace('/', '#')}@bucket/dead",
        "s3://AKIAIOSFODNN7EXAMPLE@bucket/dead",
        f"gs://bucket/dead?token={SECRET}",
    ],
)
def test_a_password_a_user_or_a_signature_is_refused_without_being_quoted(uri: str) -> None:
    with pytest.raises(ConfigError, match="option dead_letter_path: holds a credential") as refused:
        Folder.parse(uri, "dead_letter_path")
    assert SECRET[:8] not in str(refused.value) and "AKIA" not in str(refused.value)
