"""An Arrow id column of the canonical UUID extension type (``extension<arrow.uuid>``, 16-byte storage) is
written as its storage, ``fixed_size_binary(16)``, is: each id its UUID's canonical text, on Qdrant and
Pinecone, REST and gRPC (it was a ``ConfigError`` refusing the whole write, though the same type in a
metadata column was stored as UUID text)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from tests.servers.fixtures import start_server
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

IDS = [uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8"), uuid.UUID(int=1), None]
VECTORS = [[1.0, 0.5, 0.25], [0.5, 1.0, 0.25], [0.25, 0.5, 1.0]]


def _table(id_type: pa.DataType) -> pa.Table:
    raw = [None if u is None else u.bytes for u in IDS]
    ids = pa.array(raw, pa.binary(16)) if id_type == pa.binary(16) else pa.array(raw, id_type)
    return pa.table({"id": ids, "values": pa.array(VECTORS, pa.list_(pa.float32())), "tag": ["a", "b", "c"]})


@pytest.fixture(scope="module")
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as server:
        yield server
    forget_shared()


def _report(report: Any) -> tuple[int, list[tuple[Any, str]]]:
    return report.written, sorted((tuple(f.ids), f.error) for f in report.failures)


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_qdrant_writes_uuid_extension_ids_as_16_byte_binary_ones(
    qdrant: QdrantServer, transport: str
) -> None:
    seen = []
    for name, id_type in (("fsb", pa.binary(16)), ("ext", pa.uuid())):
        collection = f"uuid_ext_{transport}_{name}"
        with connect(qdrant.uri(transport, collection), create=True, on_error="report") as client:
            report = client.write(_table(id_type))
        points = qdrant.store.points(collection)
        seen.append((_report(report), {str(k): p.payload for k, p in points.items()}))
    assert seen[0] == seen[1]
    (written, failures), stored = seen[1]
    assert written == 2 and len(failures) == 1, failures  # the null id: refused with its row
    assert stored == {str(IDS[0]): {"tag": "a"}, str(IDS[1]): {"tag": "b"}}


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_pinecone_writes_uuid_extension_ids_as_16_byte_binary_ones(kind: str) -> None:
    seen = []
    for id_type in (pa.binary(16), pa.uuid()):
        with start_server(kind) as server:
            with connect(server.uri, dimension=3, on_error="report") as client:
                report = client.write(_table(id_type))
            forget_shared()
            stored = server.arrived().namespaces.get("", {})
            seen.append((_report(report), {i: v.metadata for i, v in stored.items()}))
    assert seen[0] == seen[1]
    (written, failures), stored = seen[1]
    assert written == 2 and len(failures) == 1, failures
    assert stored == {str(IDS[0]): {"tag": "a"}, str(IDS[1]): {"tag": "b"}}
