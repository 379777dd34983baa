"""Qdrant ``namespace_mode=shard_key`` with ``namespace_column``: a row whose namespace cell is null or
``""`` names no shard key; it fails alone (``Invalid``, naming the column and the mode), upserts and deletes
alike, and the rows beside it are written. It stopped the whole write with a ``ConfigError`` from the
encoder, mid-write, whatever ``on_error`` said. A write nothing could give a namespace still stops before
any row is sent."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.errors import ConfigError
from vectordb.connector.transports.base import forget_shared

VALUES = [1.0, 0.5, 0.25]
OPTIONS = {
    "create": True,
    "dimension": 3,
    "namespace_mode": "shard_key",
    "namespace_column": "ns",
    "on_error": "report",
}


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _reasons(report: object) -> list[str]:
    return [f.error for f in report.failures]  # type: ignore[attr-defined]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
@pytest.mark.parametrize("cell", [None, ""])
def test_an_upsert_row_without_a_shard_key_fails_alone(
    server: QdrantServer, transport: str, cell: object
) -> None:
    rows = [{"id": i, "values": VALUES, "ns": cell if i == 100 else "t1"} for i in range(300)]
    with connect(server.uri(transport, "c"), batch_size=50, **OPTIONS) as client:
        report = client.write(rows)
    assert (report.written, report.failed) == (299, 1), report
    (failure,) = report.failures
    assert failure.ids == ("100",) and failure.error_type == "Invalid"
    assert "namespace_column 'ns'" in failure.error and "namespace_mode=shard_key" in failure.error
    assert sorted(server.store.points_by_shard("c")) == [("t1", i) for i in range(300) if i != 100]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_an_arrow_delete_row_without_a_shard_key_fails_alone(server: QdrantServer, transport: str) -> None:
    with connect(server.uri(transport, "c"), op_column="op", **OPTIONS) as client:
        assert client.write([{"id": i, "values": VALUES, "op": "upsert", "ns": "t1"} for i in range(4)]).ok
        table = pa.table(
            {
                "id": pa.array([0, 1, 2], pa.int64()),
                "values": pa.array([None, None, None], pa.list_(pa.float32())),
                "op": ["delete", "delete", "delete"],
                "ns": pa.array(["t1", None, "t1"], pa.string()),
            }
        )
        report = client.write(table)
    assert (report.written, report.deleted, report.failed) == (2, 2, 1), report
    (failure,) = report.failures
    assert failure.ids == ("1",) and failure.op == "delete" and failure.error_type == "Invalid"
    assert "namespace_column 'ns'" in failure.error
    assert sorted(server.store.points_by_shard("c")) == [("t1", 1), ("t1", 3)]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_null_cell_takes_the_calls_namespace(server: QdrantServer, transport: str) -> None:
    rows = [{"id": 1, "values": VALUES, "ns": None}, {"id": 2, "values": VALUES, "ns": "t2"}]
    with connect(server.uri(transport, "c"), **OPTIONS) as client:
        assert client.write(rows, namespace="t1").ok
    assert sorted(server.store.points_by_shard("c")) == [("t1", 1), ("t2", 2)]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_write_nothing_could_name_a_shard_key_for_stops_before_any_row(
    server: QdrantServer, transport: str
) -> None:
    options = {k: v for k, v in OPTIONS.items() if k != "namespace_column"}
    with connect(server.uri(transport, "c"), **options) as client:
        with pytest.raises(ConfigError, match="namespace_mode=shard_key: a write without a namespace"):
            client.write(pa.table({"id": list(range(10)), "values": [VALUES] * 10}))  # rows name none
        with pytest.raises(ConfigError, match="namespace_mode=shard_key: a delete without a namespace"):
            client.delete([1])
    assert not server.store.exists("c") or not server.store.points("c")
    assert not [e for e in server.store.log if e.ids]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_dict_row_without_a_namespace_among_rows_with_one_fails_alone(
    server: QdrantServer, transport: str
) -> None:
    """Dict rows give their own ``namespace`` without ``namespace_column``: one without it stopped the write
    mid-way with a ``ConfigError``, and its row was in no count (``STOPPED (0 rows dropped): 299/299``)."""
    options = {k: v for k, v in OPTIONS.items() if k != "namespace_column"}
    rows = [{"id": i, "values": VALUES, **({} if i == 100 else {"namespace": "t1"})} for i in range(300)]
    with connect(server.uri(transport, "c"), batch_size=50, **options) as client:
        report = client.write(rows)
    assert (report.written, report.failed) == (299, 1), report
    (failure,) = report.failures
    assert failure.ids == ("100",) and failure.error_type == "Invalid"
    assert failure.error.startswith(
        "the row's namespace is null or empty, and with option namespace_mode=shard_key"
    )
    assert sorted(server.store.points_by_shard("c")) == [("t1", i) for i in range(300) if i != 100]
