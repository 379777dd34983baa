"""One walker finds the integers a database would not store as given (``backends.integers``), and each
backend refuses the row with it: Qdrant and Chroma outside int64, Weaviate and Pinecone beyond ±2^53."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.backends import chroma, pinecone
from vectordb.connector.backends.integers import FLOAT64_EXACT, INT64, integer_outside


class Wide(int):
    """An ``int`` subclass: orjson writes it as the integer it is."""


@pytest.mark.parametrize(
    ("value", "bounds", "found"),
    [
        (2**63 - 1, INT64, None),
        (2**63, INT64, 2**63),
        (-(2**63), INT64, None),
        (-(2**63) - 1, INT64, -(2**63) - 1),
        (2**53, FLOAT64_EXACT, None),
        (-(2**53), FLOAT64_EXACT, None),
        (2**53 + 1, FLOAT64_EXACT, 2**53 + 1),
        (-(2**53) - 1, FLOAT64_EXACT, -(2**53) - 1),
        (np.uint64(2**64 - 1), INT64, 2**64 - 1),
        (Wide(2**63), INT64, 2**63),
        ({"a": [1, {"b": (2, 2**60)}]}, FLOAT64_EXACT, 2**60),
        (np.array([1, 2**60], dtype=object), FLOAT64_EXACT, 2**60),
        (np.array([1, 2**60], dtype=np.int64), FLOAT64_EXACT, 2**60),
        (np.array([1.0, 2.0**60]), FLOAT64_EXACT, None),  # floats are the float they are
        (2.0**70, INT64, None),
        (True, FLOAT64_EXACT, None),
        (np.bool_(True), FLOAT64_EXACT, None),
        (np.timedelta64(2**60, "ns"), FLOAT64_EXACT, None),  # a numpy integer by class, no integer
        ("9223372036854775808", INT64, None),
    ],
)
def test_the_first_integer_outside_the_range_at_any_depth(value: Any, bounds: Any, found: int | None) -> None:
    assert integer_outside(value, bounds) == found


def test_chroma_and_pinecone_refuse_with_their_own_words() -> None:
    assert chroma.metadata_problem({"n": Wide(2**63)}) == "metadata 'n' is an integer beyond 64 bits"
    assert chroma.metadata_problem({"n": [1, 2**63]}) is not None
    assert chroma.metadata_problem({"n": 2**63 - 1}) is None
    assert pinecone.metadata_problem({"n": 2**53}) is None
    assert pinecone.metadata_problem({"n": Wide(2**53 + 1)}) == (
        "metadata 'n' is 9007199254740993: Pinecone stores numbers as float64, which changes integers "
        "beyond 2^53; store it as a string"
    )


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_qdrant_refuses_an_int_subclass_outside_int64_on_both_transports(
    qdrant: QdrantServer, transport: str
) -> None:
    # Qdrant's own walker looked at exact ints only: gRPC stored 2^63 as the double 9.223372036854776e18
    collection = f"wide_subclass_{transport}"
    rows = [
        {"id": 1, "values": [1.0, 0, 0], "metadata": {"n": Wide(2**63)}},
        {"id": 2, "values": [1.0, 0, 0]},
    ]
    with connect(qdrant.uri(transport, collection), create=True, on_error="report") as client:
        report = client.write(rows)
    assert (report.written, report.failed) == (1, 1), report
    (failure,) = report.failures
    assert failure.ids == ("1",)
    assert failure.error == (
        "metadata 'n' holds the integer 9223372036854775808, outside the 64-bit signed integers Qdrant's "
        "gRPC payload takes; write it as a string or a float"
    )
    assert list(qdrant.store.points(collection)) == [2]
