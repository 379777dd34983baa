"""Rows a real Chroma server would take and then break on, or store in the wrong namespace, and rows whose
namespace is not text: each fails alone, named, and the rest of the write lands (Python client and Beam)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from vectordb.connector import connect
from vectordb.connector.report import WriteReport

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer

DIM = 4
LIMIT = 5461  # the local server's max_batch_size (SQLite's 32766 bound variables / 6)


def vector(i: int) -> list[float]:
    return [float(i) + 0.5, 1.0, -0.25, 0.125]


def write(uri: str, data: Any, **options: Any) -> WriteReport:
    with connect(uri, on_error="report", **options) as client:
        return client.write(data)


def reasons_by_id(report: WriteReport) -> dict[str, str]:
    return {str(row_id): f.error for f in report.failures for row_id in f.ids}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"tags": [f"t{i}" for i in range(LIMIT + 1)]}, f"metadata lists hold {LIMIT + 1} items in all"),
        ({"a": [f"t{i}" for i in range(3000)], "b": list(range(3000))}, "metadata lists hold 6000 items"),
        ({f"k{i}": i for i in range(LIMIT)}, f"metadata has {LIMIT + 1} keys (with 'namespace')"),
    ],
    ids=["one-long-list", "lists-summed", "keys-and-namespace-key"],
)
def test_a_row_with_more_values_than_max_batch_size_fails_alone_and_the_collection_stays_usable(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str, bad: dict[str, Any], says: str
) -> None:
    chroma_client.create_collection(chroma_collection)
    uri = chroma_server.uri(chroma_collection)
    rows = [
        {"id": "good1", "values": vector(1), "tags": ["a"]},
        {"id": "bad", "values": vector(2), **bad},
        {"id": "good2", "values": vector(3), "tags": ["b"]},
    ]
    report = write(uri, rows)
    assert report.written == 2, report
    reasons = reasons_by_id(report)
    assert list(reasons) == ["bad"]
    assert says in reasons["bad"] and f"at most {LIMIT} (its max_batch_size)" in reasons["bad"]
    assert write(uri, [{"id": "later", "values": vector(4), "k": 1}]).ok  # the server still writes...
    collection = chroma_client.get_collection(chroma_collection)
    assert sorted(collection.get()["ids"]) == ["good1", "good2", "later"]  # ...and reads
    at_limit = {"id": "full", "values": vector(5), "tags": [f"t{i}" for i in range(LIMIT)]}
    assert write(uri, [at_limit]).ok  # the limit itself is storable
    assert collection.get(ids=["full"], include=["metadatas"])["metadatas"][0]["tags"][-1] == f"t{LIMIT - 1}"


@pytest.mark.parametrize("namespace", [5, ["N"], {"n": 1}], ids=["int", "list", "dict"])
def test_a_dict_rows_namespace_that_is_not_text_fails_alone(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str, namespace: Any
) -> None:
    chroma_client.create_collection(chroma_collection)
    rows = [
        {"id": "bad", "values": vector(1), "namespace": namespace},
        {"id": "good", "values": vector(2)},
        {"id": "other", "values": vector(3), "namespace": "B"},
    ]
    report = write(chroma_server.uri(chroma_collection), rows)
    assert report.written == 2, report
    assert reasons_by_id(report) == {"bad": f"namespace {namespace!r} is not a string"}
    got = chroma_client.get_collection(chroma_collection).get(include=["metadatas"])
    stored = dict(zip(got["ids"], got["metadatas"], strict=True))
    assert stored.keys() == {"good", "other"}
    assert "namespace" not in (stored["good"] or {}) and stored["other"]["namespace"] == "B"


LETTERS: list[dict[str, Any]] = []


def _collect(letter: dict[str, Any]) -> None:
    LETTERS.append(letter)  # a module function: pickled by reference, so the in-process runner fills it


def test_a_beam_elements_namespace_that_is_not_text_fails_alone(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    beam = pytest.importorskip("apache_beam")
    from apache_beam.runners.direct.direct_runner import DirectRunner

    from vectordb.beam import WriteToVectorDB

    chroma_client.create_collection(chroma_collection)
    elements = [
        {"id": "good", "values": vector(1)},
        {"id": "bad", "values": vector(2), "namespace": ["N"]},
        {"id": "worse", "values": vector(3), "namespace": {"n": 1}},
    ]
    LETTERS.clear()
    pipeline = beam.Pipeline(runner=DirectRunner())
    result = (
        pipeline
        | beam.Create(elements, reshuffle=False)
        | WriteToVectorDB(chroma_server.uri(chroma_collection), on_error="report")
    )
    _ = result.failed | beam.Map(_collect)
    pipeline.run().wait_until_finish()
    assert sorted((letter["id"], letter["error"]) for letter in LETTERS) == [
        ("bad", "namespace ['N'] is not a string"),
        ("worse", "namespace {'n': 1} is not a string"),
    ]
    assert chroma_client.get_collection(chroma_collection).get()["ids"] == ["good"]


def test_a_row_rewritten_without_namespace_leaves_its_old_namespace(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    chroma_client.create_collection(chroma_collection)
    uri = chroma_server.uri(chroma_collection)
    assert write(uri, [{"id": "x", "values": vector(1), "title": "old"}], namespace="A").ok
    assert write(uri, [{"id": "x", "values": vector(2), "title": "new"}]).ok  # no namespace now
    collection = chroma_client.get_collection(chroma_collection)
    got = collection.get(include=["metadatas", "embeddings"])
    # key by key: chromadb 1.5.9 lends a new collection's row the list metadata of a dropped one's
    assert got["ids"] == ["x"] and got["metadatas"][0]["title"] == "new"
    assert "namespace" not in got["metadatas"][0]
    assert np.allclose(got["embeddings"][0], vector(2))
    assert collection.get(where={"namespace": "A"})["ids"] == []
    with connect(uri) as client:
        assert client.clear(namespace="A").endswith(": 0 rows deleted")
    assert collection.get()["ids"] == ["x"]


def test_a_metadata_namespace_key_on_a_row_without_namespace_is_refused(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    chroma_client.create_collection(chroma_collection)
    rows = [
        {"id": "sneaks", "values": vector(1), "namespace_of_row": "A"},
        {"id": "plain", "values": vector(2), "namespace_of_row": None, "k": 1},
    ]
    report = write(chroma_server.uri(chroma_collection), rows, namespace_key="namespace_of_row")
    assert report.written == 1, report
    assert reasons_by_id(report) == {
        "sneaks": "metadata 'namespace_of_row' is 'A' but the row has no namespace (chroma stores the "
        "namespace under that key: option namespace_key)"
    }
    got = chroma_client.get_collection(chroma_collection).get(include=["metadatas"])
    assert got["ids"] == ["plain"] and got["metadatas"][0]["k"] == 1
    assert "namespace_of_row" not in got["metadatas"][0]
