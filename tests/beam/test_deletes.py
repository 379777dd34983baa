"""Deletes through ``WriteToVectorDB``: elements say what they are for in an ``op`` key or field (or the
column option ``op_column`` names), on the DirectRunner's in-memory runner against the Pinecone gRPC
test server."""

from __future__ import annotations

from typing import Any

import apache_beam as beam
import numpy as np

from tests.servers.fixtures import ServerHandle

from .conftest import FAILED, counters, run_sink

DIM = 4


def vector(i: int) -> np.ndarray:
    return np.full(DIM, float(i), dtype=np.float32)


def run(server: ServerHandle, elements: list[Any], **options: Any) -> Any:
    return run_sink(server.uri, elements, namespace="docs", **options)


def test_one_pipeline_of_upserts_and_deletes(grpc_server: ServerHandle) -> None:
    run(grpc_server, [{"id": f"d{i}", "values": vector(i), "title": f"t{i}"} for i in range(20)])
    FAILED.clear()
    elements: list[Any] = [{"id": f"d{i}", "op": "delete"} for i in range(5)]  # no vector needed
    elements += [{"id": f"d{i}", "op": "Delete", "values": "junk", "metadata": 3} for i in range(5, 8)]
    elements += [beam.Row(id=f"d{i}", values=vector(100 + i), op="update", title="changed") for i in (8, 9)]
    elements += [{"id": "new", "values": vector(7), "op": None}]  # no op: an upsert
    elements += [{"id": "d10", "values": vector(10), "op": "merge"}]  # names no op: a dead letter
    elements += [{"id": "absent", "op": "delete"}]
    outcome = run(grpc_server, elements)

    arrived = grpc_server.arrived()
    assert arrived.ids("docs") == {f"d{i}" for i in range(8, 20)} | {"new"}
    assert arrived.vector("d8", "docs").values.tobytes() == vector(108).tobytes()
    assert arrived.vector("d8", "docs").metadata == {"title": "changed"}  # op is no metadata
    assert arrived.vector("d10", "docs").metadata == {"title": "t10"}  # unchanged
    assert {d.namespace for d in arrived.deletes} == {"docs"}
    assert sum(len(d.ids) for d in arrived.deletes) == 9
    (letter,) = FAILED
    assert (letter["id"], letter["op"], letter["error_type"]) == ("d10", "merge", "Invalid")
    assert "op 'merge' (column 'op')" in letter["error"]
    got = counters(outcome)
    assert (got["written"], got["deleted"], got["failed"]) == (12, 9, 1)


def test_the_op_column_option_names_another_key(grpc_server: ServerHandle) -> None:
    run(grpc_server, [{"id": "a", "values": vector(1)}, {"id": "b", "values": vector(2)}])
    elements = [
        {"id": "a", "change": "DELETE"},
        {"id": "c", "values": vector(3), "change": "insert", "op": "x"},
    ]
    outcome = run(grpc_server, elements, op_column="change")
    arrived = grpc_server.arrived()
    assert arrived.ids("docs") == {"b", "c"}
    assert arrived.vector("c", "docs").metadata == {"op": "x"}  # "op" is metadata when the op is elsewhere
    assert counters(outcome)["deleted"] == 1


def test_an_op_inside_a_rows_metadata_is_data(grpc_server: ServerHandle) -> None:
    """Only the element's own op field says what it is for: an ``op`` key in its metadata is stored as it
    is, whatever it says (it deleted the row, refused it, or was taken out of the metadata)."""
    run(grpc_server, [{"id": "m1", "values": vector(1), "title": "old"}])
    FAILED.clear()
    elements = [
        {"id": "m1", "values": vector(11), "metadata": {"op": "delete", "title": "surgery log"}},
        {"id": "m2", "values": vector(2), "metadata": {"op": "surgery"}},
        {"id": "m3", "values": vector(3), "metadata": '{"op": "insert", "title": "y"}'},
        {"id": "m4", "values": vector(4), "change": "upsert", "metadata": {"change": "delete"}},
    ]
    outcome = run(grpc_server, elements[:3])
    run(grpc_server, elements[3:], op_column="change")
    arrived = grpc_server.arrived()
    assert arrived.ids("docs") == {"m1", "m2", "m3", "m4"} and not arrived.deletes and not FAILED
    assert arrived.vector("m1", "docs").metadata == {"op": "delete", "title": "surgery log"}
    assert arrived.vector("m1", "docs").values.tobytes() == vector(11).tobytes()
    assert arrived.vector("m2", "docs").metadata == {"op": "surgery"}
    assert arrived.vector("m3", "docs").metadata == {"op": "insert", "title": "y"}
    assert arrived.vector("m4", "docs").metadata == {"change": "delete"}
    assert counters(outcome)["written"] == 3 and "deleted" not in counters(outcome)  # never updated


def test_a_chunks_metadata_op_is_data_unless_op_column_names_it(grpc_server: ServerHandle) -> None:
    """A ``Chunk`` has no keys but its metadata's: ``op`` there is data (stored, never a delete), and a
    ``Chunk`` deletes only through the metadata key that option ``op_column`` names."""
    from apache_beam.ml.rag.types import Chunk, Content, Embedding

    def chunk(cid: str, i: int, metadata: dict[str, Any]) -> Chunk:
        embedding = Embedding(dense_embedding=vector(i).tolist())
        return Chunk(id=cid, content=Content(text=cid), metadata=metadata, embedding=embedding)

    run(grpc_server, [{"id": "gone", "values": vector(9)}])
    FAILED.clear()
    run(grpc_server, [chunk("c1", 1, {"op": "delete"}), chunk("c2", 2, {"op": "surgery"})])
    arrived = grpc_server.arrived()
    assert arrived.ids("docs") == {"gone", "c1", "c2"} and not arrived.deletes and not FAILED
    assert arrived.vector("c1", "docs").metadata == {"op": "delete", "content": "c1"}
    assert arrived.vector("c2", "docs").metadata == {"op": "surgery", "content": "c2"}
    outcome = run(grpc_server, [chunk("gone", 0, {"change": "delete"})], op_column="change")
    assert grpc_server.arrived().ids("docs") == {"c1", "c2"}
    assert counters(outcome)["deleted"] == 1
