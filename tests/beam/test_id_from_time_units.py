"""``id_from`` with times on Beam: Arrow batches of ``timestamp[ns]`` (what ``ReadFromParquetBatched`` gives
``vectordb-beam`` for a pandas-written Parquet file), dicts of ``pandas.Timestamp`` or numpy
``datetime64`` and ``beam.Row``s of Beam ``Timestamp``s store the ids rows of ``datetime``s get, which
Spark's and Arrow's microsecond columns give: the same rows loaded either way are stored once."""

from __future__ import annotations

import datetime as dt
from typing import Any

import apache_beam as beam
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from apache_beam.utils.timestamp import Timestamp

from tests.servers.fixtures import ServerHandle
from vectordb.connector.rows import derive_id

from .conftest import FAILED, run_sink

LOCAL = [dt.datetime(2024, 5, 6, 7, 8, 9), dt.datetime(2024, 5, 6, 7, 8, 9, 123456)]
INSTANTS = [moment.replace(tzinfo=dt.UTC) for moment in LOCAL]
VALUES = [1.0, 2.0, 3.0]


def elements(form: str) -> list[Any]:
    """Two rows, ``at`` a zoned time and ``local`` one without a zone, as ``form`` holds them."""
    names = [f"{form}-{i}" for i in range(2)]
    if form == "arrow ns":
        return [
            pa.RecordBatch.from_pydict(
                {
                    "at": pa.array(INSTANTS, pa.timestamp("ns", "UTC")),
                    "local": pa.array(LOCAL, pa.timestamp("ns")),
                    "name": names,
                    "values": pa.array([VALUES] * 2, pa.list_(pa.float32())),
                }
            )
        ]
    if form == "pandas":
        at = [pd.Timestamp(i).tz_convert("Europe/Paris") for i in INSTANTS]
        return [
            {"at": a, "local": pd.Timestamp(m), "name": n, "values": VALUES}
            for a, m, n in zip(at, LOCAL, names, strict=True)
        ]
    if form == "numpy":  # numpy has no zones: the zoned column as a pandas.Timestamp
        return [
            {"at": pd.Timestamp(a), "local": np.datetime64(m, "ns"), "name": n, "values": VALUES}
            for a, m, n in zip(INSTANTS, LOCAL, names, strict=True)
        ]
    assert form == "beam.Row"
    return [
        beam.Row(at=Timestamp.from_utc_datetime(a), local=m, name=n, values=VALUES)
        for a, m, n in zip(INSTANTS, LOCAL, names, strict=True)
    ]


@pytest.mark.parametrize("form", ["arrow ns", "pandas", "numpy", "beam.Row"])
def test_times_on_beam_store_the_ids_of_datetimes(grpc_server: ServerHandle, form: str) -> None:
    grpc_server.script(dimension=3)
    FAILED.clear()
    run_sink(grpc_server.uri, elements(form), id_from="at,local,name", api_key="k")
    assert not FAILED
    stored = {vid for (_, vid) in grpc_server.arrived().final}
    expected = {
        derive_id([a, m, f"{form}-{i}"]) for i, (a, m) in enumerate(zip(INSTANTS, LOCAL, strict=True))
    }
    assert stored == expected


def test_a_beam_timestamp_is_stored_as_its_instant(grpc_server: ServerHandle) -> None:
    """No JSON writer takes a Beam ``Timestamp``: every row holding one in metadata failed."""
    grpc_server.script(dimension=3)
    FAILED.clear()
    run_sink(grpc_server.uri, elements("beam.Row"), id_from="name", api_key="k")
    assert not FAILED
    stored = grpc_server.arrived().final
    assert sorted(v.metadata["at"] for v in stored.values()) == [
        "2024-05-06T07:08:09+00:00",
        "2024-05-06T07:08:09.123456+00:00",
    ]
