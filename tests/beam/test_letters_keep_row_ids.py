"""README (Beam): a fixed letter goes back through the same ``WriteToVectorDB`` as it is. Its ``id`` was
the report's text: an element with int id 5 gave a letter with id '5', which Qdrant wrote as a new point
(a UUIDv5 of '5', payload original_id '5') instead of point 5. The letter now keeps the element's id."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector.dead_letters import REASON_FIELDS
from vectordb.connector.transports.base import forget_shared

from .conftest import FAILED, run_sink


@pytest.fixture
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def test_a_letter_with_an_int_id_fed_back_lands_on_the_same_point(qdrant: QdrantServer) -> None:
    FAILED.clear()
    uri = qdrant.rest_uri("c")
    bad = {"id": 5, "values": [1.0, float("nan"), 0.0], "tag": "x"}
    run_sink(uri, [bad, {"values": [1.0, 1.0, 1.0]}], create=True, dimension=3)
    letters = sorted(FAILED, key=lambda letter: letter["id"] is None)
    assert [letter["id"] for letter in letters] == [5, None]  # a row with no id keeps null
    # as a pipeline reads its letters back from the sink's JSON Lines files
    (letter,) = [json.loads(json.dumps(letters[0], default=str))]
    fixed = {k: v for k, v in letter.items() if k not in REASON_FIELDS or k == "id"}
    fixed["values"] = [1.0, 0.5, 0.0]
    FAILED.clear()
    run_sink(uri, [fixed], create=True, dimension=3)
    assert FAILED == []
    assert {k: v.payload for k, v in qdrant.store.points("c").items()} == {5: {"tag": "x"}}
