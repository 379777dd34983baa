"""The id rule for UUID-only databases (connector/ids.py): the fast UUIDv5 is the standard library's."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from vectordb.connector.ids import ID_NAMESPACE, as_uuid, point_id, uuid5_text


@given(st.text())
def test_uuid5_text_is_the_standard_uuid5(text: str) -> None:
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: both refuse it
        return
    assert uuid5_text(text) == str(uuid.uuid5(ID_NAMESPACE, text))


def test_uuids_stay_and_other_ids_convert() -> None:
    known = "0f6d0c8e-3f0a-4c51-9a6e-2b1f5d7c9e10"
    assert as_uuid(known.upper()) == known and as_uuid(known.replace("-", "")) == known
    assert as_uuid("doc-1") == str(uuid.uuid5(ID_NAMESPACE, "doc-1"))
    assert point_id(7) == 7 and point_id("7") == str(uuid.uuid5(ID_NAMESPACE, "7"))
    assert point_id(-1) == str(uuid.uuid5(ID_NAMESPACE, "-1")) and point_id(True) != 1


@given(st.uuids(), st.sampled_from(["canonical", "upper", "hex"]))
def test_a_uuid_id_is_its_canonical_text_in_every_spelling(value: uuid.UUID, spelling: str) -> None:
    text = {"canonical": str(value), "upper": str(value).upper(), "hex": value.hex}[spelling]
    assert as_uuid(text) == str(value)


def test_ids_derived_from_values_orjson_cannot_write_are_still_one_id_a_value() -> None:
    """A lone surrogate (text decoded with surrogateescape) or an integer beyond 64 bits made orjson fail the
    whole write; such values now make their id too, the same one every time."""
    from vectordb.connector.rows.types import ID_NAMESPACE as ROWS_NAMESPACE
    from vectordb.connector.rows.types import derive_id

    for values in (["a\udcff", 1], [2**70, "x"]):
        assert derive_id(values) == derive_id(list(values)) != derive_id(["a", 1])
        assert uuid.UUID(derive_id(values)).version == 5
    assert derive_id(["plain", 1]) == str(uuid.uuid5(ROWS_NAMESPACE, '["plain",1]'))  # unchanged for the rest


def test_an_id_derived_from_a_timestamp_is_the_instants_whatever_its_time_zone() -> None:
    """Spark hands a timestamp over in its session's time zone: the same instant in two zones is one
    id, the UTC one's as before; a timestamp without a zone (``timestamp_ntz``) stays as it is."""
    import datetime as dt
    import zoneinfo

    from vectordb.connector.rows.types import ID_NAMESPACE as ROWS_NAMESPACE
    from vectordb.connector.rows.types import derive_id

    utc = dt.datetime(2024, 1, 2, 10, 0, tzinfo=dt.UTC)
    new_york = utc.astimezone(zoneinfo.ZoneInfo("America/New_York"))
    assert derive_id(["doc", new_york]) == derive_id(["doc", utc])
    assert derive_id(["doc", utc]) == str(uuid.uuid5(ROWS_NAMESPACE, '["doc","2024-01-02T10:00:00+00:00"]'))
    naive = dt.datetime(2024, 1, 2, 10, 0)
    assert derive_id(["doc", naive]) == str(uuid.uuid5(ROWS_NAMESPACE, '["doc","2024-01-02T10:00:00"]'))
