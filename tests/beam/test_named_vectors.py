"""Several vectors a row in Beam: refused where the pipeline is built, naming the option and the database,
for a database that stores one vector a record."""

from __future__ import annotations

from typing import Any

import pytest

from vectordb.beam import WriteToVectorDB
from vectordb.connector import ConfigError
from vectordb.connector.backends.registry import backend_class


@pytest.mark.parametrize(
    ("uri", "option", "value", "database"),
    [
        ("pinecone+grpc://127.0.0.1:1", "vector_columns", "title:title_vec,body:body_vec", "pinecone"),
        ("pinecone://127.0.0.1:1", "multi_vector_columns", "colbert:tokens", "pinecone"),
        ("chroma://127.0.0.1:1/docs", "multi_vector_columns", {"colbert": "tokens"}, "chroma"),
    ],
)
def test_one_vector_databases_refuse_at_construction(
    uri: str, option: str, value: Any, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_connection(self: Any) -> None:
        raise AssertionError("a connection was opened")

    monkeypatch.setattr(backend_class(database), "open_transport", no_connection)
    with pytest.raises(ConfigError, match=f"option {option}: {database} stores one dense vector a record"):
        WriteToVectorDB(uri, api_key="k", **{option: value})
