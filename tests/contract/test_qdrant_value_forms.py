"""Qdrant's gRPC payload is ``protowire.encode_value`` with Qdrant's field numbers: a value it has no form
for fails its row over both transports (the same payload both ways), and the other rows are written."""

from __future__ import annotations

import orjson
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_payload_value_with_no_value_form_fails_its_row_on_both_transports(
    qdrant: QdrantServer, transport: str
) -> None:
    # an orjson.Fragment passes the rows' checks (orjson writes it as it is): REST stored its JSON and
    # gRPC its repr, '<orjson.Fragment object at 0x...>'
    collection = f"fragment_{transport}"
    rows = [
        {"id": 1, "values": [1.0, 0, 0], "metadata": {"raw": orjson.Fragment(b'{"a":1}')}},
        {"id": 2, "values": [1.0, 0, 0], "metadata": {"deep": [1, {"x": orjson.Fragment(b"2")}]}},
        {"id": 3, "values": [1.0, 0, 0], "metadata": {"n": 3, "t": ["a"]}},
    ]
    with connect(qdrant.uri(transport, collection), create=True, on_error="report") as client:
        report = client.write(rows)
    assert (report.written, report.failed) == (1, 2), report
    assert {f.ids[0]: f.error for f in report.failures} == {
        "1": "metadata 'raw': a Fragment has no protocol-buffers Value form; Qdrant's gRPC payload cannot hold it",
        "2": "metadata 'deep': a Fragment has no protocol-buffers Value form; Qdrant's gRPC payload cannot hold it",
    }
    points = qdrant.store.points(collection)
    assert list(points) == [3] and points[3].payload == {"n": 3, "t": ["a"]}
