"""Every JSON encoder writes a row's metadata as ``rows.checks.metadata_json`` does, and those are the bytes
each wrote with its own ``default`` before (``default=str``, Pinecone's ``json_value``): for every value
kind of ``tests/payload_values.py`` (and decimals, durations, UUIDs, times of day) the rows' checks keep.
A value with no JSON form never reaches an encoder: the checks fail its row. Pinecone's REST body and
import column still write with their own ``json_value`` (the same bytes for every value the checks keep,
asserted here): tests/e2e/test_pinecone_metadata_values.py holds them to writing a numpy string array of
a hand-built batch, which ``metadata_json`` refuses."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import hypothesis.strategies as st
import numpy as np
import orjson
from hypothesis import given, settings

from tests.payload_values import Opaque, json_scalars, nested, odd_scalars
from vectordb.connector.backends import chroma, pinecone, pinecone_import, qdrant
from vectordb.connector.backends.milvus import wire as milvus_wire
from vectordb.connector.backends.pgvector import copy as pg_copy
from vectordb.connector.rows import ColumnSpec, DimensionState, RowBatch, RowRules, prepare_dicts
from vectordb.connector.rows.checks import metadata_json

RULES = RowRules(max_metadata_bytes=1 << 20)
NUMPY = orjson.OPT_SERIALIZE_NUMPY


def old_default_str(md: dict[str, Any]) -> bytes:
    """Chroma's, Milvus's and Qdrant's JSON before (Qdrant's ``_json_default``: dates as ISO, else ``str``)."""
    return orjson.dumps(md, default=str, option=NUMPY)


def old_pgvector(md: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(md, default=str, option=NUMPY | orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:
        return json.dumps(md, default=str, ensure_ascii=False).encode()


def old_pinecone(md: dict[str, Any]) -> bytes:
    def json_value(value: Any) -> Any:
        if isinstance(value, np.generic | np.ndarray):
            return value.tolist()
        if isinstance(value, dt.date):
            return value.isoformat()
        if isinstance(value, decimal.Decimal):
            return str(value)
        raise TypeError(type(value).__name__)

    return orjson.dumps(md, default=json_value, option=NUMPY)


extra = (
    st.decimals(allow_nan=False, allow_infinity=False, places=3)
    | st.timedeltas()
    | st.uuids()
    | st.times()
    | st.builds(lambda: orjson.Fragment(b'{"f":1}'))
)
keys = st.text(alphabet="abcXYZ_é", min_size=1, max_size=3)
metadata = st.dictionaries(keys, nested(json_scalars | odd_scalars | extra, keys), max_size=4)


def kept(rows: list[dict[str, Any]]) -> tuple[list[RowBatch], dict[str, str]]:
    prepared = prepare_dicts(
        [{"id": i, "values": [0.5, 1.0], "metadata": md} for i, md in enumerate(rows)],
        ColumnSpec(),
        RULES,
        DimensionState(None),
    )
    return prepared.batches, {i: f.error for f in prepared.failures for i in f.ids}


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(metadata, min_size=1, max_size=4))
def test_every_encoder_writes_the_bytes_it_wrote_for_the_values_the_checks_keep(
    rows: list[dict[str, Any]],
) -> None:
    batches, _ = kept(rows)
    for batch in batches:
        mds = batch.metadata or []
        for md in mds:
            if not md:
                continue
            ours = metadata_json(md)
            assert old_default_str(md) == ours
            assert old_pgvector(md) == ours
            assert old_pinecone(md) == ours
            assert pg_copy.json_bytes(md) == ours
            assert milvus_wire._json(md) == ours
            assert pinecone_import.metadata_text(md) == ours  # json_value still: see the module's docstring
        bodies = [
            chroma.encode_upsert(batch, list(range(len(batch))), False, "namespace", None),
            qdrant.encode_json(batch, qdrant.QdrantOptions(uri="qdrant://h/c")),
            pinecone.encode_json(batch),
        ]
        for body in bodies:  # each row's metadata as metadata_json writes it (Qdrant's payload adds a key)
            for md in mds:
                if md:
                    assert metadata_json(md)[:-1] in body


def test_a_value_with_no_json_form_fails_its_row_and_decimals_and_durations_are_their_text() -> None:
    batches, failures = kept(
        [
            {"a": Opaque()},
            {"d": decimal.Decimal("1.10"), "t": dt.timedelta(days=1, seconds=3)},
            {"s": {1, 2}},
            {"n": [1, {"deep": Opaque()}]},
        ]
    )
    assert set(failures) == {"0", "2", "3"}
    assert "'a'" in failures["0"] and "Opaque" in failures["0"]
    assert "'n'" in failures["3"]
    ((md,),) = [b.metadata for b in batches]
    assert metadata_json(md) == b'{"d":"1.10","t":"P1DT3S"}'
    for encoded in (pg_copy.json_bytes(md), milvus_wire._json(md), pinecone_import.metadata_text(md)):
        assert encoded == b'{"d":"1.10","t":"P1DT3S"}'
