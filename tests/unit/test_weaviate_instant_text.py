"""Weaviate's wire and ``InstantText``: the rows' text of a timestamp finer than a microsecond is a ``date``
sent with a zone (UTC when it has none), and a user's string that looks like one is ``text``, as given."""

from __future__ import annotations

import datetime as dt
import pickle

import numpy as np
import orjson
import pandas as pd

from vectordb.connector.backends.weaviate import encode_properties, kind_of, rfc3339
from vectordb.connector.rows import InstantText
from vectordb.connector.rows.types import plain_datetime, plain_datetime64

NANOS = "2023-11-14T22:13:20.123456789"


def test_the_rows_mark_text_finer_than_a_microsecond() -> None:
    naive = plain_datetime64(np.datetime64(NANOS))
    zoned = plain_datetime(pd.Timestamp(NANOS, tz="Europe/Paris"))
    assert type(naive) is InstantText and naive == NANOS
    assert type(zoned) is InstantText and zoned == "2023-11-14T21:13:20.123456789+00:00"
    assert type(plain_datetime(pd.Timestamp(NANOS))) is InstantText
    assert type(plain_datetime64(np.datetime64("2023-11-14T22:13:20.123456"))) is dt.datetime


def test_instant_text_is_plain_text_to_every_writer() -> None:
    text = InstantText(NANOS)
    assert orjson.dumps({"t": text}) == orjson.dumps({"t": NANOS})
    back = pickle.loads(pickle.dumps(text, protocol=5))
    assert type(back) is InstantText and back == NANOS


def test_instant_text_is_a_date_with_a_zone_and_a_users_string_is_text_as_given() -> None:
    assert kind_of(InstantText(NANOS)) == "date"
    assert kind_of([InstantText(NANOS), dt.datetime(2024, 1, 1)]) == "date[]"
    assert kind_of(NANOS) == "text"
    assert kind_of([NANOS]) == "text[]"
    assert rfc3339(InstantText(NANOS)) == NANOS + "Z"
    assert rfc3339(InstantText(NANOS + "+00:00")) == NANOS + "+00:00"
    assert type(rfc3339(InstantText(NANOS + "+00:00"))) is str
    assert encode_properties({"ts": InstantText(NANOS)}) == encode_properties({"ts": NANOS + "Z"})
    assert encode_properties({"ts": [InstantText(NANOS)]}) == encode_properties({"ts": [NANOS + "Z"]})
    assert encode_properties({"o": {"ts": InstantText(NANOS)}}) == encode_properties(
        {"o": {"ts": NANOS + "Z"}}
    )
    assert encode_properties({"ts": NANOS}) != encode_properties({"ts": NANOS + "Z"})  # a user's, as given
