"""Dense vectors longer than Weaviate takes (65,535 floats), against a real ``weaviate-server``.

Such a vector was sent, and Weaviate refused it with a reason naming neither the vector nor the column
("could not marshal 'vector' max length exceeded (70000/65535)"), after isolation requests; multi-vectors
were already checked before sending. Now the rows fail before any request, naming the vector and its
column, and ``create=true`` with such a dimension is a ``ConfigError``, as Qdrant's path has it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(180)

LONGEST = 65_535


def make(server: WeaviateServer, name: str, vectors: dict[str, bool] | None) -> None:
    """A collection with no vectorizer: one HNSW index per name (name -> is a multi-vector), or, for
    ``None``, one unnamed vector."""
    body: dict[str, Any] = {"class": name}
    if vectors is None:
        body |= {"vectorizer": "none", "vectorIndexType": "hnsw"}
    else:
        body["vectorConfig"] = {
            vector: {
                "vectorizer": {"none": {}},
                "vectorIndexType": "hnsw",
                "vectorIndexConfig": {"multivector": {"enabled": True}} if multi else {},
            }
            for vector, multi in vectors.items()
        }
    made = server.rest("POST", "/v1/schema", json=body)
    assert made.status_code == 200, made.text


def exists(server: WeaviateServer, name: str) -> bool:
    return server.rest("GET", f"/v1/schema/{name}").status_code == 200


def count(server: WeaviateServer, name: str) -> int:
    reply = server.rest("GET", f"/v1/objects?class={name}&limit=100")
    reply.raise_for_status()
    return len(reply.json().get("objects") or [])


# mode -> (the collection's vectors, options, a row's columns given a dense vector, the name in the reason)
MODES: dict[str, Any] = {
    "named": (
        {"title": False, "colbert": True},
        {"vector_columns": {"title": "t"}, "multi_vector_columns": {"colbert": "c"}},
        lambda v: {"t": v, "c": np.ones((1, 3), np.float32)},
        "vector 'title' (column 't')",
    ),
    "vector_name": (
        {"default": False},
        {"vector_column": "t"},
        lambda v: {"t": v},
        "vector 'default' (column 't')",
    ),
    "unnamed": (None, {"vector_column": "t"}, lambda v: {"t": v}, "the vector (column 't')"),
}


@pytest.mark.parametrize("length", [LONGEST + 1, 70_000])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_dense_vector_longer_than_weaviate_takes_fails_its_rows_before_sending(
    weaviate_server: WeaviateServer, weaviate_collection: str, mode: str, length: int
) -> None:
    vectors, options, columns, named = MODES[mode]
    make(weaviate_server, weaviate_collection, vectors)
    rows = [{"id": key, **columns(np.ones(length, np.float32))} for key in "xy"]
    with connect(
        weaviate_server.uri(weaviate_collection), **weaviate_server.options(), **options, on_error="report"
    ) as client:
        report = client.write(rows)
    assert report.written == 0 and sorted(report.failed_ids) == ["x", "y"], report
    assert report.requests == 0, report  # refused before sending: no isolation requests either
    assert {(f.error_type, f.error) for f in report.failures} == {
        ("Invalid", f"{named} holds {length:,} floats; Weaviate takes at most 65,535")
    }
    assert all(f.attempts == 0 for f in report.failures)
    assert count(weaviate_server, weaviate_collection) == 0


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_longest_dense_vector_weaviate_takes_is_written(
    weaviate_server: WeaviateServer, weaviate_collection: str, mode: str
) -> None:
    """65,535 floats is not refused: the limit is Weaviate's own, not one below it."""
    vectors, options, columns, _ = MODES[mode]
    make(weaviate_server, weaviate_collection, vectors)
    vector = np.random.default_rng(3).standard_normal(LONGEST, dtype=np.float32)
    with connect(weaviate_server.uri(weaviate_collection), **weaviate_server.options(), **options) as client:
        report = client.write([{"id": "x", **columns(vector)}])
    assert report.ok and report.written == 1, report
    assert count(weaviate_server, weaviate_collection) == 1


@pytest.mark.parametrize(
    ("options", "columns", "message"),
    [
        (
            {"vector_column": "t"},
            {"t": np.ones(70_000, np.float32)},
            r"^option vector_column: the vectors \(column 't'\) hold 70,000 floats; Weaviate takes at most "
            r"65,535, so weaviate://.* cannot make collection 'T.*' for them$",
        ),
        (
            {"vector_columns": {"title": "t"}, "multi_vector_columns": {"colbert": "c"}},
            {"t": np.ones(70_000, np.float32), "c": np.ones((1, 3), np.float32)},
            r"^option vector_columns: vector 'title' \(column 't'\) holds 70,000 floats; Weaviate takes at "
            r"most 65,535, so weaviate://.* cannot make collection 'T.*' for it$",
        ),
        (
            {"vector_column": "t", "dimension": 65_536},
            {"t": np.ones(65_536, np.float32)},
            r"^option dimension: 65,536 floats; Weaviate takes vectors of at most 65,535$",
        ),
        (
            {
                "vector_columns": {"title": "t"},
                "multi_vector_columns": {"colbert": "c"},
                "vector_dimensions": {"title": 65_536},
            },
            {"t": np.ones(65_536, np.float32), "c": np.ones((1, 3), np.float32)},
            r"^option vector_dimensions: vector 'title' has 65,536 floats; Weaviate takes vectors of at most 65,535$",
        ),
    ],
    ids=["learnt", "learnt-named", "stated", "stated-named"],
)
def test_create_refuses_a_dimension_weaviate_cannot_take(
    weaviate_server: WeaviateServer,
    weaviate_collection: str,
    options: dict[str, Any],
    columns: Any,
    message: str,
) -> None:
    """No collection is made that no row of the write could land in."""
    with (
        connect(
            weaviate_server.uri(weaviate_collection), **weaviate_server.options(), **options, create=True
        ) as client,
        pytest.raises(ConfigError, match=message),
    ):
        client.write([{"id": "x", **columns}])
    assert not exists(weaviate_server, weaviate_collection)
