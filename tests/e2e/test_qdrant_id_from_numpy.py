"""``id_from`` gives one id for the same values whatever the row came as: an Arrow table, dicts of Python
values, or dicts of numpy scalars (as pandas' ``to_dict`` or a Beam element built from numpy hands them).

numpy scalars were written by orjson's ``default=str``, as text (``np.int64(5)`` as ``"5"``), so their
row got another id and a rerun from another input kind added a point instead of replacing it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.rows.types import derive_id
from vectordb.connector.transports.base import forget_shared

ID_FROM = "k,small,score,half,flag,name"
PYTHON: dict[str, Any] = {"k": 5, "small": 7, "score": 0.25, "half": 0.5, "flag": True, "name": "a"}
NUMPY: dict[str, Any] = {
    "k": np.int64(5),
    "small": np.uint8(7),
    "score": np.float64(0.25),
    "half": np.float32(0.5),
    "flag": np.bool_(True),
    "name": np.str_("a"),
}
ARROW_TYPES = {
    "k": pa.int64(),
    "small": pa.uint8(),
    "score": pa.float64(),
    "half": pa.float32(),
    "flag": pa.bool_(),
    "name": pa.string(),
}


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


def as_arrow(src: str) -> pa.Table:
    columns = {name: pa.array([PYTHON[name]], typ) for name, typ in ARROW_TYPES.items()}
    return pa.table({**columns, "src": [src], "values": pa.array([[1.0, 0.0, 0.0]], pa.list_(pa.float32()))})


def as_dicts(values: dict[str, Any], src: str) -> list[dict[str, Any]]:
    return [{**values, "src": src, "values": [1.0, 0.0, 0.0]}]


WAYS = {
    "arrow": lambda: as_arrow("arrow"),
    "python": lambda: as_dicts(PYTHON, "python"),
    "numpy": lambda: as_dicts(NUMPY, "numpy"),
}


def write(server: QdrantServer, transport: str, collection: str, rows: Any) -> Any:
    with connect(
        server.uri(transport, collection),
        create=True,
        on_error="report",
        id_from=ID_FROM,
        metadata_columns=["src"],
    ) as client:
        return client.write(rows)


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_the_same_values_give_one_id_from_any_input(server: QdrantServer, transport: str) -> None:
    ids = {}
    for way, rows in WAYS.items():
        collection = f"idfrom_{transport}_{way}"
        report = write(server, transport, collection, rows())
        assert report.ok and report.written == 1, (way, report)
        (ids[way],) = server.store.points(collection)
    assert ids["numpy"] == ids["python"] == ids["arrow"], ids


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_write_of_the_row_three_ways_leaves_one_point(server: QdrantServer, transport: str) -> None:
    collection = f"idfrom_{transport}_all"
    for way, rows in WAYS.items():
        report = write(server, transport, collection, rows())
        assert report.ok and report.written == 1, (way, report)
    points = server.store.points(collection)
    assert len(points) == 1, {pid: p.payload for pid, p in points.items()}
    assert next(iter(points.values())).payload == {"src": "numpy"}  # the last write replaced the others


@pytest.mark.parametrize(
    ("numpy_value", "python_value"),
    [
        (np.int64(-3), -3),
        (np.int32(5), 5),
        (np.uint64(2**64 - 1), 2**64 - 1),
        (np.float64(0.1), 0.1),
        (np.float32(0.1), float(np.float32(0.1))),  # as an Arrow float32 column reads back
        (np.float64("nan"), float("nan")),
        (np.bool_(False), False),
        (np.str_("é"), "é"),
        (np.bytes_(b"ab"), b"ab"),
    ],
)
def test_a_numpy_scalar_gives_its_python_values_id(numpy_value: Any, python_value: Any) -> None:
    assert derive_id(["x", numpy_value]) == derive_id(["x", python_value])


def test_numpy_times_keep_their_rule() -> None:
    """datetime64 and timedelta64 stay on their own branches (a date, a datetime to the microsecond)."""
    import datetime as dt

    assert derive_id([np.datetime64("2024-05-06")]) == derive_id([dt.date(2024, 5, 6)])
    assert derive_id([np.datetime64("2024-05-06T07:08:09")]) == derive_id([dt.datetime(2024, 5, 6, 7, 8, 9)])
    assert derive_id([np.timedelta64(90, "s")]) == derive_id([dt.timedelta(seconds=90)])
    assert derive_id([np.datetime64("NaT")]) == derive_id([None])
