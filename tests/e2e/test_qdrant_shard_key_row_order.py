"""Qdrant ``namespace_mode=shard_key`` and rows that name their own namespace (dict rows, Beam elements):
one without a namespace fails alone (``Invalid``) wherever it comes. As the first row it raised a
``ConfigError`` for the whole write (nothing sent), while the same row last failed alone. The
``ConfigError`` stays for a write nothing could give a namespace: no option ``namespace`` or
``namespace_column``, no call namespace, and rows that cannot carry one (an Arrow table, ids to delete).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam import WriteToVectorDB
from vectordb.connector import connect
from vectordb.connector.errors import ConfigError
from vectordb.connector.transports.base import forget_shared

OPTIONS: dict[str, Any] = {
    "create": True,
    "dimension": 3,
    "namespace_mode": "shard_key",
    "on_error": "report",
}
GOOD = [{"id": i, "values": [1.0, 0, 0], "namespace": "tenant-a"} for i in range(1, 300)]
BAD = {"id": 1000, "values": [0, 1.0, 0]}  # no namespace
ORDERS = {"bad-first": [BAD, *GOOD], "bad-middle": [*GOOD[:150], BAD, *GOOD[150:]], "bad-last": [*GOOD, BAD]}


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


def assert_only_the_bad_row_failed(report: Any) -> None:
    assert (report.written, report.failed) == (299, 1), report
    (failure,) = report.failures
    assert failure.ids == ("1000",) and failure.error_type == "Invalid"
    assert failure.error.startswith(
        "the row's namespace is null or empty, and with option namespace_mode=shard_key"
    )


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_dict_row_without_a_namespace_fails_alone_wherever_it_comes(
    server: QdrantServer, transport: str, order: str
) -> None:
    collection = f"order_{transport}_{order}"
    with connect(server.uri(transport, collection), batch_size=50, **OPTIONS) as client:
        report = client.write(ORDERS[order])
    assert_only_the_bad_row_failed(report)
    assert sorted(server.store.points_by_shard(collection)) == [("tenant-a", i) for i in range(1, 300)]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_dict_rows_none_of_which_names_a_namespace_fail_each_alone(
    server: QdrantServer, transport: str
) -> None:
    """Rows that could name their namespace and do not: each is refused, as a later one would be."""
    with connect(server.uri(transport, f"none_{transport}"), **OPTIONS) as client:
        report = client.write([{"id": i, "values": [1.0, 0, 0]} for i in range(5)])
    assert (report.written, report.failed) == (0, 5), report
    assert {f.error_type for f in report.failures} == {"Invalid"}


@pytest.mark.parametrize("order", ["bad-first", "bad-last"])
def test_a_beam_element_without_a_namespace_fails_alone_wherever_it_comes(
    server: QdrantServer, order: str
) -> None:
    collection = f"beam_{order}"
    pipeline = beam.Pipeline()
    result = (
        pipeline
        | beam.Create(ORDERS[order], reshuffle=False)
        | WriteToVectorDB(server.grpc_uri(collection), batch_size=500, **OPTIONS)
    )
    failed = result.failed | beam.Map(lambda d: (d["id"], d["error_type"]))
    assert_that(failed, equal_to([(1000, "Invalid")]))
    pipeline.run().wait_until_finish()
    assert sorted(server.store.points_by_shard(collection)) == [("tenant-a", i) for i in range(1, 300)]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_write_nothing_could_name_a_shard_key_for_still_stops_before_any_row(
    server: QdrantServer, transport: str
) -> None:
    collection = f"arrow_{transport}"
    table = pa.table({"id": [1, 2], "values": pa.array([[1.0, 0, 0]] * 2, pa.list_(pa.float32()))})
    with connect(server.uri(transport, collection), **OPTIONS) as client:
        with pytest.raises(ConfigError, match="namespace_mode=shard_key: a write without a namespace"):
            client.write(table)
        with pytest.raises(ConfigError, match="namespace_mode=shard_key: a delete without a namespace"):
            client.delete([1])
    assert not server.store.exists(collection) or not server.store.points(collection)
