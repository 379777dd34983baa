"""Pinecone metadata holds strings, numbers, booleans and lists of strings: any other value fails its row,
naming the key, over REST and gRPC alike, and nothing is ever stored as its Python text.

Before, a value of a type the check did not know went through: REST (and import) wrote its ``str()``
(a set became ``"{'only'}"``), gRPC wrote it its own way, so one row was stored differently per transport.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import connect
from vectordb.connector.backends.pinecone import encode_json, metadata_problem
from vectordb.connector.backends.pinecone_import import rows_table
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import forget_shared

REFUSED: dict[str, Any] = {
    "a_set": {"only"},
    "a_frozenset": frozenset({"only"}),
    "a_time": dt.time(7, 8, 9),
    "complex": 1 + 2j,
    "an_object": object(),
}


@pytest.fixture(params=["grpc", "rest"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(request.param) as handle:
        yield handle
        forget_shared()


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_a_value_pinecone_cannot_store_fails_its_row_naming_the_key(server: ServerHandle, key: str) -> None:
    rows = [
        {"id": "bad", "values": [1.0, 2.0], "metadata": {"title": "t", key: REFUSED[key]}},
        {"id": "good", "values": [1.0, 3.0], "metadata": {"title": "t"}},
    ]
    with connect(server.uri, on_error="report") as client:
        report = client.write(rows)
    assert (report.written, report.failed, report.failed_ids) == (1, 1, ["bad"])
    assert f"metadata {key!r} " in report.failures[0].error  # the rows' checks or Pinecone's refuse
    assert set(server.arrived().namespaces[""]) == {"good"}


def test_numpy_strings_and_numbers_are_stored_as_the_values_they_hold(server: ServerHandle) -> None:
    """A parquet list column read by pandas is a numpy object array; a numpy string array, a numpy
    string and number: stored as lists, strings and numbers, never as their text."""
    metadata = {
        "tags": np.array(["x", "y"], dtype=object),
        "labels": np.array(["p", "q"]),
        "name": np.str_("n"),
        "count": np.int64(3),
        "score": np.float32(0.5),
    }
    with connect(server.uri, on_error="report") as client:
        report = client.write([{"id": "a", "values": [1.0, 2.0], "metadata": metadata}])
    assert (report.written, report.failed) == (1, 0)
    stored = server.arrived().namespaces[""]["a"].metadata
    assert stored == {"tags": ["x", "y"], "labels": ["p", "q"], "name": "n", "count": 3, "score": 0.5}


def test_dates_timestamps_and_decimals_are_the_same_text_over_rest_and_grpc(server: ServerHandle) -> None:
    """As the README's bad-input table says; a pandas Timestamp went over REST as its str() (a space, not
    ISO 8601's T) and over gRPC as ISO 8601."""
    metadata = {
        "day": dt.date(2024, 5, 6),
        "at": dt.datetime(2024, 5, 6, 7, 8, 9, 250000, tzinfo=dt.UTC),
        "ts": pd.Timestamp("2024-05-06 07:08:09"),
        "price": decimal.Decimal("10.25"),
    }
    with connect(server.uri, on_error="report") as client:
        report = client.write([{"id": "a", "values": [1.0, 2.0], "metadata": metadata}])
    assert (report.written, report.failed) == (1, 0)
    assert server.arrived().namespaces[""]["a"].metadata == {
        "day": "2024-05-06",
        "at": "2024-05-06T07:08:09.250000+00:00",
        "ts": "2024-05-06T07:08:09",
        "price": "10.25",
    }


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_pinecones_own_rule_names_the_key_and_what_it_stores(key: str) -> None:
    problem = metadata_problem({"title": "t", key: REFUSED[key]})
    assert problem == (
        f"metadata {key!r} is a {type(REFUSED[key]).__name__}: Pinecone stores strings, numbers, booleans "
        "and lists of strings (dates, timestamps and decimals as text) only; convert it first (a set to a "
        "list, say)"
    )


def batch_with(metadata: dict[str, Any]) -> RowBatch:
    return RowBatch(ids=["a"], vectors=np.ones((1, 2), dtype=np.float32), metadata=[metadata])


def test_the_json_encoders_never_write_a_value_as_its_text() -> None:
    """Past ``refuse`` no such value reaches them; if one did, it is an error, not its ``str()``."""
    with pytest.raises(TypeError, match="set"):
        encode_json(batch_with({"s": {"only"}}))
    with pytest.raises(TypeError, match="set"):
        rows_table(batch_with({"s": {"only"}}))
    with pytest.raises(TypeError, match="ndarray"):  # the row checks make such arrays lists before
        rows_table(batch_with({"tags": np.array(["x", "y"])}))
