"""``id_from`` ids of times: one instant (or duration) is one id whatever type and unit it came as.

Arrow's ``timestamp[ns]`` (pandas' and Parquet's default) reads back as ``pandas.Timestamp``, whose text
(``2024-05-06 07:08:09+00:00``) differed from a ``datetime``'s (``2024-05-06T07:08:09+00:00``): the same
rows loaded from an ns and a us copy were stored twice. The ``datetime``'s text, which Spark's and the
other Arrow units' rows always gave, is the one every form now takes.
"""

from __future__ import annotations

import datetime as dt
import uuid
import zoneinfo
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow, prepare_dicts
from vectordb.connector.rows.types import ID_NAMESPACE, derive_id

NAIVE = dt.datetime(2024, 5, 6, 7, 8, 9)
UTC = NAIVE.replace(tzinfo=dt.UTC)
PARIS = zoneinfo.ZoneInfo("Europe/Paris")
UNITS = ("s", "ms", "us", "ns")
RULES = RowRules(max_id_length=512, max_metadata_bytes=40_960)


def expected(text: str) -> str:
    """The id of ``["n0", <text>]``: what a ``datetime`` gave before, and so what every form must give."""
    return str(uuid.uuid5(ID_NAMESPACE, f'["n0","{text}"]'))


def arrow_value(value: dt.datetime, unit: str, tz: str | None) -> Any:
    """``value`` as a ``timestamp[unit, tz]`` column's reader gives it (``pandas.Timestamp`` for ns)."""
    return pa.array([value], pa.timestamp(unit, tz)).to_pylist()[0]


def zoned_forms(instant: dt.datetime) -> dict[str, Any]:
    forms: dict[str, Any] = {
        "datetime UTC": instant,
        "datetime Paris": instant.astimezone(PARIS),
        "pandas UTC": pd.Timestamp(instant),
        "pandas Paris": pd.Timestamp(instant).tz_convert("Europe/Paris"),
    }
    for unit in UNITS:
        for tz in ("UTC", "Europe/Paris"):
            forms[f"arrow {unit} {tz}"] = arrow_value(instant, unit, tz)
    return forms


def naive_forms(moment: dt.datetime) -> dict[str, Any]:
    forms: dict[str, Any] = {"datetime": moment, "pandas": pd.Timestamp(moment)}
    for unit in UNITS:
        forms[f"arrow {unit}"] = arrow_value(moment, unit, None)
        forms[f"numpy {unit}"] = np.datetime64(moment, unit)
    return forms


def test_a_zoned_instant_is_one_id_in_every_unit_zone_and_type() -> None:
    for micro, text in ((0, "2024-05-06T07:08:09+00:00"), (123000, "2024-05-06T07:08:09.123000+00:00")):
        forms = zoned_forms(UTC.replace(microsecond=micro))
        if micro:  # seconds cannot hold it
            forms = {name: value for name, value in forms.items() if not name.startswith("arrow s ")}
        ids = {name: derive_id(["n0", value]) for name, value in forms.items()}
        assert ids == dict.fromkeys(forms, expected(text))


def test_a_time_without_a_zone_is_one_id_in_every_unit_and_type() -> None:
    forms = naive_forms(NAIVE)
    ids = {name: derive_id(["n0", value]) for name, value in forms.items()}
    assert ids == dict.fromkeys(forms, expected("2024-05-06T07:08:09"))
    with_micros = {
        name: derive_id(["n0", value])
        for name, value in naive_forms(NAIVE.replace(microsecond=123456)).items()
        if not name.endswith((" s", " ms"))  # they cannot hold it
    }
    assert set(with_micros.values()) == {expected("2024-05-06T07:08:09.123456")}


