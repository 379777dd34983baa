"""Declared support for several vectors a row: the reason a database gives for "no", and which databases the
refusal points to."""

from __future__ import annotations

import pytest

from vectordb.connector import ConfigError
from vectordb.connector.backends.base import check_vector_support
from vectordb.connector.backends.registry import backend_class
from vectordb.connector.client import resolve_options

QDRANT = "qdrant://127.0.0.1:6333/docs"


def test_a_stated_reason_replaces_one_vector_a_record(monkeypatch: pytest.MonkeyPatch) -> None:
    qdrant = backend_class("qdrant")
    refused = {"multi_vector_columns": "its version 1.2 has no multi-vector type"}
    monkeypatch.setattr(qdrant, "named_vectors", "yes")
    monkeypatch.setattr(qdrant, "multi_vectors", "no")
    monkeypatch.setattr(qdrant, "vectors_refused", refused)
    options = resolve_options({"uri": QDRANT, "vector_columns": "t:a", "multi_vector_columns": "c:b"})
    with pytest.raises(ConfigError) as caught:
        check_vector_support(qdrant(options), options)
    assert str(caught.value) == (
        "option multi_vector_columns: qdrant does not store multi-vectors: its version 1.2 has no multi-vector type"
    )
    named = resolve_options({"uri": QDRANT, "vector_columns": "t:a"})
    check_vector_support(qdrant(named), named)  # the reason is for the one option only


@pytest.mark.parametrize(
    ("option", "stored_by"),
    [
        ("vector_columns", "(qdrant, weaviate, milvus, postgresql)"),
        ("multi_vector_columns", "(qdrant, weaviate)"),
    ],
)
def test_one_vector_databases_point_to_those_that_store_it(option: str, stored_by: str) -> None:
    options = resolve_options({"uri": "chroma://127.0.0.1:1/docs", option: "name:column"})
    with pytest.raises(ConfigError) as caught:
        check_vector_support(backend_class("chroma")(options), options)
    assert str(caught.value).endswith(f"write them to a database that stores them {stored_by}")
