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
