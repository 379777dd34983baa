"""A Beam ``Timestamp`` (a ``beam.Row`` field of Beam's timestamp type) in metadata is its instant, a UTC
``datetime`` as a zoned Arrow or Spark timestamp gives: no JSON writer takes the Beam type, so every such
row failed ("Type is not JSON serializable: Timestamp")."""

from __future__ import annotations

import datetime as dt

import pytest

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_dicts

RULES = RowRules(max_id_length=512, max_metadata_bytes=40_960)


def test_a_beam_timestamp_in_metadata_is_its_utc_datetime_at_any_depth() -> None:
    timestamp = pytest.importorskip("apache_beam.utils.timestamp")
    instant = dt.datetime(2024, 5, 6, 7, 8, 9, 250, tzinfo=dt.UTC)
    beam_time = timestamp.Timestamp.from_utc_datetime(instant)
    row = {"id": "a", "values": [1.0, 2.0], "at": beam_time, "seen": [beam_time], "place": {"at": beam_time}}
    prepared = prepare_dicts([row], ColumnSpec(), RULES, DimensionState())
    assert not prepared.failures
    metadata = prepared.batches[0].metadata[0]
    assert metadata == {"at": instant, "seen": [instant], "place": {"at": instant}}
    assert type(metadata["at"]) is dt.datetime and metadata["at"].utcoffset() == dt.timedelta(0)
