"""Qdrant rows whose payload the connector cannot write as given: metadata under the connector's own payload
keys (the namespace's, the original id's) fails the row with a reason naming the key and the option, instead
of being written over or moving the point into another namespace."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.ids import point_id
from vectordb.connector.transports.base import forget_shared

TRANSPORTS = ["rest", "grpc"]


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


def _write(server: QdrantServer, transport: str, collection: str, rows: object, **options: object) -> object:
    with connect(server.uri(transport, collection), create=True, on_error="report", **options) as client:  # type: ignore[arg-type]
        return client.write(rows)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_metadata_under_the_original_id_key_fails_its_text_id_row(
    server: QdrantServer, transport: str
) -> None:
    rows = [
        {"id": "doc-1", "values": [1.0, 0, 0], "metadata": {"original_id": "SRC-42"}},
        {"id": "doc-2", "values": [1.0, 0, 0], "metadata": {"original_id": "doc-2"}},  # the same: kept
        {"id": 7, "values": [1.0, 0, 0], "metadata": {"original_id": "SRC-7"}},  # an id kept: no clash
    ]
    report = _write(server, transport, f"oid_{transport}", rows)
    assert (report.written, report.failed) == (2, 1)  # type: ignore[attr-defined]
    (failure,) = report.failures  # type: ignore[attr-defined]
    assert failure.ids == ("doc-1",)
    assert "'original_id'" in failure.error and "option original_id_key" in failure.error
    points = server.store.points(f"oid_{transport}")
    assert points[7].payload == {"original_id": "SRC-7"}
    assert point_id("doc-1") not in points


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("namespace", [None, "docs"])
def test_metadata_under_the_namespace_key_fails_its_row(
    server: QdrantServer, transport: str, namespace: str | None
) -> None:
    collection = f"ns_{transport}_{namespace}"
    rows = [
        {"id": 1, "values": [1.0, 0, 0], "metadata": {"namespace": "tenantB"}},
        {"id": 2, "values": [1.0, 0, 0], "metadata": {"namespace": namespace}},  # its own namespace: kept
    ]
    report = _write(server, transport, collection, rows, **({"namespace": namespace} if namespace else {}))
    assert [f.ids for f in report.failures] == [("1",)]  # type: ignore[attr-defined]
    error = report.failures[0].error  # type: ignore[attr-defined]
    assert "'namespace'" in error and "option namespace_key" in error
    assert list(server.store.points(collection)) == [2]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_arrow_columns_named_as_the_payload_keys_fail_their_rows(
    server: QdrantServer, transport: str
) -> None:
    table = pa.table(
        {
            "id": ["d1", "d2"],
            "values": pa.array([[1.0, 0, 0], [0, 1.0, 0]], type=pa.list_(pa.float32())),
            "namespace": ["legal", "hr"],
        }
    )
    report = _write(server, transport, f"arrow_{transport}", table)
    assert (report.written, report.failed) == (0, 2)  # type: ignore[attr-defined]
