"""The metadata size limit counts a whole float as the integer it is (``1.0`` as ``1``): numbers are
float64 where the limit is Pinecone's (over gRPC a ``Struct`` holds 1 and 1.0 as the same bytes), so a
row of 4,000 keys of ``1.0`` (46,891 bytes as Python's floats are written) was refused though it is the
same row as 4,000 keys of ``1`` (38,891), which passed. The connector's measure (``checks.metadata_size``)
and the Pinecone test servers' (``pinecone_rules.metadata_size``, written apart from it) agree, on any
metadata; rows around the limit are refused exactly when that measure is over it."""

from __future__ import annotations

import random
from typing import Any

import hypothesis.strategies as st
import numpy as np
import orjson
import pytest
from hypothesis import given, settings

from tests.servers import pinecone_rules
from vectordb.connector.rows import Columns, DimensionState, RowRules, prepare_columns
from vectordb.connector.rows.checks import metadata_size

LIMIT = 40_960
RULES = RowRules(max_id_length=512, max_metadata_bytes=LIMIT)
WHOLE = [0.0, -0.0, 1.0, -7.0, 2000.0, 1e15, 2.0**53, -(2.0**53)]
NOT_WHOLE = [0.5, -1.25, 2.0**53 + 2, 1e16, -1e300, 1e-7]


def _refusals(rows: list[dict[str, Any]]) -> dict[str, str]:
    n = len(rows)
    columns = Columns(
        n=n,
        ids=[f"r{i}" for i in range(n)],
        flat=np.ones(2 * n, np.float32),
        offsets=np.arange(n + 1) * 2,
        null_vector=np.zeros(n, bool),
        sparse=None,
        metadata=rows,
        namespaces=None,
    )
    prepared = prepare_columns(columns, RULES, DimensionState())
    return {str(i): f.error for f in prepared.failures for i in f.ids}


def test_a_row_of_whole_floats_is_the_size_of_the_same_row_of_ints() -> None:
    floats = {f"k{i}": 1.0 for i in range(4000)}
    ints = {f"k{i}": 1 for i in range(4000)}
    assert len(orjson.dumps(floats)) == 46_891 > LIMIT  # as Python writes it
    assert metadata_size(floats) == metadata_size(ints) == len(orjson.dumps(ints)) == 38_891
    assert _refusals([floats, ints, {f"k{i}": 1.5 for i in range(4000)}]) == {
        "r2": f"metadata is 46891 bytes as JSON; the limit is {LIMIT}"
    }


def test_numpy_and_nested_whole_floats_count_as_integers() -> None:
    row = {"a": np.float64(3.0), "b": np.float32(2.0), "c": [1.0, 2.5], "d": {"e": -4.0}, "f": (1.0,)}
    assert metadata_size(row) == len(b'{"a":3,"b":2,"c":[1,2.5],"d":{"e":-4},"f":[1]}')


@pytest.mark.parametrize("value", WHOLE)
def test_a_whole_float_within_2_53_is_its_integer(value: float) -> None:
    assert metadata_size({"v": value}) == len(orjson.dumps({"v": int(value)}))
    # the limit check measures a row again only when its JSON is over the limit: sound because the
    # integer's text is never the longer one, as orjson writes these floats
    assert len(orjson.dumps(int(value))) < len(orjson.dumps(value))


@pytest.mark.parametrize("value", NOT_WHOLE)
def test_other_floats_are_their_own_json(value: float) -> None:
    assert metadata_size({"v": value}) == len(orjson.dumps({"v": value}))


@pytest.mark.parametrize("extra", [0, 1])
def test_rows_at_the_limit_are_refused_exactly_when_the_measure_is_over_it(extra: int) -> None:
    """3,000 whole floats and a string padding the measure to the limit (``extra`` 0) or one past it."""
    floats = {f"k{i:04d}": float(i) for i in range(3000)}
    pad = LIMIT + extra - metadata_size({**floats, "s": ""})
    row = {**floats, "s": "x" * pad}
    assert metadata_size(row) == pinecone_rules.metadata_size(row) == LIMIT + extra
    assert len(orjson.dumps(row)) > LIMIT + 5000  # as Python writes it: far over
    expected = {"r0": f"metadata is {LIMIT + 1} bytes as JSON; the limit is {LIMIT}"} if extra else {}
    assert _refusals([row]) == expected


NUMBERS = st.one_of(
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(WHOLE + NOT_WHOLE),
    st.integers(-(2**40), 2**40).map(float),
)
SCALARS = st.one_of(NUMBERS, st.text(max_size=5), st.booleans())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(max_size=4), VALUES, max_size=6))
def test_the_connector_and_the_pinecone_servers_measure_alike(metadata: dict[str, Any]) -> None:
    assert metadata_size(metadata) == pinecone_rules.metadata_size(metadata)


def test_pinecone_shaped_rows_measure_alike() -> None:
    """Flat rows of what Pinecone stores (text, numbers, booleans, lists of text); seeded, seed printed."""
    seed = random.randrange(2**32)
    print(f"seed {seed}")
    rng = random.Random(seed)
    kinds = [
        lambda: rng.uniform(-1e6, 1e6),
        lambda: float(rng.randrange(-(10**6), 10**6)),
        lambda: rng.randrange(-(10**9), 10**9),
        lambda: rng.random() < 0.5,
        lambda: "t" * rng.randrange(8),
        lambda: ["a" * rng.randrange(3) for _ in range(rng.randrange(3))],
    ]
    for _ in range(2000):
        row = {f"k{j}": rng.choice(kinds)() for j in range(rng.randrange(1, 12))}
        assert metadata_size(row) == pinecone_rules.metadata_size(row), row