def test_nanoseconds_are_one_id_as_pandas_numpy_and_arrow_and_differ_from_the_microsecond() -> None:
    """A ``datetime`` cannot hold them: ISO 8601 text with all nine digits, whatever the form."""
    zoned = pd.Timestamp("2024-05-06 07:08:09.123456789", tz="UTC")
    zoned_ids = {
        derive_id(["n0", zoned]),
        derive_id(["n0", zoned.tz_convert("Europe/Paris")]),
        derive_id(["n0", pa.array([zoned.value], pa.timestamp("ns", "UTC")).to_pylist()[0]]),
        derive_id(["n0", pa.array([zoned.value], pa.timestamp("ns", "Asia/Tokyo")).to_pylist()[0]]),
    }
    assert zoned_ids == {expected("2024-05-06T07:08:09.123456789+00:00")}
    naive = zoned.tz_localize(None)
    naive_ids = {
        derive_id(["n0", naive]),
        derive_id(["n0", naive.to_datetime64()]),
        derive_id(["n0", pa.array([naive.value], pa.timestamp("ns")).to_pylist()[0]]),
    }
    assert naive_ids == {expected("2024-05-06T07:08:09.123456789")}
    assert derive_id(["n0", pd.Timestamp("2024-05-06 07:08:09.1234567")]) == derive_id(
        ["n0", np.datetime64("2024-05-06T07:08:09.1234567", "ns")]
    )
    assert derive_id(["n0", zoned.floor("us")]) == expected("2024-05-06T07:08:09.123456+00:00")


def test_dates_and_missing_times_keep_their_ids() -> None:
    assert derive_id(["n0", np.datetime64("2024-05-06")]) == derive_id(["n0", dt.date(2024, 5, 6)])
    assert derive_id(["n0", dt.date(2024, 5, 6)]) == expected("2024-05-06")
    null = str(uuid.uuid5(ID_NAMESPACE, '["n0",null]'))
    assert {derive_id(["n0", pd.NaT]), derive_id(["n0", np.datetime64("NaT")]), derive_id(["n0", None])} == {
        null
    }


def test_a_duration_is_one_id_in_every_unit_and_type() -> None:
    second = dt.timedelta(seconds=1, microseconds=5)
    forms = [second, pd.Timedelta(second), np.timedelta64(second, "us"), np.timedelta64(1_000_005_000, "ns")]
    forms += [pa.array([second], pa.duration(unit)).to_pylist()[0] for unit in ("us", "ns")]
    assert {derive_id(["n0", v]) for v in forms} == {expected("0:00:01.000005")}
    assert derive_id(["n0", np.timedelta64(3, "s")]) == derive_id(["n0", dt.timedelta(seconds=3)])
    assert derive_id(["n0", pd.Timedelta(1, "ns")]) == derive_id(["n0", np.timedelta64(1, "ns")])


def test_a_beam_timestamp_is_the_instants_id() -> None:
    timestamp = pytest.importorskip("apache_beam.utils.timestamp")
    beam_time = timestamp.Timestamp.from_utc_datetime(UTC.replace(microsecond=250))
    assert derive_id(["n0", beam_time]) == expected("2024-05-06T07:08:09.000250+00:00")


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("tz", [None, "UTC", "Europe/Paris"])
def test_the_arrow_and_dict_readers_give_the_ids_of_datetimes(unit: str, tz: str | None) -> None:
    """Arrow tables (pandas DataFrames go through Arrow too) and dict rows with pandas values: the ids
    the same rows give with ``datetime``s."""
    moments = [NAIVE.replace(tzinfo=None if tz is None else dt.UTC) + dt.timedelta(hours=h) for h in range(3)]
    spec = ColumnSpec(id_from=("ts", "name"))
    table = pa.table(
        {
            "ts": pa.array(moments, pa.timestamp(unit, tz)),
            "name": ["n0", "n1", "n2"],
            "values": pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float32())),
        }
    )
    want = [derive_id([m, f"n{i}"]) for i, m in enumerate(moments)]
    arrow = prepare_arrow(table.to_batches()[0], spec, RULES, DimensionState())
    assert arrow.batches[0].ids == want
    frame = table.to_pandas()
    dicts = prepare_dicts(frame.to_dict("records"), spec, RULES, DimensionState())
    assert dicts.batches[0].ids == want
    as_numpy = [
        {"ts": t, "name": n, "values": [1.0, 2.0]}
        for t, n in zip(frame.ts.to_numpy(), frame.name, strict=True)
    ]
    if tz is None:  # numpy has no zones
        assert prepare_dicts(as_numpy, spec, RULES, DimensionState()).batches[0].ids == want
