"""Namespaces an upsert takes but an import cannot (each is a folder of the import): the refusal says what to do.

Pinecone reads one folder per namespace, so a namespace with '/', '.' or '..', or one the staging folders'
names could be taken for, cannot be imported; write_mode=upsert writes it.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from tests.bulk.test_pinecone_import import client_for, rows
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import ConfigError
from vectordb.connector.backends.pinecone_import import import_data

NAMES = ["acme/eu", ".", "..", "_temporary-x"]


@pytest.mark.parametrize("namespace", NAMES)
def test_the_option_namespace_is_refused_pointing_to_upsert(tmp_path: Path, namespace: str) -> None:
    with (
        PineconeImportServer(store_opener()) as server,
        pytest.raises(ConfigError) as info,
        client_for(server, str(tmp_path), namespace=namespace) as client,
    ):
        import_data(client, rows(3))
    message = str(info.value)
    assert message.startswith(f"option namespace: namespace {namespace!r} cannot be a folder of an import"), (
        message
    )
    assert message.endswith("; use write_mode=upsert for such namespaces")


def test_rows_naming_such_namespaces_fail_with_the_same_advice_and_the_rest_are_imported(
    tmp_path: Path,
) -> None:
    table = rows(6, namespaces=["acme/eu", "plain", "_temporary-x"])
    with (
        PineconeImportServer(store_opener()) as server,
        client_for(server, str(tmp_path), namespace_column="tenant", on_error="report") as client,
    ):
        report = import_data(client, table)
        assert (report.written, report.failed) == (2, 4), report
        assert sorted(server.state.snapshot().namespaces) == ["plain"]
    for reason, count in report.reasons():
        assert reason.endswith("; use write_mode=upsert for such namespaces"), reason
        assert count == 2
    assert pa.compute.sum(pa.compute.equal(table["tenant"], "plain")).as_py() == 2
